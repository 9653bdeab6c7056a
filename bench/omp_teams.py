"""Why the service lost a third of its throughput on 2 cores: a second thread that has once run a
PyTorch kernel keeps its own OpenMP team, and with more OpenMP threads than CPUs GNU OpenMP stops
spinning between parallel regions, so every kernel wakes sleeping threads.

Ranks WikiQA test questions in calls of ``--chunk``, in this thread, first alone, then after another
thread (still alive, idle) ran two small kernels; reports pairs/s and each busy thread's CPU share.

    python bench/omp_teams.py --out bench/results/serving/omp-teams.json
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import torch
from _common import finish

from sieveqa.data.registry import load_dataset
from sieveqa.runtime.policy import load_ranker


def measure(ranker: Any, examples: list, chunk: int) -> dict[str, Any]:
    """Pairs/s over ``examples`` in calls of ``chunk`` questions, and the CPU share of the busiest threads."""
    process = psutil.Process(os.getpid())
    before = {t.id: t.user_time + t.system_time for t in process.threads()}
    started, pairs = time.perf_counter(), 0
    for i in range(0, len(examples), chunk):
        pairs += ranker.run(examples[i : i + chunk]).n_pairs
    wall = time.perf_counter() - started
    after = {t.id: t.user_time + t.system_time for t in process.threads()}
    shares = sorted(((after[k] - before.get(k, 0.0)) / wall for k in after), reverse=True)
    return {"pairs_per_s": round(pairs / wall, 1), "busiest_threads_cpu": [round(s, 2) for s in shares[:3]]}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="default")
    parser.add_argument("--questions", type=int, default=120)
    parser.add_argument("--chunk", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results/serving/omp-teams.json"))
    args = parser.parse_args()
    examples = [e for e in load_dataset("wikiqa:test") if e.candidates][: args.questions]
    ranker = load_ranker(args.model)
    ranker.run(examples[:20])
    rows = [{"threads_with_a_team": 1, **measure(ranker, examples, args.chunk)} for _ in range(args.repeats)]
    idle = threading.Event()

    def other() -> None:  # what the service's loader or a second worker did once
        torch.ones(2000, 2000).add_(1)
        _ = torch.randn(500, 500) @ torch.randn(500, 500)
        idle.wait()

    threading.Thread(target=other, daemon=True).start()
    time.sleep(1)
    rows += [{"threads_with_a_team": 2, **measure(ranker, examples, args.chunk)} for _ in range(args.repeats)]
    idle.set()
    for row in rows:
        print(row)
    finish(args.out, "omp_teams", {"model": args.model, "chunk": args.chunk, "rows": rows})


if __name__ == "__main__":
    main()
