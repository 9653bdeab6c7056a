"""The narrow contract every ranker fulfils: score the candidates of questions, rank them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from sieveqa.data.records import RankingExample, ScoredCandidate


def flatten_pairs(examples: Sequence[RankingExample]) -> tuple[list[str], list[str]]:
    """Question text and candidate text of every candidate, in example order."""
    questions = [ex.question.text for ex in examples for _ in ex.candidates]
    return questions, [c.text for ex in examples for c in ex.candidates]


def regroup(examples: Sequence[RankingExample], flat: Sequence[float]) -> list[list[float]]:
    """Cut one score per candidate, in example order, back into one list per example."""
    out, start = [], 0
    for ex in examples:
        out.append(list(flat[start : start + len(ex.candidates)]))
        start += len(ex.candidates)
    if start != len(flat):
        raise ValueError(f"{len(flat)} scores for {start} candidates")
    return out


class Ranker(ABC):
    """Anything that scores (question, candidate) pairs; higher scores rank first."""

    @abstractmethod
    def score(self, examples: Sequence[RankingExample], progress: bool = False) -> list[list[float]]:
        """One score per candidate, per example."""

    def rank(self, examples: Sequence[RankingExample], progress: bool = False) -> list[list[ScoredCandidate]]:
        """Candidates of each example sorted best first (ties keep input order), with 1-based ranks."""
        out = []
        for ex, scores in zip(examples, self.score(examples, progress=progress), strict=True):
            order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
            out.append(
                [ScoredCandidate(ex.candidates[i], float(scores[i]), r + 1) for r, i in enumerate(order)]
            )
        return out
