"""Never worse than BM25: a model's scores fused with BM25's over the same candidates.

Every ``answer`` method retrieves with BM25, and a user can always fall back on it, so a ranker
that loses to BM25 on some question is worth correcting with it. BM25 here scores each question's
candidates among themselves (the candidate list is the corpus: the same "BM25 over these sentences"
a user would run), so the fusion means the same on a benchmark's candidate lists, on passages an
index retrieved, and on the sentences inside them. Where the candidates carry the first stage's own
scores (``Candidate.retrieval_score``: a BEIR set's BM25 over its whole corpus, a ranking file's
``retrieval_score``), those are fused instead.

Two fusions, each with BM25's share ``weight``:

- ``interp``: ``(1 - w) · minmax(model) + w · minmax(bm25)`` per question (normalised interpolation);
- ``rrf``: ``(1 - w) / (k + rank_model) + w / (k + rank_bm25)`` (weighted reciprocal rank, k = 60).

Written ``none``, ``interp:0.3`` or ``rrf:0.5`` wherever an option takes one (``--fusion``). PEASI
fuses its passage reranker's scores and so chooses the passages EASI reads; the answers of those
passages are still ordered by its joint score, which reads the reranker's own logit (and BM25 only as
its ``bm25_weight`` says).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sieveqa.data.records import RankingExample
from sieveqa.errors import ConfigError
from sieveqa.retrieval import BM25Index

__all__ = ["AUTO_WEIGHT", "FUSIONS", "Fusion", "carries_scores", "first_stage_scores", "lexical_scores"]

FUSIONS = ("none", "interp", "rrf")
RRF_K = 60
#: BM25's share in ``auto``, the interpolation with a first stage's own scores: chosen on the passage
#: dev sets (docs/RESULTS.md, issue 65).
AUTO_WEIGHT = 0.2


@dataclass(frozen=True)
class Fusion:
    """How a model's scores and BM25's are combined: ``method`` and BM25's share ``weight``;
    ``given_only``: only where the candidates carry the first stage's own scores (``auto``)."""

    method: str = "none"
    weight: float = 0.0
    given_only: bool = False

    def __post_init__(self) -> None:
        if self.method not in FUSIONS:
            raise ConfigError(f"fusion must be one of {', '.join(FUSIONS)}, got {self.method!r}")
        if not 0.0 <= self.weight <= 1.0:
            raise ConfigError(f"fusion weight must be within [0, 1], got {self.weight}")

    @classmethod
    def parse(cls, text: str | Fusion | None) -> Fusion:
        """``none``, ``auto``, ``interp:W`` or ``rrf:W`` (a Fusion or None passes through; None is
        ``none``). ``auto`` is ``interp`` at :data:`AUTO_WEIGHT` where the candidates carry the
        first stage's scores, and nothing where they do not."""
        if text is None:
            return cls()
        if isinstance(text, Fusion):
            return text
        if text.strip() == "auto":
            return cls("interp", AUTO_WEIGHT, given_only=True)
        method, sep, weight = text.strip().partition(":")
        if method == "none" and not sep:
            return cls()
        if method not in FUSIONS[1:] or not sep:
            raise ConfigError(f"--fusion must be none, auto, interp:W or rrf:W (W in [0, 1]), got {text!r}")
        try:
            value = float(weight)
        except ValueError:
            raise ConfigError(f"--fusion {text!r}: the weight {weight!r} is not a number") from None
        return cls(method, value)

    @property
    def active(self) -> bool:
        return self.method != "none" and self.weight > 0.0

    def applies(self, given: bool) -> bool:
        """Whether to fuse a list whose first stage's scores are ``given`` or not (``auto`` only fuses
        given ones; an explicit fusion falls back on BM25 over the list)."""
        return self.active and (given or not self.given_only)

    def __str__(self) -> str:
        if self.given_only:
            return "auto"
        return "none" if self.method == "none" else f"{self.method}:{self.weight:g}"

    def combine(self, model: Sequence[float], lexical: Sequence[float]) -> list[float]:
        """The fused score of each candidate (higher first); the model's own scores when inactive."""
        if len(model) != len(lexical):
            raise ValueError(f"{len(model)} model scores but {len(lexical)} BM25 scores")
        if not self.active or not len(model):
            return [float(s) for s in model]
        w, a, b = (
            self.weight,
            _finite(model, "the model's", ValueError),
            _finite(lexical, "the first stage's"),
        )
        if self.method == "interp":
            fused = (1 - w) * _minmax(a) + w * _minmax(b)
        else:
            fused = (1 - w) / (RRF_K + _ranks(a)) + w / (RRF_K + _ranks(b))
        return fused.tolist()


def _finite(scores: Sequence[float], what: str, error: type[Exception] = ConfigError) -> np.ndarray:
    """``scores`` as float64; a non-finite one is ``error`` (the caller's ConfigError, the model's a bug)."""
    values = np.asarray(scores, dtype=np.float64)
    if not np.isfinite(values).all():
        raise error(f"fusion needs finite scores, {what} are {values[~np.isfinite(values)][:3].tolist()}")
    return values


def _minmax(values: np.ndarray) -> np.ndarray:
    half = values / 2  # halves first: 1e308 - (-1e308) would overflow to inf, and the scores to NaN
    span = half.max() - half.min()
    # All alike (one candidate, or ties): each is its list's best, 1.0 (0.0 fused a lone right passage
    # to nothing, under any threshold); the order is the other scores' either way.
    return (half - half.min()) / span if span > 0 else np.ones_like(values)


def _ranks(values: np.ndarray) -> np.ndarray:
    # Tied scores share their best rank: a list where BM25 matches nothing (all 0) must not favour
    # the candidates that happen to come first.
    return np.searchsorted(np.sort(-values), -values, side="left") + 1.0


def lexical_scores(question: str, texts: Sequence[str]) -> list[float]:
    """BM25 (Lucene, no stemming, English stopwords) of each text for ``question``, the texts
    themselves being the corpus."""
    if not texts:
        return []
    index = BM25Index.build([str(i) for i in range(len(texts))], texts)
    return [float(s) for s in index.scores(question)]


def carries_scores(example: RankingExample) -> bool:
    """Whether every candidate carries the first stage's score (``retrieval_score``)."""
    return bool(example.candidates) and all(c.retrieval_score is not None for c in example.candidates)


def first_stage_scores(example: RankingExample) -> list[float]:
    """What the first stage gave each candidate where the candidates carry it (a BEIR set's BM25 over
    its whole corpus, a file's ``retrieval_score``), else BM25 over the candidates themselves."""
    if carries_scores(example):
        return [float(c.retrieval_score or 0.0) for c in example.candidates]
    return lexical_scores(example.question.text, [c.text for c in example.candidates])
