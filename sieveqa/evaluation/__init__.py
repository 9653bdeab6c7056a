"""Ranking metrics, reports, and the measurements the benchmarks and the CLI share."""

from sieveqa.evaluation.answers import AnswerReport, evaluate_answers
from sieveqa.evaluation.metrics import (
    METRICS,
    MetricReport,
    evaluate_orders,
    evaluate_ranked,
    evaluate_scores,
    qrels_from_examples,
)
from sieveqa.evaluation.report import evaluate_ranker, evaluate_result

__all__ = [
    "METRICS",
    "AnswerReport",
    "MetricReport",
    "evaluate_answers",
    "evaluate_orders",
    "evaluate_ranked",
    "evaluate_ranker",
    "evaluate_result",
    "evaluate_scores",
    "qrels_from_examples",
]
