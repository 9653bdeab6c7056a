"""Open-domain answering with unanswerable questions: SQuAD 2.0's overall score, abstention, AUROC,
exact numbers on hand-made answers."""

from __future__ import annotations

import math

import pytest

from sieveqa.data.open_qa import OpenExample, RetrievedPassage
from sieveqa.evaluation.abstention import Scored, fit_confidence, score_questions
from sieveqa.evaluation.open_answers import evaluate_open, open_metrics
from sieveqa.runtime.answer.answerer import Answerer
from sieveqa.runtime.answer.sentence import Pointwise
from tests.fakes import KeywordRanker


def test_overall_counts_right_answers_and_right_abstentions() -> None:
    scored = [
        Scored(3.0, True, True),  # answered, right
        Scored(2.0, False, True),  # answered, wrong
        Scored(0.5, True, True),  # abstains: right answer lost
        Scored(2.5, False, False),  # unanswerable, answered: wrong
        Scored(0.2, False, False),  # unanswerable, abstains: right
        Scored(-math.inf, False, False),  # nothing retrieved: abstains
    ]
    m = open_metrics(scored, [s.score for s in scored], 1.0)
    assert (m["answerable"], m["unanswerable"]) == (3, 3)
    assert m["answered"] == pytest.approx(66.67) and m["right_answered"] == 50.0
    assert m["unanswerable_abstain"] == pytest.approx(66.67)
    assert m["overall"] == 50.0 and m["always_abstain"] == 50.0  # 1 + 2 of 6
    # Answerable above unanswerable in 7 of 9 pairs (3.0 beats all three, 2.0 and 0.5 two each).
    assert m["auroc"] == pytest.approx(7 / 9, abs=1e-4)
    # Answering at 3.0 or at 0.5 both score 4 of 6: the tie goes to abstaining least.
    assert m["oracle"]["overall"] == pytest.approx(66.67) and m["oracle"]["threshold"] == 0.5


def test_spans_also_get_f1() -> None:
    scored = [Scored(1.0, False, True, {}, 0.5), Scored(1.0, True, True, {}, 1.0), Scored(0.0, False, False)]
    m = open_metrics(scored, [1.0, 1.0, 0.0], 0.5)
    assert m["f1_answered"] == 75.0 and m["overall_f1"] == pytest.approx(100 * 2.5 / 3, abs=0.01)


def _examples() -> list[OpenExample]:
    said = RetrievedPassage("p1", "The answer is 42. Cats sleep.")
    silent = RetrievedPassage("p2", "Cats sleep. Dogs bark.")
    return [
        OpenExample("a", "What is the answer?", ["42"], [said, silent]),
        OpenExample("b", "What is the answer?", ["42"], [silent, said]),
        OpenExample("u", "What is the question?", [], [silent], True),
    ]


def test_the_answerer_is_scored_with_its_confidence_and_threshold() -> None:
    method = Pointwise(KeywordRanker())
    scored = score_questions(method, _examples())
    assert [(s.right, s.answerable) for s in scored] == [(True, True), (True, True), (False, False)]
    confidence = fit_confidence(scored + scored, "overall", {}, {})  # twice: both labels at each score
    report = evaluate_open(Answerer(method, confidence=confidence), _examples(), progress=False)
    assert report["calibrated"] and report["overall"] == 100.0 and report["auroc"] == 1.0
    assert report["cost"]["p50_seconds"] > 0  # timed around the method
    assert report["unanswerable_abstain"] == 100.0 and report["answered"] == 100.0
    uncalibrated = evaluate_open(Answerer(method), _examples(), progress=False)
    assert uncalibrated["unanswerable_abstain"] == 0.0 and uncalibrated["overall"] == pytest.approx(66.67)
