"""A reranker on passage sets in BEIR's format (issue 65): BM25's top 100 reranked, nDCG@10, with the
ways to read a long passage and to keep the first stage's judgement, each measured on the same
scores.

For each ``--reading`` (``trunc:N``: the first N tokens of query and passage; ``win:N``: windows of
N tokens a quarter overlapping, the passage's best window) the model scores every candidate of every
``--dataset`` once; then every fusion with the first stage is read off those scores: the model alone,
BM25 alone, ``rrf:W`` (weighted reciprocal ranks, the first stage's rank as given) and ``interp:W``
(min-max normalised scores, BM25's own over the corpus; and BM25 over the candidate list alone, what
a client that sends no scores gets), for W in ``--weights``.

    python bench/passage_rerank.py --dataset wikiqa-beir:dev --dataset beir:runs/beir/own-files:dev \\
        --reading trunc:128,trunc:256,win:128 --out bench/results/passages/dev-default.json
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import finish, markdown

from sieveqa.data.records import RankingExample
from sieveqa.data.registry import load_dataset
from sieveqa.evaluation.metrics import evaluate_scores
from sieveqa.models.zoo import load_model
from sieveqa.runtime.answer.fusion import Fusion, lexical_scores

KEYS = ("ndcg@10", "mrr@10", "recall@100")


def reading_scores(
    model: Any, examples: list[RankingExample], reading: str
) -> tuple[list[np.ndarray], float]:
    """Every candidate's score under ``reading`` (``trunc:N`` or ``win:N``), and pairs a second."""
    how, _, tokens = reading.partition(":")
    model.config = dataclasses.replace(model.config, max_length=int(tokens))
    questions = [ex.question.text for ex in examples for _ in ex.candidates]
    texts = [c.text for ex in examples for c in ex.candidates]
    started = time.perf_counter()
    matrix, _ = model.score_matrix(questions, texts, progress=True, last_only=True, windows=how == "win")
    rate = len(texts) / (time.perf_counter() - started)
    flat, out, at = matrix[:, 0].numpy(), [], 0
    for ex in examples:
        out.append(flat[at : at + len(ex.candidates)])
        at += len(ex.candidates)
    return out, rate


def first_stage_scores(examples: list[RankingExample]) -> list[np.ndarray]:
    """The first stage's scores where the data has them, else its order (higher first)."""
    return [
        np.array(
            [c.retrieval_score if c.retrieval_score is not None else -i for i, c in enumerate(ex.candidates)],
            dtype=float,
        )
        for ex in examples
    ]


def fused_rows(
    examples: list[RankingExample], model: list[np.ndarray], weights: list[float]
) -> list[dict[str, Any]]:
    first = first_stage_scores(examples)
    order = [-np.arange(len(ex.candidates), dtype=float) for ex in examples]  # the rank as given
    among = [np.array(lexical_scores(ex.question.text, [c.text for c in ex.candidates])) for ex in examples]
    rows = [{"fusion": "model alone", **evaluate_scores(examples, model).as_dict()}]
    rows.append({"fusion": "first stage alone", **evaluate_scores(examples, first).as_dict()})
    for w in weights:
        for method, lexical, suffix in (
            ("rrf", order, ""),
            ("interp", first, ""),
            ("interp", among, " (BM25 of the list)"),
        ):
            fusion = Fusion(method, w)
            fused = [fusion.combine(m.tolist(), x.tolist()) for m, x in zip(model, lexical, strict=True)]
            rows.append({"fusion": f"{fusion}{suffix}", **evaluate_scores(examples, fused).as_dict()})
    return [{"fusion": r["fusion"], **{k: r[k] for k in KEYS}} for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--dataset", action="append", required=True)
    parser.add_argument("--reading", default="trunc:128,trunc:256,win:128")
    parser.add_argument("--weights", default="0.1,0.2,0.3,0.5,0.7")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    model = load_model(args.model).configure(precision=args.precision)
    weights = [float(w) for w in args.weights.split(",")]
    results: dict[str, Any] = {}
    for name in args.dataset:
        examples = load_dataset(name)
        results[name] = {}
        for reading in args.reading.split(","):
            scores, rate = reading_scores(model, examples, reading)
            rows = fused_rows(examples, scores, weights)
            results[name][reading] = {"pairs_per_second": round(rate, 1), "rows": rows}
            print(
                f"\n{name}, {reading} ({rate:.0f} pairs/s)\n" + markdown(rows, ["fusion", *KEYS]), flush=True
            )
    finish(
        args.out, "passage-rerank", {"model": args.model, "precision": model.precision, "results": results}
    )


if __name__ == "__main__":
    main()
