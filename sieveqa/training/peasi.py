"""Training PEASI's multi-task models (section 2.3): each row is a (question, passage) pair with the
passage's label for PR and, for a passage that holds an answer, its correct sentences for EASI; the
loss is PR's binary cross-entropy plus ``easi_weight`` times EASI's in-place cross-entropy.

The paper trains in two stages: each component alone, then together. ``--init`` gives the first
stage's PR (or any ranker) and ``easi_init`` its EASI; without them both start from ``--init``'s body.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sieveqa.batching import collate
from sieveqa.data.passage_sets import group_passages, to_passages
from sieveqa.data.records import RankingExample
from sieveqa.errors import DataFormatError
from sieveqa.evaluation.metrics import METRICS, evaluate_scores
from sieveqa.features import Features
from sieveqa.models.base import regroup
from sieveqa.models.easi import EasiModel
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.models.peasi import PeasiModel
from sieveqa.models.zoo import load_model
from sieveqa.training.batches import Objective, TrainData
from sieveqa.training.config import TrainConfig
from sieveqa.training.easi import InPlaceCE, positive_passages
from sieveqa.training.options import PeasiOptions
from sieveqa.training.recipe import Recipe

SEG = "seg_"


@dataclass
class PassageRows:
    """(question, sentences, PR label, correct sentence indices) per training passage."""

    questions: list[str]
    passages: list[list[str]]
    labels: list[float]
    targets: list[list[int]]

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def summary(self) -> str:
        return f"{len(self)} passages ({int(sum(self.labels))} with an answer)"


def make_rows(
    examples: Sequence[RankingExample], max_negatives: int | None, max_rows: int | None, seed: int
) -> PassageRows:
    """Every passage with an answer plus at most ``max_negatives`` others per question; ``max_rows``
    then keeps whole questions, sampled, until the budget is reached."""
    rng = random.Random(seed)
    order = list(range(len(examples)))
    if max_rows is not None:
        rng.shuffle(order)
    out = PassageRows([], [], [], [])
    for i in order:
        ex = examples[i]
        groups = group_passages(ex)
        pos = [g for g in groups if any(c.label == 1 for c in g[1])]
        neg = [g for g in groups if not any(c.label == 1 for c in g[1])]
        if max_negatives is not None and len(neg) > max_negatives:
            neg = rng.sample(neg, max_negatives)
        if max_rows is not None and len(out) + len(pos) + len(neg) > max_rows and len(out) > 0:
            break
        for _, sents in pos + neg:
            out.questions.append(ex.question.text)
            out.passages.append([c.text for c in sents])
            out.labels.append(float(any(c.label == 1 for c in sents)))
            out.targets.append([k for k, c in enumerate(sents) if c.label == 1])
    return out


@dataclass
class MultiTaskTensors:
    """PR rows and EASI rows, aligned, with both tasks' labels."""

    pairs: Features
    segs: Features
    labels: Tensor
    targets: list[list[int]]
    pad_id: int = 0

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def lengths(self) -> list[int]:
        return [a + b for a, b in zip(self.pairs.lengths, self.segs.lengths, strict=True)]

    def batch(self, rows: Sequence[int]) -> dict[str, Tensor]:
        seg = collate(self.segs, rows, self.pad_id, segments=True, bucketed=True)
        width = int(seg["segment_ids"].max().clamp(min=1).item())
        easi = torch.zeros((len(rows), width))
        for j, r in enumerate(rows):
            easi[j, [t for t in self.targets[r] if t < width]] = 1.0
        return {
            **collate(self.pairs, rows, self.pad_id, bucketed=True),
            **{SEG + k: v for k, v in seg.items() if k != "segment_ids"},
            "segment_ids": seg["segment_ids"],
            "labels": self.labels[rows],
            "easi_labels": easi,
        }


class MultiTaskLoss:
    """PR's BCE plus ``weight`` × EASI's in-place cross-entropy on the rows that hold an answer."""

    def __init__(self, weight: float = 1.0) -> None:
        self.weight = weight
        self._easi = InPlaceCE()

    def __call__(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        inputs = {k: v for k, v in batch.items() if k not in ("labels", "easi_labels")}
        pr, sentences = model(**inputs)
        loss = F.binary_cross_entropy_with_logits(pr, batch["labels"])
        easi = batch["easi_labels"]
        has = easi.sum(dim=1) > 0
        if self.weight and bool(has.any()):
            assert sentences is not None
            loss = loss + self.weight * self._easi.loss(sentences[has], easi[has])
        return loss


class PeasiRecipe(Recipe):
    """Multi-task PR + EASI on a ``-sentences`` passage benchmark; dev: PR's passage metrics and
    EASI's in-place P@1 (``easi_p@1``)."""

    options_class = PeasiOptions

    def prepare(self, model: EncoderModel) -> None:
        if self.options.easi_init:
            easi = load_model(self.options.easi_init, EasiModel, "--easi-init", "an EASI model")
            assert isinstance(model, PeasiModel)
            model.load_easi(easi.to(model.device))

    def sample(self, examples: Sequence[RankingExample], config: TrainConfig, source: str) -> PassageRows:
        if not any(c.passage_id for ex in examples[:50] for c in ex.candidates):
            raise DataFormatError(f"{source}: candidates carry no passage_id; use a -sentences benchmark")
        rows = make_rows(examples, config.max_negatives, config.max_pairs, config.seed)
        if not any(rows.labels):
            raise DataFormatError(f"{source}: no passage holds a sentence labelled correct (1)")
        return rows

    def tensors(self, model: EncoderModel, sample: PassageRows) -> TrainData:
        assert isinstance(model, PeasiModel)
        pairs, segs = model.inputs(sample.questions, sample.passages)
        return MultiTaskTensors(pairs, segs, torch.tensor(sample.labels), sample.targets, model.pad_id)

    def objective(self, model: EncoderModel) -> Objective:
        return MultiTaskLoss(self.options.easi_weight)

    def evaluate(self, model: EncoderModel, dev: Sequence[RankingExample]) -> dict[str, float]:
        assert isinstance(model, PeasiModel)
        passages = to_passages(dev)
        groups = [(ex.question.text, [c.text for c in s]) for ex in dev for _, s in group_passages(ex)]
        flat, _ = model.score_passages([q for q, _ in groups], [p for _, p in groups])
        scores = regroup(passages, flat)
        out = dict(evaluate_scores(passages, scores).mean)
        positive = positive_passages(dev)
        probs, _ = model.select(
            [ex.question.text for ex in positive], [[c.text for c in ex.candidates] for ex in positive]
        )
        out["easi_p@1"] = evaluate_scores(positive, probs).mean["p@1"]
        return out

    def metric_names(self, model: EncoderModel) -> list[str]:
        return [*METRICS, "easi_p@1"]
