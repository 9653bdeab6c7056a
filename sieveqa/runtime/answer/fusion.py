"""A ranker whose scores are fused with the first stage's (``--fusion``): the fusion itself, and
what it fuses with, are :mod:`sieveqa.models.fusion`'s."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from sieveqa.data.records import RankingExample
from sieveqa.models.base import Ranker, RankResult
from sieveqa.models.fusion import (
    AUTO_WEIGHT,
    FUSIONS,
    Fusion,
    carries_scores,
    first_stage_scores,
    lexical_scores,
)

__all__ = [
    "AUTO_WEIGHT",
    "FUSIONS",
    "FusedRanker",
    "Fusion",
    "carries_scores",
    "default_fusion",
    "first_stage_scores",
    "lexical_scores",
    "with_fusion",
]


class FusedResult(RankResult):
    """A ranker's result with fused scores (no longer logits); what else the ranker reported (a
    cascade's cost and exits) is the wrapped result's."""

    logits: ClassVar[bool] = False

    def __init__(self, scores: list[list[float]], inner: RankResult, fusion: Fusion) -> None:
        super().__init__(scores, inner.cost)
        self.inner, self.fusion = inner, fusion

    def own_scores(self) -> list[list[float]]:
        """The model's scores, not the fused ones: a fused score says where an answer ranks, not how
        sure the model is of it (under RRF every question's top answer scores about 1/61)."""
        return self.inner.own_scores()

    @property  # type: ignore[override]  # the wrapped result's, not one per class
    def own_logits(self) -> bool:
        return self.inner.own_logits

    def variants(self) -> dict[str, list[list[int]]]:
        return self.inner.variants()

    def info(self) -> dict[str, Any]:
        return {**self.inner.info(), "fusion": str(self.fusion)}


class FusedRanker(Ranker):
    """A ranker whose scores are fused with the first stage's (:func:`first_stage_scores`)."""

    def __init__(self, ranker: Ranker, fusion: Fusion) -> None:
        self.ranker, self.fusion = ranker, fusion

    def __getattr__(self, name: str) -> Any:
        # device, precision and the rest are the wrapped ranker's (not "ranker" itself: a copy being
        # built has none yet).
        if name == "ranker":
            raise AttributeError(name)
        return getattr(self.ranker, name)

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        result = self.ranker.run(examples, progress)
        if not any(self.fusion.applies(carries_scores(ex)) for ex in examples):
            return result  # auto, and no first stage's scores to fuse: the model's own ranking
        started = time.perf_counter()
        fused = [
            self.fusion.combine(scores, first_stage_scores(ex))
            if self.fusion.applies(carries_scores(ex))
            else list(scores)
            for ex, scores in zip(examples, result.scores, strict=True)
        ]
        result.cost.seconds += time.perf_counter() - started  # BM25's time is part of the answer's
        return FusedResult(fused, result, self.fusion)


def with_fusion(ranker: Ranker, fusion: Fusion | str | None) -> Ranker:
    """``ranker`` fused with BM25 as ``fusion`` says; itself when the fusion is inactive."""
    fusion = Fusion.parse(fusion)
    return FusedRanker(ranker, fusion) if fusion.active else ranker


def default_fusion(method: str) -> Fusion:
    """The fusion ``method`` uses unless told otherwise: its options' default (none where it has no
    ``fusion`` option, as the reader methods)."""
    from sieveqa import registry  # the registry loads the methods, which import this module

    options = registry.answer_method(method).options_class()
    default = {f.name: f.default for f in dataclasses.fields(options)}.get("fusion", "none")
    return Fusion.parse(default)
