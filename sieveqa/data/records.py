"""Typed records shared by every reader, model and metric."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Candidate:
    """One answer candidate (a sentence or a passage) of a question; ``retrieval_score`` is what a
    first stage (BM25, a retriever) gave it, where one chose the candidates."""

    id: str
    text: str
    label: int | None = None
    passage_id: str | None = None
    doc_id: str | None = None
    retrieval_score: float | None = None


@dataclass(frozen=True, slots=True)
class Question:
    """A question with its id."""

    qid: str
    text: str


@dataclass(slots=True)
class RankingExample:
    """A question and the candidates to rank for it; ``judged`` holds judgements of documents that are
    not candidates (BEIR's qrels: relevant documents the first stage missed count in recall and nDCG)."""

    question: Question
    candidates: list[Candidate] = field(default_factory=list)
    judged: dict[str, int] | None = None

    @property
    def qid(self) -> str:
        return self.question.qid

    @property
    def labels(self) -> list[int | None]:
        return [c.label for c in self.candidates]

    @property
    def n_positive(self) -> int:
        return sum(1 for c in self.candidates if c.label == 1)

    def has_positive(self) -> bool:
        """True when at least one candidate is labelled correct."""
        return self.n_positive > 0

    def is_clean(self) -> bool:
        """True when the candidates are neither all correct nor all incorrect (TrecQA 'clean')."""
        return 0 < self.n_positive < len(self.candidates)


@dataclass(frozen=True, slots=True)
class Passage:
    """A passage of a corpus (for SQuAD: a paragraph of an article)."""

    pid: str
    text: str
    title: str = ""
    doc_id: str | None = None


@dataclass(frozen=True, slots=True)
class ScoredCandidate:
    """A candidate with the score a ranker gave it and its 1-based rank."""

    candidate: Candidate
    score: float
    rank: int


def score_order(scores: Sequence[float]) -> list[int]:
    """Indices best first: higher score first, ties in input order."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))
