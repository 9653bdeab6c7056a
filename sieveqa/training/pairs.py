"""Labelled (question, candidate) pairs with negative sampling, and the point-wise recipe (the
TANDA-style cross-encoder's) that trains on them."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from sieveqa.data.records import RankingExample
from sieveqa.errors import ConfigError, DataFormatError
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.models.pair_model import PairModel
from sieveqa.training.batches import Objective, PairTensors, TrainData
from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import PointwiseBCE
from sieveqa.training.recipe import Recipe


@dataclass
class LabelledPairs:
    """Parallel lists of question texts, candidate texts and 0/1 labels, and each pair's
    ``qid/candidate id`` (what cached teacher scores are matched on)."""

    questions: list[str]
    texts: list[str]
    labels: list[float]
    ids: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def n_positive(self) -> int:
        return sum(1 for label in self.labels if label > 0)

    #: Set by :func:`every_pair`: the labels are placeholders, never read.
    unlabelled: bool = False

    @property
    def summary(self) -> str:
        return f"{len(self)} pairs ({'labels unused' if self.unlabelled else f'{self.n_positive} positive'})"


def make_pairs(
    examples: Sequence[RankingExample],
    max_negatives: int | None = None,
    max_pairs: int | None = None,
    seed: int = 0,
) -> LabelledPairs:
    """All positives of every question plus at most ``max_negatives`` sampled negatives each.

    ``max_pairs`` then samples whole questions until the budget is reached, so a transfer set
    larger than this machine can train on keeps its per-question balance.
    """
    rng = random.Random(seed)
    order = list(range(len(examples)))
    if max_pairs is not None:
        rng.shuffle(order)
    out = LabelledPairs([], [], [])
    for i in order:
        ex = examples[i]
        labelled = [c for c in ex.candidates if c.label is not None]
        pos = [c for c in labelled if c.label == 1]
        neg = [c for c in labelled if c.label == 0]
        if max_negatives is not None and len(neg) > max_negatives:
            neg = rng.sample(neg, max_negatives)
        if max_pairs is not None and len(out) + len(pos) + len(neg) > max_pairs and len(out) > 0:
            break
        for cand in pos + neg:
            out.questions.append(ex.question.text)
            out.texts.append(cand.text)
            out.labels.append(int(cand.label))
            out.ids.append(f"{ex.qid}/{cand.id}")
    return out


def every_pair(
    examples: Sequence[RankingExample],
    max_pairs: int | None = None,
    seed: int = 0,
    per_question: int | None = None,
) -> LabelledPairs:
    """The (question, candidate) pairs, labels ignored (0 in their place): every candidate, or
    ``per_question`` sampled ones of each question; ``max_pairs`` samples whole questions, as
    :func:`make_pairs` does."""
    rng = random.Random(seed)
    order = list(range(len(examples)))
    if max_pairs is not None:
        rng.shuffle(order)
    out = LabelledPairs([], [], [], unlabelled=True)
    for i in order:
        ex = examples[i]
        cands = list(ex.candidates)
        if per_question is not None and len(cands) > per_question:
            cands = rng.sample(cands, per_question)
        if max_pairs is not None and len(out) + len(cands) > max_pairs and len(out) > 0:
            break
        for cand in cands:
            out.questions.append(ex.question.text)
            out.texts.append(cand.text)
            out.labels.append(0)
            out.ids.append(f"{ex.qid}/{cand.id}")
    return out


class PointwiseRecipe(Recipe):
    """(question, candidate, 0/1) pairs, every positive plus sampled negatives; binary cross-entropy."""

    def sample(self, examples: Sequence[RankingExample], config: TrainConfig, source: str) -> LabelledPairs:
        pairs = make_pairs(examples, config.max_negatives, config.max_pairs, seed=config.seed)
        if not len(pairs):
            raise DataFormatError(f"{source}: no labelled candidates to train on")
        if not pairs.n_positive:
            raise DataFormatError(f"{source}: no candidate is labelled correct (1); nothing to learn from")
        if pairs.n_positive == len(pairs) and config.max_negatives == 0:
            raise ConfigError("--max-negatives 0 leaves only the right candidates: nothing to rank against")
        if pairs.n_positive == len(pairs):  # a file marking only the right candidates trained on them alone
            unlabelled = sum(c.label is None for ex in examples for c in ex.candidates)
            why = f"; {unlabelled} candidates have no label (only the right ones marked?)" * bool(unlabelled)
            raise DataFormatError(
                f"{source}: every labelled candidate is correct (1), none wrong (0): nothing to rank "
                f"against{why}; label the wrong candidates 0"
            )
        return pairs

    def tensors(self, model: EncoderModel, sample: LabelledPairs) -> TrainData:
        assert isinstance(model, PairModel)
        features = model.featurize(sample.questions, sample.texts)
        return PairTensors(features, torch.tensor(sample.labels, dtype=torch.float32), model.pad_id)

    def objective(self, model: EncoderModel) -> Objective:
        return PointwiseBCE()
