"""Answering open-domain questions some of which the documents do not answer (``eval-answers`` on
``squad2-open:dev``, or any open dataset whose questions may be ``impossible``).

Each question is asked of its retrieved passages with the answerer's method, confidence and threshold.
Reported, with SQuAD 2.0's conventions (an abstention is right on an unanswerable question, wrong on an
answerable one):

- ``answered``: the share of answerable questions answered; ``right_answered``: the share of those
  answers that are right (a sentence holding a gold answer, a span matching one: EM), and for spans
  ``f1_answered``;
- ``unanswerable_abstain``: the share of unanswerable questions where the method says "no answer";
- ``overall``: SQuAD 2.0's overall score (right answers and right abstentions over all questions), and
  for spans ``overall_f1``; ``always_abstain`` is what saying "no answer" every time scores;
- ``auroc``: how well the confidence (the score, uncalibrated) tells answerable questions from
  unanswerable ones; ``auroc_right``: right answers from everything else;
- ``oracle``: the best overall score any threshold reaches on these very questions (a ceiling for the
  threshold, not a result).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sieveqa.data.open_qa import OpenExample
from sieveqa.evaluation.abstention import Scored, score_questions
from sieveqa.runtime.answer.answerer import Answerer
from sieveqa.runtime.answer.confidence import best_threshold

__all__ = ["evaluate_open", "open_metrics"]


def evaluate_open(
    answerer: Answerer,
    examples: Sequence[OpenExample],
    passages: int | None = 20,
    progress: bool = True,
    answerable: bool | None = None,
) -> dict[str, Any]:
    """The module docstring's metrics of ``answerer`` on ``examples`` (answerable as ``answerable``
    says; None: unless ``impossible``), and its cost per question."""
    scored = score_questions(answerer.method, examples, answerable, passages, progress)
    confidence = answerer.confidence
    values = [
        -math.inf
        if not math.isfinite(s.score)
        else confidence(s.score, s.signals)
        if confidence is not None
        else s.score
        for s in scored
    ]
    threshold = answerer.min_confidence if confidence is not None else -math.inf
    report = open_metrics(scored, values, threshold)
    seconds = np.asarray([s.seconds for s in scored] or [0.0])
    report["cost"] = {
        "seconds_per_question": float(seconds.mean()),
        "p50_seconds": float(np.percentile(seconds, 50)),
        "p95_seconds": float(np.percentile(seconds, 95)),
    }
    report["calibrated"] = confidence is not None
    report["min_confidence"] = answerer.min_confidence if confidence is not None else None
    return report


def open_metrics(scored: Sequence[Scored], values: Sequence[float], threshold: float) -> dict[str, Any]:
    """The metrics of answering where ``values`` (a confidence, or a score) reach ``threshold``."""
    can = [i for i, s in enumerate(scored) if s.answerable]
    cannot = [i for i, s in enumerate(scored) if not s.answerable]
    answers = [math.isfinite(v) and v >= threshold for v in values]
    answered = [i for i in can if answers[i]]
    right = sum(scored[i].right for i in answered)
    abstain = sum(not answers[i] for i in cannot)
    spans = [scored[i].f1 for i in answered if scored[i].f1 is not None]
    out: dict[str, Any] = {
        "questions": len(scored),
        "answerable": len(can),
        "unanswerable": len(cannot),
        "answered": _pct(len(answered), len(can)),
        "right_answered": _pct(right, len(answered)),
        "unanswerable_abstain": _pct(abstain, len(cannot)),
        "overall": _pct(right + abstain, len(scored)),
        "always_abstain": _pct(len(cannot), len(scored)),
        "right_at_any_confidence": _pct(sum(scored[i].right for i in can), len(can)),
        "auroc": auroc([values[i] for i in can], [values[i] for i in cannot]),
        "auroc_right": auroc(
            [v for v, s in zip(values, scored, strict=True) if s.right],
            [v for v, s in zip(values, scored, strict=True) if not s.right],
        ),
    }
    if spans:
        out["f1_answered"] = round(100 * sum(spans) / len(answered), 2)
        out["overall_f1"] = round(100 * (sum(spans) + abstain) / len(scored), 2)
    gains = [float(s.right) for s in scored]
    losses = [float(not s.answerable) for s in scored]
    best, score = best_threshold([v if math.isfinite(v) else -1e30 for v in values], gains, losses)
    out["oracle"] = {"overall": _pct(score, len(scored)), "threshold": best}
    return out


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float | None:
    """P(a positive scores above a negative), ties half (None without both)."""
    if not positive or not negative:
        return None
    from sklearn.metrics import roc_auc_score

    values = [v if math.isfinite(v) else -1e30 for v in [*positive, *negative]]
    labels = [1] * len(positive) + [0] * len(negative)
    return round(float(roc_auc_score(labels, values)), 4)


def _pct(part: int | float, whole: int) -> float:
    return round(100 * part / whole, 2) if whole else 0.0
