"""Evaluating an answer pipeline on a labelled passage benchmark (``squad-passages:test-sentences``,
``wikiqa-passages:test-sentences``): each question's retrieved passages go through the method, and

- answers: P@1 of the chosen sentence; MAP and MRR where the method ranks sentences (not ``peasi``,
  which only picks one), against every correct sentence of the question's passages;
- passages: P@1, MAP and MRR of the reranker's passage order (``peasi``);
- cost: transformer inferences, layer-units, FLOPs and seconds per question (mean, p50, p95).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from sieveqa.data.corpus import IndexedPassage
from sieveqa.data.passage_sets import group_passages
from sieveqa.data.records import Candidate, RankingExample
from sieveqa.evaluation.metrics import evaluate_ranked, qrels_from_examples
from sieveqa.runtime.answer.answerer import Answerer, AnswerRun

__all__ = ["AnswerReport", "evaluate_answers", "passages_of"]


def passages_of(example: RankingExample) -> tuple[list[IndexedPassage], list[list[Candidate]]]:
    """An example's sentence groups as passages (text = sentences joined by spaces), with the
    candidates behind each passage's sentences."""
    passages, members = [], []
    for pid, sents in group_passages(example):
        spans, at = [], 0
        for c in sents:
            spans.append((at, at + len(c.text)))
            at += len(c.text) + 1
        passages.append(
            IndexedPassage(pid, sents[0].doc_id or "", "", " ".join(c.text for c in sents), tuple(spans))
        )
        members.append(sents)
    return passages, members


@dataclass
class AnswerReport:
    """Mean metrics and costs of one method on one benchmark."""

    method: str
    metrics: dict[str, float]
    passage_metrics: dict[str, float] | None
    cost: dict[str, float]
    per_question: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "answers": self.metrics,
            "passages": self.passage_metrics,
            "cost": self.cost,
        }


def _ids(
    run: AnswerRun, members: list[list[Candidate]], index: dict[str, int]
) -> tuple[str | None, list[str] | None]:
    def cand(found: Any) -> str:
        return members[index[found.passage.id]][found.sentence].id

    chosen = cand(run.answers[0]) if run.answers else None
    return chosen, None if run.ranking is None else [cand(f) for f in run.ranking]


def evaluate_answers(
    answerer: Answerer, examples: Sequence[RankingExample], source: str = "", progress: bool = True
) -> AnswerReport:
    """Run ``answerer`` on every example's passages and score what it chose (see module docstring)."""
    qrels = qrels_from_examples(examples, source)
    p_at_1, rankings, passage_rankings, passage_qrels = [], {}, {}, {}
    seconds, inferences, units, flops, rows = [], [], [], [], []
    for ex in tqdm(examples, desc=f"answering ({answerer.method.name})", unit="q", disable=not progress):
        passages, members = passages_of(ex)
        index = {p.id: i for i, p in enumerate(passages)}
        run = answerer.run(ex.question.text, passages)
        chosen, ranking = _ids(run, members, index)
        correct = int(chosen is not None and qrels[ex.qid].get(chosen, 0) > 0)
        p_at_1.append(correct)
        if ranking is not None:
            rankings[ex.qid] = ranking
        if run.passage_scores is not None:
            order = sorted(range(len(passages)), key=lambda i: (-run.passage_scores[i], i))
            passage_rankings[ex.qid] = [passages[i].id for i in order]
            passage_qrels[ex.qid] = {
                p.id: int(any(c.label == 1 for c in m)) for p, m in zip(passages, members, strict=True)
            }
        seconds.append(run.cost.seconds)
        inferences.append(run.inferences)
        units.append(run.cost.layer_units)
        flops.append(run.cost.flops)
        rows.append(
            {
                "qid": ex.qid,
                "chosen": chosen,
                "correct": correct,
                "inferences": run.inferences,
                "seconds": round(run.cost.seconds, 4),
            }
        )
    metrics = {"p@1": float(np.mean(p_at_1)) if p_at_1 else 0.0}
    if rankings:
        ranked = evaluate_ranked({q: qrels[q] for q in rankings}, rankings).mean
        metrics |= {"map": ranked["map"], "mrr": ranked["mrr"]}
    passage_metrics = None
    if passage_rankings:
        mean = evaluate_ranked(passage_qrels, passage_rankings).mean
        passage_metrics = {k: mean[k] for k in ("p@1", "map", "mrr")}
    s = np.asarray(seconds or [0.0])
    cost = {
        "questions": len(examples),
        "inferences_per_question": float(np.mean(inferences or [0])),
        "layer_units_per_question": float(np.mean(units or [0])),
        "gflops_per_question": float(np.mean(flops or [0])) / 1e9,
        "seconds_per_question": float(s.mean()),
        "p50_seconds": float(np.percentile(s, 50)),
        "p95_seconds": float(np.percentile(s, 95)),
    }
    return AnswerReport(answerer.method.name, metrics, passage_metrics, cost, rows)
