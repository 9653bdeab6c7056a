"""Training EASI: the windows it learns from, its loss, and a short run that learns."""

from pathlib import Path

import pytest
import torch

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.models.easi import EasiConfig, EasiModel
from sieveqa.training.config import TrainConfig
from sieveqa.training.easi import EasiOptions, EasiRecipe, InPlaceCE, make_passages


def _example(qid: str, labels: list[int], passage: str = "p") -> RankingExample:
    cands = [Candidate(f"{qid}{i}", f"Sentence {i} about things.", y, passage) for i, y in enumerate(labels)]
    return RankingExample(Question(qid, f"question {qid}?"), cands)


def test_windows_start_at_every_sentence_and_keep_the_answer() -> None:
    examples = [_example("a", [0, 0, 1, 0]), _example("b", [0, 0, 0])]
    sample = make_passages(examples, EasiOptions(passage_tokens=10), None, seed=0)
    # Each sentence is 5 tokens, so windows hold two: (1, 3) and (2, 4) hold the answer, at positions
    # 2 and 1; the question without an answer gives its three windows without a target (the null's).
    assert sorted(map(tuple, sample.targets)) == [(), (), (), (0,), (1,)]
    assert all(len(p) <= 2 for p in sample.passages)
    one = make_passages(examples, EasiOptions(windows="one", passage_tokens=10), None, seed=0)
    whole = make_passages(examples, EasiOptions(windows="passage"), None, seed=0)
    assert len(one) == 2 and whole.targets == [[2], []] and len(whole.passages[0]) == 4


def test_the_loss_counts_every_correct_sentence() -> None:
    class Fixed(torch.nn.Module):
        def forward(self, **_):
            return torch.tensor([[0.0, 0.0, 0.0, 0.0]])

    batch = {"input_ids": torch.zeros(1, 1), "labels": torch.tensor([[1.0, 1.0, 0.0, 0.0]])}
    assert InPlaceCE()(Fixed(), batch).item() == pytest.approx(-torch.log(torch.tensor(0.5)).item())


@pytest.mark.slow
def test_a_short_run_learns_to_pick_the_sentence(tmp_path: Path) -> None:
    torch.manual_seed(0)
    # The answer always holds the word "answer": something even a tiny model can learn.
    examples = []
    for q in range(24):
        labels = [int(i == q % 4) for i in range(4)]
        cands = [
            Candidate(f"{q}-{i}", "the answer is here." if y else f"filler words number {i}.", y, "p")
            for i, y in enumerate(labels)
        ]
        examples.append(RankingExample(Question(str(q), "where?"), cands))
    model = EasiModel(EasiConfig(backbone="tiny", max_length=48))
    recipe = EasiRecipe(EasiOptions(windows="passage"))
    before = recipe.evaluate(model, examples)["p@1"]
    from sieveqa.training.trainer import Trainer

    config = TrainConfig(epochs=6, batch_size=8, lr=1e-3, warmup_ratio=0.0, progress=False)
    data = recipe.tensors(model, recipe.sample(examples, config, "toy"))
    Trainer(model, recipe.objective(model), data, config, tmp_path / "run").train(resume=False)
    model.eval()
    after = recipe.evaluate(model, examples)["p@1"]
    assert after == 1.0 and before < 1.0


def _null_examples() -> list[RankingExample]:
    """Answerable questions ("where is the answer?") over a passage holding "the answer is here.",
    unanswerable ones ("where is the treasure?") over filler alone: learnable by a tiny model."""
    examples = []
    for q in range(24):
        answerable = q % 2 == 0
        labels = [int(answerable and i == q % 3) for i in range(3)]
        cands = [
            Candidate(f"{q}-{i}", "the answer is here." if y else f"filler words number {i}.", y, "p")
            for i, y in enumerate(labels)
        ]
        question = "where is the answer?" if answerable else "where is the treasure?"
        examples.append(RankingExample(Question(str(q), question), cands))
    return examples


