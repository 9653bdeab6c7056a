"""What ``sieveqa eval`` (and the HTTP service) report for one ranker on one labelled dataset."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sieveqa.data.records import RankingExample
from sieveqa.evaluation.metrics import MetricReport, evaluate_orders, qrels_from_examples
from sieveqa.models.base import Ranker, RankResult

#: The columns a report table shows first.
SUMMARY = ("map", "mrr", "p@1", "ndcg@10", "pairs_per_second", "layer_units")
#: The same for passage ranking over a first stage (BEIR's sets), the first stage's nDCG@10 beside.
PASSAGE_SUMMARY = (
    "ndcg@10",
    "first_stage_ndcg@10",
    "mrr@10",
    "recall@100",
    "pairs_per_second",
    "layer_units",
)


def over_first_stage(examples: Sequence[RankingExample]) -> bool:
    """Whether ``examples`` rerank a first stage's list (BEIR's): judged beyond their candidates."""
    return any(ex.judged is not None for ex in examples)


def evaluate_result(
    examples: Sequence[RankingExample], result: RankResult, source: str = ""
) -> tuple[MetricReport, dict[str, Any]]:
    """Metrics of ``result``'s ranking, and the report: metrics, size, speed, cost, whatever the
    ranker adds (a cascade: relative cost, survivors per exit) and the metrics of every ranking
    variant the run implies (a cascade stopped at each exit)."""
    qrels = qrels_from_examples(examples, source)
    report = evaluate_orders(examples, result.orders(), qrels)
    out: dict[str, Any] = {
        **report.as_dict(),
        "n_questions": report.n_questions,
        "n_pairs": result.n_pairs,
        "seconds": round(result.cost.seconds, 3),
        "pairs_per_second": round(result.pairs_per_second, 2),
        "layer_units": result.cost.layer_units,
        "flops": result.cost.flops,
        **result.info(),
    }
    if over_first_stage(examples):  # what the first stage's own order scores, in the same metrics
        first = evaluate_orders(examples, [range(len(ex.candidates)) for ex in examples], qrels).as_dict()
        out["first_stage"] = first
        out["first_stage_ndcg@10"] = first["ndcg@10"]
    variants = result.variants()
    if variants:
        out["per_exit"] = {
            name: evaluate_orders(examples, orders, qrels).as_dict() for name, orders in variants.items()
        }
    return report, out


def evaluate_ranker(
    ranker: Ranker, examples: Sequence[RankingExample], source: str = "", progress: bool = False
) -> tuple[MetricReport, dict[str, Any]]:
    """Check the labels first (an unlabelled file fails before any scoring), then run and report."""
    qrels_from_examples(examples, source)
    return evaluate_result(examples, ranker.run(examples, progress), source)
