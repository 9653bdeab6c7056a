"""What a new input shape costs in bf16 on the CPU, and what bucketed batch shapes save (issues 31
and 46). oneDNN builds a kernel for every new shape; a cascade's survivors and a server's
micro-batches keep making new ones, and offline best-of-3 timings hide it.

Each setting runs in a fresh process (the kernels built stay for the process's life), three passes
over the same inputs; the first pass pays for its shapes, the later ones do not:

- ``wikiqa``: WikiQA test in calls of 8 questions with the default ranker;
- ``cascade``: 25 SQuAD passages dev questions ranked by peasi-cascade at its tuned ratios, one call
  per question;
- for each, batch shapes exact and bucketed (``sieveqa.batching``), and bucketed after a
  ``warm_up`` at load (what ``sieveqa serve`` does), in bf16; scores compared across the settings.

    python bench/shape_warmup.py --out bench/results/shapes/bf16.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import finish, markdown

SETTINGS = {"exact": (False, False), "buckets": (True, False), "buckets+warm-up": (True, True)}


def one(mode: str, setting: str, precision: str) -> dict[str, Any]:
    """Three passes of ``mode`` at ``setting`` in this process: ms per call, and the last scores."""
    from sieveqa.data.registry import load_dataset
    from sieveqa.runtime.policy import load_ranker

    buckets, warm = SETTINGS[setting]
    if mode == "wikiqa":
        examples = [e for e in load_dataset("wikiqa:test") if e.candidates]
        calls = [examples[i : i + 8] for i in range(0, len(examples), 8)]
        ranker = load_ranker("default", precision=precision)
        model = ranker
    else:
        examples = [e for e in load_dataset("squad-passages:dev") if e.candidates][:25]
        calls = [[e] for e in examples]
        ranker = load_ranker("peasi-cascade", precision=precision)
        model = ranker.model
    model.buckets = buckets
    started = time.perf_counter()
    shapes = model.warm_up() if warm else 0
    warm_s = time.perf_counter() - started
    passes, scores = [], []
    for _ in range(3):
        started, pairs, scores = time.perf_counter(), 0, []
        for call in calls:
            result = ranker.run(call)
            pairs += result.n_pairs
            scores += [s for group in result.scores for s in group]
        seconds = time.perf_counter() - started
        passes.append(
            {
                "ms_per_call": round(1000 * seconds / len(calls), 1),
                "pairs_per_second": round(pairs / seconds, 1),
            }
        )
    return {"mode": mode, "setting": setting, "precision": model.precision, "warm_up_shapes": shapes,
            "warm_up_seconds": round(warm_s, 2), "passes": passes, "scores": scores}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="wikiqa,cascade")
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--one", nargs=2, metavar=("MODE", "SETTING"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=Path("bench/results/shapes/bf16.json"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*args.one, args.precision)))
        return
    runs = []
    for mode in args.modes.split(","):
        exact: list[float] | None = None
        for setting in args.settings.split(","):
            command = [sys.executable, __file__, "--one", mode, setting, "--precision", args.precision]
            run = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
            scores = run.pop("scores")
            exact = exact if exact is not None else scores
            run["max_score_difference_to_first_setting"] = max(
                abs(a - b) for a, b in zip(scores, exact, strict=True)
            )
            first, warm = run["passes"][0]["ms_per_call"], min(p["ms_per_call"] for p in run["passes"][1:])
            run["first_over_warm"] = round(first / warm, 3)
            runs.append(run)
            ratio, shapes, spent = run["first_over_warm"], run["warm_up_shapes"], run["warm_up_seconds"]
            print(f"{mode} {setting}: first pass {first} ms a call, warm {warm}, ratio {ratio}, "
                  f"warm-up {shapes} shapes in {spent} s", flush=True)  # fmt: skip
    keys = [
        "mode",
        "setting",
        "first_over_warm",
        "warm_up_shapes",
        "warm_up_seconds",
        "max_score_difference_to_first_setting",
    ]
    print(markdown(runs, keys))
    finish(args.out, "shape_warmup", {"precision": args.precision, "runs": runs})


if __name__ == "__main__":
    main()
