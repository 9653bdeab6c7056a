"""Ranking metrics and reports."""

from sieveqa.evaluation.metrics import (
    METRICS,
    MetricReport,
    evaluate_ranked,
    evaluate_scores,
    qrels_from_examples,
)

__all__ = ["METRICS", "MetricReport", "evaluate_ranked", "evaluate_scores", "qrels_from_examples"]
