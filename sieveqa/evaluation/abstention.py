"""Abstention: do the documents say this? (``sieveqa calibrate-confidence``, ``eval-answers`` on
open-domain questions).

A method answers open-domain questions, some of which nothing retrieved answers: SQuAD 2.0's
unanswerable questions (``impossible``: written about a paragraph that is indexed and does not say),
or questions asked of an index without their article (a dataset named ``...-unindexed``). An answer is
*right* when it is the gold answer (a reader's span: exact match) or holds it (a sentence: a gold
answer string inside it, normalised); no answer is right for an unanswerable question, where
abstaining is.

:func:`fit_confidence` fits the logistic regression of "right" on the best answer's score and the
method's signals over every question; ``min_confidence`` either maximizes SQuAD 2.0's overall score on
those questions (``rule="overall"``: a right answer or a right abstention scores 1) or keeps a share of
the right answers (``rule=0.9``). :func:`abstention_curve` reports, at each threshold, the share of
answerable questions answered, the accuracy of those answered, the right answers kept, the unanswerable
questions that abstain and the overall score.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from sieveqa.data.corpus import IndexedPassage
from sieveqa.data.open_qa import OpenExample
from sieveqa.data.sentences import sentence_spans
from sieveqa.errors import ConfigError
from sieveqa.evaluation.extractive import exact_match, f1_score, normalize_answer
from sieveqa.runtime.answer.confidence import (
    Confidence,
    best_threshold,
    choose_threshold,
    fit_logistic,
)
from sieveqa.runtime.answer.method import AnswerMethod, Found

if TYPE_CHECKING:
    from sieveqa.data.questions import AskedQuestion
    from sieveqa.runtime.answer.answerer import Answerer

__all__ = [
    "Scored",
    "abstention_curve",
    "answerable_in",
    "as_passages",
    "confidence_of",
    "fit_confidence",
    "fit_cut",
    "holds_answer",
    "is_right",
    "parse_rule",
    "score_asked",
    "score_questions",
]


@dataclass(frozen=True)
class Scored:
    """One question's best answer: its score (-inf: none) and signals, whether it is right, whether
    the documents answer the question, and a span's token F1 (None for a sentence)."""

    score: float
    right: bool
    answerable: bool
    signals: Mapping[str, float] = field(default_factory=dict)
    f1: float | None = None
    seconds: float = 0.0


def is_right(found: Found, answers: Sequence[str]) -> bool:
    """A span that is a gold answer, or a sentence that holds one (both normalised)."""
    if found.span is not None:
        return bool(exact_match(found.text, answers))
    text = f" {normalize_answer(found.text)} "
    return any(f" {normalize_answer(a)} " in text for a in answers if normalize_answer(a))


def holds_answer(text: str, answers: Sequence[str]) -> bool:
    """Whether ``text`` holds one of a user's answer strings: as a word sequence once normalised, or
    verbatim (case and runs of whitespace aside), so ``'~'``, ``[...]`` or ``alias-conv.sh`` inside
    ``examples/misc/alias-conv.sh`` count, which normalising alone would lose."""
    normal = f" {normalize_answer(text)} "
    loose = " ".join(text.split()).casefold()

    def held(answer: str) -> bool:
        words = normalize_answer(answer)
        return bool(words and f" {words} " in normal) or " ".join(answer.split()).casefold() in loose

    return any(held(a) for a in answers if a.strip())


def as_passages(example: OpenExample, limit: int | None = None) -> list[IndexedPassage]:
    """An example's first ``limit`` passages, split into sentences."""
    return [
        # SQuAD text: split as SQuAD-AS2's sentences are (pysbd alone), as the numbers were measured.
        IndexedPassage(p.id, p.id.split("#")[0], p.title, p.text, tuple(sentence_spans(p.text, guard=False)))
        for p in example.passages[:limit]
    ]


def score_questions(
    method: AnswerMethod,
    examples: Sequence[OpenExample],
    answerable: bool | None = None,
    passages: int | None = None,
    progress: bool = False,
) -> list[Scored]:
    """The method's best answer to each question over its first ``passages`` passages; a question is
    answerable as ``answerable`` says (None: unless the example is ``impossible``)."""
    out = []
    for ex in tqdm(examples, desc="questions", unit="q", disable=not progress):
        started = time.perf_counter()
        run = method.run(ex.question, as_passages(ex, passages), 1)
        seconds = time.perf_counter() - started
        best = run.answers[0] if run.answers else None
        can = not ex.impossible if answerable is None else answerable
        score = best.score if best is not None else -math.inf
        right = can and best is not None and is_right(best, ex.answers)
        f1 = f1_score(best.text, ex.answers) if can and best is not None and best.span is not None else None
        signals = dict(best.signals or {}) if best is not None else {}
        out.append(Scored(score, right, can, signals, f1, seconds))
    return out


def answerable_in(dataset: str) -> bool | None:
    """Whether a dataset's questions are answerable from their passages by its name: False for one
    asked of an index without its article (``...-unindexed``), None (each question says) otherwise."""
    return False if dataset.endswith("-unindexed") else None


