"""Ranking metrics, reports, and the measurements the benchmarks and the CLI share. Names are imported
on first use (the metrics need no model; the reports do)."""

from __future__ import annotations

from sieveqa.lazy import lazy_getattr

_EXPORTS = {
    "AnswerReport": "sieveqa.evaluation.answers",
    "evaluate_answers": "sieveqa.evaluation.answers",
    "METRICS": "sieveqa.evaluation.metrics",
    "MetricReport": "sieveqa.evaluation.metrics",
    "evaluate_orders": "sieveqa.evaluation.metrics",
    "evaluate_ranked": "sieveqa.evaluation.metrics",
    "evaluate_scores": "sieveqa.evaluation.metrics",
    "qrels_from_examples": "sieveqa.evaluation.metrics",
    "evaluate_ranker": "sieveqa.evaluation.report",
    "evaluate_result": "sieveqa.evaluation.report",
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr("sieveqa.evaluation", _EXPORTS)
