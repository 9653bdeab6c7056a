"""Triplet sampling and batching, and HAS's hinge + binary-constraint loss against a hand computation."""

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.models.hashing import HashingConfig, HashingModel
from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import TripletHinge
from sieveqa.training.trainer import Trainer
from sieveqa.training.triplets import TripletBatches, make_triplets


def _example(qid: str, labels: list[int]) -> RankingExample:
    cands = [Candidate(f"{qid}-{i}", f"{qid} answer {i}", label) for i, label in enumerate(labels)]
    return RankingExample(Question(qid, f"question {qid}"), cands)


def test_make_triplets_pairs_each_positive_with_sampled_negatives() -> None:
    examples = [_example("a", [1, 0, 0, 0, 0, 1]), _example("b", [0, 0]), _example("c", [1, 0])]
    triplets = make_triplets(examples, negatives_per_positive=3, seed=1)
    # a: 2 positives × 3 of its 4 negatives; b: no positive; c: 1 × its only negative.
    assert len(triplets) == 7
    assert triplets.positives.count("a answer 0") == 3 and triplets.positives.count("a answer 5") == 3
    for q, p, n in zip(triplets.questions, triplets.positives, triplets.negatives, strict=True):
        assert q.split()[-1] == p.split()[0] == n.split()[0] and p != n
    assert len(set(triplets.negatives[:3])) == 3
    assert len(make_triplets(examples, 3, max_triplets=2, seed=1)) <= 6
    with pytest.raises(ValueError, match="negatives_per_positive must be >= 1"):
        make_triplets(examples, 0)


class _Stub:
    """question_vectors/answer_tokens return fixed tensors; similarity is cos(u, mean of real tokens)."""

    def __init__(self, question: torch.Tensor, answers: torch.Tensor, delta: float) -> None:
        self.config = SimpleNamespace(margin=0.1, hashing=True, delta=delta)
        self.q, self.a = question, answers

    def question_vectors(self, *_):
        return self.q

    def answer_tokens(self, *_):
        return self.a

    def similarity(self, question, answers, mask):
        weights = mask.unsqueeze(-1).float()
        return F.cosine_similarity(question, (answers * weights).sum(1) / weights.sum(1), dim=-1)


def test_triplet_hinge_with_binary_constraint_by_hand() -> None:
    # One triplet: u = (1, 0); positive = one token (1, 0) (+ a padded token that must not count);
    # negative = one token (1, 0.2).
    answers = torch.tensor([[[1.0, 0.0], [9.0, 9.0]], [[1.0, 0.2], [0.0, 0.0]]], requires_grad=True)
    mask = torch.tensor([[1, 0], [1, 0]])
    batch = {"q_input_ids": None, "q_attention_mask": None, "a_input_ids": None, "a_attention_mask": mask}
    stub = _Stub(torch.tensor([[1.0, 0.0]]), answers, delta=0.01)
    hinge = 0.1 - 1.0 + 1.0 / math.sqrt(1.04)
    # sign(0) = +1, so the positive's 0 is 1 away from its code; the negative's 0.2 is 0.8 away.
    constraint = 0.01 * (1.0**2 + 0.8**2)
    loss = TripletHinge()(stub, batch)
    assert loss.item() == pytest.approx(hinge + constraint, abs=1e-6)
    loss.backward()
    assert answers.grad[0, 1].abs().sum() == 0  # padding gets no gradient
    stub.config.hashing = False
    assert TripletHinge()(stub, batch).item() == pytest.approx(hinge, abs=1e-6)
    # A satisfied margin costs nothing.
    stub.a = torch.tensor([[[1.0, 0.0], [0.0, 0.0]], [[0.0, 1.0], [0.0, 0.0]]])
    assert TripletHinge()(stub, batch).item() == 0.0


def test_triplet_batches_put_positives_then_negatives_in_one_answer_batch() -> None:
    model = HashingModel(HashingConfig(backbone="tiny", max_length=16))
    data = TripletBatches(
        model.featurize_questions(["q one", "q two"]),
        model.featurize_answers(["pos one", "pos two is longer"]),
        model.featurize_answers(["neg one", "neg two"]),
        model.tokenizer.pad_token_id,
    )
    batch = data.batch([1, 0])
    assert batch["q_input_ids"].shape[0] == 2 and batch["a_input_ids"].shape[0] == 4
    expected = model.featurize_answers(["pos two is longer"]).input_ids[0]
    assert batch["a_input_ids"][0, : len(expected)].tolist() == expected
    with pytest.raises(ValueError, match="triplet parts differ"):
        TripletBatches(data.questions, data.positives, model.featurize_answers(["x"]))


@pytest.mark.slow
def test_training_has_lowers_the_loss(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = HashingModel(HashingConfig(backbone="tiny", max_length=16, delta=1e-4, margin=0.5))
    words = ["apple", "river", "castle", "violin", "tiger", "cloud"]
    examples = [
        RankingExample(
            Question(f"q{i}", f"tell me about {w}"),
            [Candidate("p", f"all about {w}", 1), Candidate("n", f"all about {words[(i + 3) % 6]}", 0)],
        )
        for i, w in enumerate(words)
    ]
    t = make_triplets(examples)
    data = TripletBatches(
        model.featurize_questions(t.questions),
        model.featurize_answers(t.positives),
        model.featurize_answers(t.negatives),
        model.tokenizer.pad_token_id,
    )
    batch = data.batch(range(len(data)))
    model.eval()
    before = TripletHinge()(model, batch).item()
    config = TrainConfig(progress=False, batch_size=6, lr=3e-3, warmup_ratio=0.0, epochs=10)
    Trainer(model, TripletHinge(), data, config, tmp_path).train()
    model.eval()
    assert before > 0 and TripletHinge()(model, batch).item() < before