def test_a_selector_without_null_skips_unanswered_passages_and_one_with_it_labels_its_null() -> None:
    examples = _null_examples()
    recipe = EasiRecipe(EasiOptions(windows="passage"))
    sample = recipe.sample(examples, TrainConfig(progress=False), "toy")
    plain = recipe.tensors(EasiModel(EasiConfig(backbone="tiny", max_length=48)), sample)
    null = recipe.tensors(EasiModel(EasiConfig(backbone="tiny", max_length=48, null=True)), sample)
    assert len(plain) == 12 and len(null) == 24
    labels = null.batch(list(range(len(null))))["labels"]
    assert labels.shape[1] == 4  # three sentences and the null, last
    assert labels.sum(dim=1).tolist() == [1.0] * 24
    assert int(labels[:, -1].sum()) == 12  # the unanswerable questions' rows point at the null


@pytest.mark.slow
def test_a_short_run_learns_the_null_and_it_reaches_peasi_answers(tmp_path: Path) -> None:
    from sieveqa.data.corpus import IndexedPassage
    from sieveqa.runtime.answer.peasi import Peasi, PeasiOptions
    from sieveqa.training.trainer import Trainer
    from tests.fakes import KeywordRanker

    torch.manual_seed(0)
    examples = _null_examples()
    model = EasiModel(EasiConfig(backbone="tiny", max_length=48, null=True))
    recipe = EasiRecipe(EasiOptions(windows="passage"))
    config = TrainConfig(epochs=8, batch_size=8, lr=1e-3, warmup_ratio=0.0, progress=False)
    data = recipe.tensors(model, recipe.sample(examples, config, "toy"))
    Trainer(model, recipe.objective(model), data, config, tmp_path / "run").train(resume=False)
    model.eval()
    passages = [[c.text for c in ex.candidates] for ex in examples]
    read = model.read([ex.question.text for ex in examples], passages)
    assert read.nulls is not None and len(read.nulls) == len(examples)
    null_p = [
        n - torch.logsumexp(torch.tensor([*z, n]), 0).item()
        for z, n in zip(read.logits, read.nulls, strict=True)
    ]
    has = [any(c.label for c in ex.candidates) for ex in examples]
    answerable = [p for p, h in zip(null_p, has, strict=True) if h]
    assert max(answerable) < min(p for p, h in zip(null_p, has, strict=True) if not h)
    assert model.read(["q"], [["a."]]).logits == model.sentence_logits(["q"], [["a."]])[0]

    method = Peasi(KeywordRanker(), model, options=PeasiOptions(read=1, second_look=0))
    starts = [sum(len(s) + 1 for s in passages[1][:i]) for i in range(len(passages[1]))]
    spans = tuple((a, a + len(s)) for a, s in zip(starts, passages[1], strict=True))
    passage = IndexedPassage("p0", "d", "t", " ".join(passages[1]), spans)
    run = method.run(examples[1].question.text, [passage], 1)
    assert "null" in method.signals and run.answers[0].signals["null"] == pytest.approx(null_p[1], abs=1e-4)


def test_training_a_saved_selector_with_null_adds_the_head_and_keeps_the_rest(tmp_path: Path) -> None:
    from sieveqa.errors import ConfigError
    from sieveqa.models.zoo import load_model
    from sieveqa.training.run import init_model

    saved = EasiModel(EasiConfig(backbone="tiny", max_length=48))
    saved.save_pretrained(tmp_path / "easi")
    model = init_model(str(tmp_path / "easi"), "easi", {"null": True})
    assert isinstance(model, EasiModel) and model.has_null
    sents = ["the answer is here.", "filler words."]
    before = load_model(tmp_path / "easi").read(["q"], [sents]).logits
    assert model.read(["q"], [sents]).logits == before
    with pytest.raises(ConfigError, match="cannot change a saved model's architecture"):
        init_model(str(tmp_path / "easi"), "easi", {"null": True, "slots": 3})
