"""Metrics against values computed by hand."""

import math

import pytest

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.evaluation.metrics import evaluate_ranked, evaluate_scores

QRELS = {"q1": {"a": 0, "b": 1, "c": 0, "d": 1}, "q2": {"x": 1, "y": 0, "z": 0}, "q3": {"m": 0, "n": 0}}
RUN = {"q1": ["a", "b", "c", "d"], "q2": ["x", "y", "z"], "q3": ["n", "m"]}


def test_hand_computed_per_question() -> None:
    report = evaluate_ranked(QRELS, RUN)
    q1 = report.per_question["q1"]
    # Relevant at ranks 2 and 4: AP = (1/2 + 2/4) / 2; first hit at rank 2.
    assert q1["map"] == pytest.approx(0.5)
    assert q1["mrr"] == pytest.approx(0.5)
    assert q1["p@1"] == 0.0
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3)
    assert q1["ndcg@10"] == pytest.approx(dcg / idcg)
    assert (q1["hits@1"], q1["hits@3"]) == (0.0, 1.0)
    assert report.per_question["q2"]["map"] == 1.0
    # A question without a correct answer counts as 0 (the "raw" convention).
    assert report.per_question["q3"] == dict.fromkeys(report.mean, 0.0)


def test_means_over_all_questions() -> None:
    report = evaluate_ranked(QRELS, RUN)
    assert report.n_questions == 3
    assert report.mean["map"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert report.mean["p@1"] == pytest.approx(1 / 3)


def test_scores_ties_keep_input_order() -> None:
    ex = RankingExample(Question("q", "?"), [Candidate("a", "", 0), Candidate("b", "", 1)])
    assert evaluate_scores([ex], [[1.0, 1.0]]).mean["p@1"] == 0.0
    assert evaluate_scores([ex], [[0.0, 1.0]]).mean["p@1"] == 1.0


def test_missing_ranking_is_an_error() -> None:
    with pytest.raises(ValueError, match="have no ranking"):
        evaluate_ranked(QRELS, {"q1": RUN["q1"]})
