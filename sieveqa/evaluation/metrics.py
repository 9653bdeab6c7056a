"""Ranking metrics through pytrec_eval (trec_eval's own code): MAP, MRR, P@1, nDCG@10, HITS@k.

Runs are ranked lists, not raw scores: sieveqa turns each ranking into strictly decreasing scores
before evaluation, so trec_eval's tie-breaking (by document id) can never reorder what a ranker
decided, and candidates a cascade dropped early keep the rank it gave them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytrec_eval

from sieveqa.data.records import RankingExample, score_order
from sieveqa.errors import DataFormatError

HITS_AT = (1, 3, 5, 10)
_MEASURES = {
    "map",
    "recip_rank",
    "P.1",
    "ndcg_cut.10",
    "recall.100",
    "success." + ",".join(map(str, HITS_AT)),
}
_NAMES = {
    "map": "map",
    "recip_rank": "mrr",
    "P_1": "p@1",
    "ndcg_cut_10": "ndcg@10",
    "recall_100": "recall@100",
}
_NAMES.update({f"success_{k}": f"hits@{k}" for k in HITS_AT})
#: Every metric reported; ``mrr@10`` and ``recall@100`` are the passage-ranking ones (BEIR's), where the
#: judged documents go beyond the candidates.
METRICS = ("map", "mrr", "p@1", "ndcg@10", *(f"hits@{k}" for k in HITS_AT), "mrr@10", "recall@100")


@dataclass
class MetricReport:
    """Mean metrics over questions, and the per-question values they average."""

    mean: dict[str, float]
    per_question: dict[str, dict[str, float]] = field(repr=False)

    @property
    def n_questions(self) -> int:
        return len(self.per_question)

    def as_dict(self, digits: int = 4) -> dict[str, float]:
        return {k: round(v, digits) for k, v in self.mean.items()}


def qrels_from_examples(
    examples: Sequence[RankingExample], source: str = "", to_tune: bool = False
) -> dict[str, dict[str, int]]:
    """Relevance judgements of labelled examples; an unlabelled candidate is a DataFormatError that
    names ``source`` (the dataset), the question and the candidate. ``to_tune``: settings are chosen
    on them, so a set with no correct candidate at all (every metric 0) is refused too."""
    qrels: dict[str, dict[str, int]] = {}
    for ex in examples:
        judged = dict(ex.judged or {})
        for cand in ex.candidates:
            if cand.label is None:
                where = f"{source}: " if source else ""
                raise DataFormatError(
                    f"{where}question {ex.qid!r}, candidate {cand.id!r} has no 'label'; metrics need a "
                    "label (0 or 1) on every candidate (to rank unlabelled questions use `sieveqa rank`)"
                )
            judged[cand.id] = int(cand.label)
        qrels[ex.qid] = judged
    if to_tune and not any(label > 0 for judged in qrels.values() for label in judged.values()):
        raise DataFormatError(
            f"{source or 'the dev set'}: no question has a correct candidate (label 1), so every "
            "metric is 0 and nothing can be tuned on it"
        )
    return qrels


def evaluate_ranked(
    qrels: Mapping[str, Mapping[str, int]], rankings: Mapping[str, Sequence[str]]
) -> MetricReport:
    """Evaluate ranked candidate-id lists (best first) against ``qrels``.

    Every question in ``qrels`` counts; a question with no correct candidate scores 0 everywhere
    (choose which questions to include through the dataset name, e.g. ``wikiqa:test`` vs ``-raw``).
    """
    missing = [q for q in qrels if q not in rankings]
    if missing:
        raise ValueError(f"{len(missing)} question(s) have no ranking, e.g. {missing[0]!r}")
    run = {}
    for qid in qrels:
        ranked = rankings[qid]
        if len(set(ranked)) != len(ranked):
            raise ValueError(f"question {qid!r}: a candidate id appears twice in its ranking")
        n = len(ranked)
        run[qid] = {cid: float(n - i) for i, cid in enumerate(ranked)}
    # trec_eval ignores a question with no judged-relevant candidate; sieveqa counts it as 0 instead.
    evaluator = pytrec_eval.RelevanceEvaluator({q: dict(j) for q, j in qrels.items()}, _MEASURES)
    raw = evaluator.evaluate(run)
    per_question = {}
    for qid in qrels:
        values = raw.get(qid)
        if values:
            per_question[qid] = {_NAMES[k]: float(v) for k, v in values.items() if k in _NAMES}
            rr = per_question[qid]["mrr"]
            per_question[qid]["mrr@10"] = rr if rr >= 0.1 else 0.0  # the first right one within 10
        else:
            per_question[qid] = dict.fromkeys(METRICS, 0.0)
    mean = {m: sum(v[m] for v in per_question.values()) / max(len(per_question), 1) for m in METRICS}
    return MetricReport(mean=mean, per_question=per_question)


def evaluate_orders(
    examples: Sequence[RankingExample],
    orders: Sequence[Sequence[int]],
    qrels: dict[str, dict[str, int]] | None = None,
) -> MetricReport:
    """Evaluate one ranking per example, given as candidate indices best first."""
    if len(examples) != len(orders):
        raise ValueError(f"{len(examples)} examples but {len(orders)} rankings")
    rankings = {
        ex.qid: [ex.candidates[i].id for i in order] for ex, order in zip(examples, orders, strict=True)
    }
    return evaluate_ranked(qrels if qrels is not None else qrels_from_examples(examples), rankings)


def evaluate_scores(examples: Sequence[RankingExample], scores: Sequence[Sequence[float]]) -> MetricReport:
    """Evaluate one score per candidate (higher is better; ties keep the input order)."""
    if len(examples) != len(scores):
        raise ValueError(f"{len(examples)} examples but {len(scores)} score lists")
    for ex, sc in zip(examples, scores, strict=True):
        if len(sc) != len(ex.candidates):
            raise ValueError(f"question {ex.qid!r}: {len(ex.candidates)} candidates but {len(sc)} scores")
    return evaluate_orders(examples, [score_order([float(x) for x in sc]) for sc in scores])
