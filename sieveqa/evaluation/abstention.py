"""Abstention: is the answer in the documents at all? (``sieveqa calibrate-confidence``).

A method is run on open-domain questions twice: over passages retrieved from an index that holds the
question's article (``squad-open-mini:dev0``) and from one that does not (``dev0-unindexed``). An
answer is *right* when it is the gold answer (a reader's span: exact match) or holds it (a sentence:
a gold answer string inside it, normalised); no answer is right for a question whose article is not
indexed. Platt scaling of the best answer's score fits the confidence; ``min_confidence`` is chosen so
that ``keep`` of the right answers to indexed questions stay answered; the report gives what share of
unindexed questions then abstain, and the abstention curve (answered share against accuracy of the
answered).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tqdm.auto import tqdm

from sieveqa.data.corpus import IndexedPassage
from sieveqa.data.open_qa import OpenExample
from sieveqa.data.sentences import sentence_spans
from sieveqa.evaluation.extractive import exact_match, normalize_answer
from sieveqa.runtime.answer.answerer import Answerer
from sieveqa.runtime.answer.confidence import Confidence, choose_threshold, fit_platt
from sieveqa.runtime.answer.method import Found

__all__ = ["Scored", "abstention_curve", "fit_confidence", "is_right", "score_questions"]


@dataclass(frozen=True)
class Scored:
    """One question's best answer: its score (-inf: none), whether it is right, whether the
    question's article was indexed."""

    score: float
    right: bool
    indexed: bool


def is_right(found: Found, answers: Sequence[str]) -> bool:
    """A span that is a gold answer, or a sentence that holds one (both normalised)."""
    if found.span is not None:
        return bool(exact_match(found.text, answers))
    text = f" {normalize_answer(found.text)} "
    return any(f" {normalize_answer(a)} " in text for a in answers if normalize_answer(a))


def _passages(example: OpenExample, limit: int | None) -> list[IndexedPassage]:
    return [
        # SQuAD text: split as SQuAD-AS2's sentences are (pysbd alone), as the numbers were measured.
        IndexedPassage(p.id, p.id.split("#")[0], p.title, p.text, tuple(sentence_spans(p.text, guard=False)))
        for p in example.passages[:limit]
    ]


def score_questions(
    answerer: Answerer,
    examples: Sequence[OpenExample],
    indexed: bool,
    passages: int | None = None,
    progress: bool = False,
) -> list[Scored]:
    """The method's best answer to each question over its first ``passages`` passages."""
    out = []
    for ex in tqdm(examples, desc="questions", unit="q", disable=not progress):
        run = answerer.method.run(ex.question, _passages(ex, passages), 1)
        best = run.answers[0] if run.answers else None
        score = best.score if best is not None else -math.inf
        out.append(Scored(score, indexed and best is not None and is_right(best, ex.answers), indexed))
    return out


def fit_confidence(
    scored: Sequence[Scored], keep: float, models: dict[str, str], fitted_on: dict[str, Any]
) -> Confidence:
    """Platt scaling over every question; the threshold keeping ``keep`` of the right answers."""
    scale, bias = fit_platt([s.score for s in scored], [s.right for s in scored])
    calibrated = Confidence(scale, bias)
    threshold = choose_threshold([calibrated(s.score) for s in scored if s.right], keep)
    return Confidence(scale, bias, threshold, dict(models), fitted_on)


def abstention_curve(
    scored: Sequence[Scored], confidence: Confidence, thresholds: Sequence[float] | None = None
) -> dict[str, Any]:
    """At each threshold: share of indexed questions answered, accuracy of those answered, share of
    right answers kept, share of unindexed questions abstaining; and the same at ``min_confidence``."""
    conf = [confidence(s.score) for s in scored]
    levels = sorted(set(thresholds or [i / 20 for i in range(20)]) | {confidence.min_confidence})

    def at(t: float) -> dict[str, float]:
        ind = [(c, s) for c, s in zip(conf, scored, strict=True) if s.indexed]
        gone = [c for c, s in zip(conf, scored, strict=True) if not s.indexed]
        answered = [s for c, s in ind if c >= t]
        right = [s for s in (s for _, s in ind) if s.right]
        return {
            "threshold": round(t, 4),
            "answered": _share(len(answered), len(ind)),
            "accuracy_answered": _share(sum(s.right for s in answered), len(answered)),
            "right_kept": _share(sum(c >= t for c, s in ind if s.right), len(right)),
            "unindexed_abstain": _share(sum(c < t for c in gone), len(gone)),
        }

    return {"curve": [at(t) for t in levels], "at_min_confidence": at(confidence.min_confidence)}


def _share(part: int, whole: int) -> float:
    return round(100 * part / whole, 2) if whole else 0.0
