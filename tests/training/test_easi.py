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
    # 2 and 1; the question without an answer gives none.
    assert sorted(map(tuple, sample.targets)) == [(0,), (1,)]
    assert all(len(p) <= 2 for p in sample.passages)
    one = make_passages(examples, EasiOptions(windows="one", passage_tokens=10), None, seed=0)
    whole = make_passages(examples, EasiOptions(windows="passage"), None, seed=0)
    assert len(one) == 1 and whole.targets == [[2]] and len(whole.passages[0]) == 4


def test_the_loss_counts_every_correct_sentence() -> None:
    class Fixed(torch.nn.Module):
        def forward(self, **_):
            return torch.tensor([[0.0, 0.0, 0.0, 0.0]])

    batch = {"input_ids": torch.zeros(1, 1), "labels": torch.tensor([[1.0, 1.0, 0.0, 0.0]])}
    assert InPlaceCE()(Fixed(), batch).item() == pytest.approx(-torch.log(torch.tensor(0.5)).item())


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
