"""HAS and its baselines on a tiny random backbone: hashing layer, attention, scoring, persistence."""

from pathlib import Path

import pytest
import torch

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.models.hashing import HashingConfig, HashingModel, binarize, pad_matrices

QUESTIONS = ["who wrote hamlet", "where is paris"]
ANSWERS = ["shakespeare wrote hamlet in 1600", "paris is in france", "bananas are yellow"]


@pytest.fixture(scope="module")
def has_model() -> HashingModel:
    torch.manual_seed(0)
    return HashingModel(HashingConfig(backbone="tiny", max_length=32)).eval()


def _examples() -> list[RankingExample]:
    return [
        RankingExample(
            Question(f"q{i}", q), [Candidate(f"a{j}", a, int(i == j)) for j, a in enumerate(ANSWERS)]
        )
        for i, q in enumerate(QUESTIONS)
    ]


def test_binarize_gives_exact_signs_with_zero_positive() -> None:
    values = torch.tensor([-2.0, -0.0, 0.0, 1e-9, 3.0])
    assert binarize(values).tolist() == [-1.0, 1.0, 1.0, 1.0, 1.0]


def test_variants_and_config_checks() -> None:
    assert HashingConfig.variant("has").store_kind == "bits"
    assert HashingConfig.variant("bert-attention").store_kind == "float"
    assert HashingConfig.variant("bert-pooling").store_kind == "vector"
    with pytest.raises(ValueError, match="hashing is defined for attention"):
        HashingConfig(composition="pooling", hashing=True)
    with pytest.raises(ValueError, match="unknown variant 'hash'"):
        HashingConfig.variant("hash")
    with pytest.raises(ValueError, match="need beta > 0"):
        HashingConfig(beta=0)


def test_hashing_layer_is_tanh_beta_in_training_and_sign_at_test(has_model: HashingModel) -> None:
    feats = has_model.featurize_answers(ANSWERS)
    from sieveqa.batching import collate

    batch = collate(feats, range(len(ANSWERS)), has_model.tokenizer.pad_token_id)
    has_model.train()
    try:  # the same dropout draws for both
        torch.manual_seed(1)
        hidden_train = has_model.encoder(batch["input_ids"], batch["attention_mask"])
        torch.manual_seed(1)
        trained = has_model.answer_tokens(**batch)
    finally:
        has_model.eval()
    assert torch.allclose(trained, torch.tanh(has_model.config.beta * hidden_train))
    hidden = has_model.encoder(batch["input_ids"], batch["attention_mask"])
    tested = has_model.answer_tokens(**batch)
    assert torch.equal(tested, binarize(hidden))
    assert set(tested.unique().tolist()) == {-1.0, 1.0}


def test_attention_ignores_padding_and_weights_are_a_softmax(has_model: HashingModel) -> None:
    tokens = torch.randn(1, 3, has_model.encoder.hidden_size)
    question = torch.randn(1, has_model.encoder.hidden_size)
    mask = torch.tensor([[True, True, False]])
    padded = has_model.attention(tokens, mask, question)
    alone = has_model.attention(tokens[:, :2], mask[:, :2], question)
    assert torch.allclose(padded, alone, atol=1e-6)
    # With m = 0 every token gets the same weight: the vector is the mean of the real tokens.
    with torch.no_grad():
        saved = has_model.attention.m.weight.clone()
        has_model.attention.m.weight.zero_()
        try:
            assert torch.allclose(
                has_model.attention(tokens, mask, question), tokens[:, :2].mean(1), atol=1e-6
            )
        finally:
            has_model.attention.m.weight.copy_(saved)


def test_score_matches_the_pairwise_forward(has_model: HashingModel) -> None:
    scores = has_model.score(_examples())
    q = has_model.featurize_questions([QUESTIONS[0]] * 3)
    a = has_model.featurize_answers(ANSWERS)
    from sieveqa.batching import collate

    pad = has_model.tokenizer.pad_token_id
    qb, ab = collate(q, range(3), pad), collate(a, range(3), pad)
    with torch.no_grad():
        direct = has_model(qb["input_ids"], qb["attention_mask"], ab["input_ids"], ab["attention_mask"])
    assert torch.allclose(torch.tensor(scores[0]), direct, atol=1e-5)
    assert all(-1 <= s <= 1 for row in scores for s in row)


def test_encoded_answers_have_their_own_length_and_pooling_gives_vectors(has_model: HashingModel) -> None:
    encoded = has_model.encode_answers(ANSWERS)
    lengths = has_model.featurize_answers(ANSWERS).lengths
    assert [len(m) for m in encoded] == lengths
    pooling = HashingModel(HashingConfig.variant("bert-pooling", backbone="tiny", max_length=32))
    vectors = pooling.encode_answers(ANSWERS)
    assert [tuple(v.shape) for v in vectors] == [(pooling.encoder.hidden_size,)] * 3


def test_pad_matrices_masks_the_tail() -> None:
    tokens, mask = pad_matrices([torch.ones(2, 4), torch.ones(3, 4)])
    assert tokens.shape == (2, 3, 4) and mask.tolist() == [[True, True, False], [True, True, True]]
    assert tokens[0, 2].abs().sum() == 0


def test_save_and_load_round_trip(has_model: HashingModel, tmp_path: Path) -> None:
    path = has_model.save_pretrained(tmp_path / "has")
    loaded = HashingModel.from_pretrained(path)
    assert loaded.config == has_model.config
    before = torch.tensor(has_model.score(_examples()))
    after = torch.tensor(loaded.score(_examples()))
    assert torch.allclose(before, after, atol=2e-2)  # fp16 storage may flip a near-zero sign


@pytest.mark.parametrize("variant", ["has", "bert-attention", "bert-pooling"])
def test_ragged_scores_equal_padded_ones_for_every_question(variant: str, monkeypatch) -> None:
    torch.manual_seed(0)
    model = HashingModel(HashingConfig.variant(variant, backbone="tiny", max_length=32)).eval()
    texts = ["shakespeare wrote hamlet", "paris is the capital of france and a large city", "bananas"]
    answers = model.encode_answers(texts)
    questions = model.encode_questions(["who wrote hamlet", "where is paris", "fruit", "x"])
    padded = torch.stack([model.score_encoded(q, answers) for q in questions])
    if variant == "bert-pooling":
        ragged = model.score_ragged(questions, torch.stack(answers), None)
    else:
        lengths = torch.tensor([len(a) for a in answers])
        ragged = model.score_ragged(questions, torch.cat(answers), lengths)
        # questions cut into blocks of one, tokens into blocks of one (tiny float budgets): the same
        monkeypatch.setattr("sieveqa.models.hashing._RAGGED_FLOATS", 1)
        monkeypatch.setattr("sieveqa.models.hashing._LOGIT_BLOCK", 1)
        assert torch.allclose(model.score_ragged(questions, torch.cat(answers), lengths), ragged, atol=1e-6)
    assert ragged.shape == (4, 3)
    assert torch.allclose(ragged, padded, atol=1e-6)
