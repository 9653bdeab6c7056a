"""Multi-task training rows and loss."""

import torch

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.models.peasi import PeasiConfig, PeasiModel
from sieveqa.training.peasi import MultiTaskLoss, PeasiRecipe, make_rows


def _example() -> RankingExample:
    def c(cid, label, pid):
        return Candidate(cid, f"text {cid}", label, pid)

    cands = [c("a", 0, "p1"), c("b", 1, "p1"), c("c", 0, "p2"), c("d", 0, "p3"), c("e", 0, "p4")]
    return RankingExample(Question("q", "question?"), cands)


def test_rows_keep_every_answer_passage_and_sample_others() -> None:
    rows = make_rows([_example()], max_negatives=2, max_rows=None, seed=0)
    assert rows.labels == [1.0, 0.0, 0.0] and rows.targets[0] == [1] and rows.targets[1:] == [[], []]
    assert rows.passages[0] == ["text a", "text b"]


def test_the_loss_adds_easi_only_where_there_is_an_answer() -> None:
    model = PeasiModel(PeasiConfig(backbone="tiny", sharing="mtl0", max_length=64))
    recipe = PeasiRecipe()
    data = recipe.tensors(model, make_rows([_example()], None, None, 0))
    batch = data.batch(list(range(len(data))))
    assert batch["easi_labels"].sum() == 1 and batch["labels"].tolist() == [1.0, 0.0, 0.0, 0.0]
    model.train()
    with torch.no_grad():
        both = MultiTaskLoss(1.0)(model, batch)
        torch.manual_seed(0)
        pr_only = MultiTaskLoss(0.0)(model.eval(), batch)
        easi_part = MultiTaskLoss(1.0)(model, batch) - pr_only
    assert both > 0 and easi_part > 0