def parse_rule(text: str) -> str | float:
    """``--threshold-rule``: ``overall`` or the share of right answers to keep (``0.9``)."""
    if text == "overall":
        return text
    try:
        keep = float(text)
    except ValueError:
        keep = -1.0
    if not 0 < keep <= 1:
        raise ConfigError(f"--threshold-rule must be 'overall' or a share in (0, 1], got {text!r}")
    return keep


def fit_confidence(
    scored: Sequence[Scored],
    rule: str | float,
    models: dict[str, str],
    fitted_on: dict[str, Any],
    signals: Sequence[str] = (),
    groups: Sequence[str] | None = None,
) -> Confidence:
    """The logistic regression of "right" on the score and ``signals`` over every question, and the
    threshold ``rule`` chooses (module docstring); with ``groups`` (each question's set), the overall
    rule weighs every set alike (the mean of their overall scores), so a small set of other documents
    counts as much as a large one."""
    answered = [s for s in scored if math.isfinite(s.score)]
    missing = sorted({n for s in answered for n in signals if n not in s.signals})
    if missing:
        raise ConfigError(f"the method's answers carry no {', '.join(missing)} signal to fit")
    weights, bias = fit_logistic(
        [[s.score, *(s.signals[n] for n in signals)] for s in answered], [s.right for s in answered]
    )
    fitted = Confidence(weights[0], bias, signals=dict(zip(signals, weights[1:], strict=True)))
    conf = [confidence_of(fitted, s) for s in scored]
    if rule == "overall":
        threshold = fit_cut(scored, fitted, groups)
    else:
        threshold = choose_threshold([c for c, s in zip(conf, scored, strict=True) if s.right], float(rule))
    return Confidence(fitted.scale, bias, threshold, dict(models), fitted_on, fitted.signals)


def fit_cut(scored: Sequence[Scored], confidence: Confidence, groups: Sequence[str] | None = None) -> float:
    """The threshold on ``confidence`` with the best SQuAD 2.0 overall score over ``scored`` (with
    ``groups``: the best mean of the groups' overall scores)."""
    sizes = Counter(groups or ())
    weights = [1 / sizes[g] for g in groups] if groups is not None else [1.0] * len(scored)
    conf = [confidence_of(confidence, s) for s in scored]
    gains = [w * float(s.right) for w, s in zip(weights, scored, strict=True)]
    losses = [w * float(not s.answerable) for w, s in zip(weights, scored, strict=True)]
    return min(best_threshold(conf, gains, losses)[0], 1.0)


def score_asked(answerer: Answerer, asked: Sequence[AskedQuestion], progress: bool = False) -> list[Scored]:
    """The answerer's best answer to each of a user's questions over its index: right when it holds
    one of the question's answer strings; a question without one is one the documents do not answer."""
    out = []
    for q in tqdm(asked, desc="questions", unit="q", disable=not progress):
        started = time.perf_counter()
        best = answerer.answer(q.question, top=1).best
        can = bool(q.answers)
        score = best.score if best is not None else -math.inf
        right = can and best is not None and holds_answer(best.text, q.answers or ())
        signals = dict(best.signals or {}) if best is not None else {}
        out.append(Scored(score, right, can, signals, None, time.perf_counter() - started))
    return out


def confidence_of(confidence: Confidence, s: Scored) -> float:
    """A question's best answer's confidence (0 where it has no answer)."""
    return confidence(s.score, s.signals) if math.isfinite(s.score) else 0.0


def abstention_curve(
    scored: Sequence[Scored], confidence: Confidence, thresholds: Sequence[float] | None = None
) -> dict[str, Any]:
    """At each threshold: share of answerable questions answered, accuracy of those answered, share
    of right answers kept, share of unanswerable questions abstaining, SQuAD 2.0's overall score; and
    the same at ``min_confidence``."""
    conf = [confidence_of(confidence, s) for s in scored]
    levels = sorted(set(thresholds or [i / 20 for i in range(20)]) | {confidence.min_confidence})

    def at(t: float) -> dict[str, float]:
        can = [(c, s) for c, s in zip(conf, scored, strict=True) if s.answerable]
        cannot = [c for c, s in zip(conf, scored, strict=True) if not s.answerable]
        answered = [s for c, s in can if c >= t]
        right = sum(s.right for s in answered)
        return {
            "threshold": round(t, 4),
            "answered": _share(len(answered), len(can)),
            "accuracy_answered": _share(right, len(answered)),
            "right_kept": _share(right, sum(s.right for _, s in can)),
            "unanswerable_abstain": _share(sum(c < t for c in cannot), len(cannot)),
            "overall": _share(right + sum(c < t for c in cannot), len(scored)),
        }

    return {"curve": [at(t) for t in levels], "at_min_confidence": at(confidence.min_confidence)}


def _share(part: int, whole: int) -> float:
    return round(100 * part / whole, 2) if whole else 0.0
