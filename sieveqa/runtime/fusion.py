"""Never worse than BM25: a model's scores fused with BM25's over the same candidates.

Every ``answer`` method retrieves with BM25, and a user can always fall back on it, so a ranker
that loses to BM25 on some question is worth correcting with it. BM25 here scores each question's
candidates among themselves (the candidate list is the corpus: the same "BM25 over these sentences"
a user would run), so the fusion means the same on a benchmark's candidate lists, on passages an
index retrieved, and on the sentences inside them.

Two fusions, each with BM25's share ``weight``:

- ``interp``: ``(1 - w) · minmax(model) + w · minmax(bm25)`` per question (normalised interpolation);
- ``rrf``: ``(1 - w) / (k + rank_model) + w / (k + rank_bm25)`` (weighted reciprocal rank, k = 60).

Written ``none``, ``interp:0.3`` or ``rrf:0.5`` wherever an option takes one (``--fusion``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from sieveqa.data.records import RankingExample, score_order
from sieveqa.errors import ConfigError
from sieveqa.models.base import Ranker, RankResult
from sieveqa.retrieval import BM25Index

__all__ = ["FUSIONS", "FusedRanker", "Fusion", "lexical_scores", "with_fusion"]

FUSIONS = ("none", "interp", "rrf")
RRF_K = 60


@dataclass(frozen=True)
class Fusion:
    """How a model's scores and BM25's are combined: ``method`` and BM25's share ``weight``."""

    method: str = "none"
    weight: float = 0.0

    def __post_init__(self) -> None:
        if self.method not in FUSIONS:
            raise ConfigError(f"fusion must be one of {', '.join(FUSIONS)}, got {self.method!r}")
        if not 0.0 <= self.weight <= 1.0:
            raise ConfigError(f"fusion weight must be within [0, 1], got {self.weight}")

    @classmethod
    def parse(cls, text: str | Fusion | None) -> Fusion:
        """``none``, ``interp:W`` or ``rrf:W`` (a Fusion or None passes through; None is ``none``)."""
        if text is None:
            return cls()
        if isinstance(text, Fusion):
            return text
        method, sep, weight = text.strip().partition(":")
        if method == "none" and not sep:
            return cls()
        if method not in FUSIONS[1:] or not sep:
            raise ConfigError(f"--fusion must be none, interp:W or rrf:W (W in [0, 1]), got {text!r}")
        try:
            value = float(weight)
        except ValueError:
            raise ConfigError(f"--fusion {text!r}: the weight {weight!r} is not a number") from None
        return cls(method, value)

    @property
    def active(self) -> bool:
        return self.method != "none" and self.weight > 0.0

    def __str__(self) -> str:
        return "none" if self.method == "none" else f"{self.method}:{self.weight:g}"

    def combine(self, model: Sequence[float], lexical: Sequence[float]) -> list[float]:
        """The fused score of each candidate (higher first); the model's own scores when inactive."""
        if len(model) != len(lexical):
            raise ValueError(f"{len(model)} model scores but {len(lexical)} BM25 scores")
        if not self.active or not len(model):
            return [float(s) for s in model]
        w = self.weight
        if self.method == "interp":
            fused = (1 - w) * _minmax(model) + w * _minmax(lexical)
        else:
            fused = (1 - w) / (RRF_K + _ranks(model)) + w / (RRF_K + _ranks(lexical))
        return fused.tolist()


def _minmax(scores: Sequence[float]) -> np.ndarray:
    values = np.asarray(scores, dtype=np.float64)
    span = values.max() - values.min()
    return (values - values.min()) / span if span > 0 else np.zeros_like(values)


def _ranks(scores: Sequence[float]) -> np.ndarray:
    ranks = np.empty(len(scores), dtype=np.float64)
    ranks[score_order(list(scores))] = np.arange(1, len(scores) + 1)
    return ranks


def lexical_scores(question: str, texts: Sequence[str]) -> list[float]:
    """BM25 (Lucene, no stemming, English stopwords) of each text for ``question``, the texts
    themselves being the corpus."""
    if not texts:
        return []
    index = BM25Index.build([str(i) for i in range(len(texts))], texts)
    return [float(s) for s in index.scores(question)]


class FusedResult(RankResult):
    """A ranker's result with fused scores (no longer logits)."""

    logits: ClassVar[bool] = False


class FusedRanker(Ranker):
    """A ranker whose scores are fused with BM25's over each question's candidates."""

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
        fused = [
            self.fusion.combine(scores, lexical_scores(ex.question.text, [c.text for c in ex.candidates]))
            for ex, scores in zip(examples, result.scores, strict=True)
        ]
        return FusedResult(fused, result.cost)


def with_fusion(ranker: Ranker, fusion: Fusion | str | None) -> Ranker:
    """``ranker`` fused with BM25 as ``fusion`` says; itself when the fusion is inactive."""
    fusion = Fusion.parse(fusion)
    return FusedRanker(ranker, fusion) if fusion.active else ranker
