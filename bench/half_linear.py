"""bf16 on the CPU with the Linear weights stored in bf16 once (``EncoderModel._half_linear_copy``)
against autocast casting the fp32 weights on every call: pairs/s in calls of 1, 16 and all questions of
a dataset, both ways alternating in one process, and the largest score difference between them.

    python bench/half_linear.py --out bench/results/backends/half-linear.json
    python bench/half_linear.py --model peasi-pr --dataset squad-passages:dev --limit 100 \
        --out bench/results/backends/half-linear-passages.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from _common import finish

from sieveqa.data.registry import load_dataset
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.runtime.policy import load_ranker

COPY = EncoderModel._half_linear_copy


def rate(ranker: Any, examples: list, chunk: int, repeats: int) -> float:
    """Best pairs/s of ``repeats`` passes over ``examples`` in calls of ``chunk`` questions."""
    best = 0.0
    for _ in range(repeats):
        started, pairs = time.perf_counter(), 0
        for i in range(0, len(examples), chunk):
            pairs += ranker.run(examples[i : i + chunk]).n_pairs
        best = max(best, pairs / (time.perf_counter() - started))
    return round(best, 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="default")
    parser.add_argument("--dataset", default="wikiqa:test")
    parser.add_argument("--limit", type=int, default=None, help="the first N questions")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results/backends/half-linear.json"))
    args = parser.parse_args()
    examples = [e for e in load_dataset(args.dataset) if e.candidates][: args.limit]
    ranker = load_ranker(args.model, precision="bf16")
    ways = {"bf16 weights once": COPY, "autocast casts per call": lambda self: self}
    scores, rows = {}, []
    for round_ in range(args.rounds):
        for name, how in ways.items():
            EncoderModel._half_linear_copy = how  # type: ignore[method-assign]
            scores[name] = ranker.run(examples).scores  # also the warm-up
            row = {"round": round_ + 1, "way": name}
            for chunk, label in ((1, "calls_of_1"), (16, "calls_of_16"), (len(examples), "one_call")):
                row[label] = rate(ranker, examples, chunk, args.repeats)
            rows.append(row)
            print(row, flush=True)
    EncoderModel._half_linear_copy = COPY  # type: ignore[method-assign]
    a, b = scores.values()
    diff = max(abs(x - y) for sa, sb in zip(a, b, strict=True) for x, y in zip(sa, sb, strict=True))
    payload = {"model": args.model, "dataset": args.dataset, "questions": len(examples)}
    finish(args.out, "half_linear", {**payload, "max_abs_score_diff": diff, "rows": rows})


if __name__ == "__main__":
    main()
