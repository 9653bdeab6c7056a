"""What a new input shape costs in bf16 on the CPU (docs/RESULTS.md, issue 31). oneDNN builds a kernel
for every new shape; a cascade's survivors and a server's micro-batches keep making new ones, and
offline best-of-3 timings hide it.

- ``--mode cascade`` (default): the same 25 SQuAD passages dev questions ranked three times by
  peasi-cascade at its tuned ratios, one call per question, fp32 and bf16;
- ``--mode chunks``: WikiQA test in calls of 8 questions, the same calls three times, then three passes
  of fresh random compositions (bf16, the default ranker);
- ``--mode offline``: WikiQA test's first 80 questions in one call, default and default-cascade (α 0),
  fp32 and bf16.

    python bench/shape_warmup.py --mode cascade
"""

from __future__ import annotations

import argparse
import random
import time

from sieveqa.data.registry import load_dataset
from sieveqa.runtime.policy import load_ranker


def _rate(ranker, chunks) -> float:
    started, pairs = time.perf_counter(), 0
    for chunk in chunks:
        pairs += ranker.run(chunk).n_pairs
    return pairs / (time.perf_counter() - started)


def cascade() -> None:
    examples = [e for e in load_dataset("squad-passages:dev") if e.candidates][:25]
    for precision in ("fp32", "bf16"):
        ranker = load_ranker("peasi-cascade", precision=precision)
        ranker.run(examples[:2])  # warm-up on other questions
        for attempt in (1, 2, 3):
            started = time.perf_counter()
            for example in examples:
                ranker.run([example])
            ms = 1000 * (time.perf_counter() - started) / len(examples)
            print(f"{precision} peasi-cascade (tuned ratios), pass {attempt}: {ms:.0f} ms per question")


def chunks() -> None:
    examples = [e for e in load_dataset("wikiqa:test") if e.candidates]
    ranker = load_ranker("default")
    fixed = [examples[i : i + 8] for i in range(0, len(examples), 8)]
    for attempt in (1, 2, 3):
        rate = _rate(ranker, fixed)
        print(f"{ranker.precision}, the same calls of 8 questions, pass {attempt}: {rate:.0f} pairs/s")
    for seed in range(3):
        shuffled = examples[:]
        random.Random(seed).shuffle(shuffled)
        fresh = [shuffled[i : i + 8] for i in range(0, len(shuffled), 8)]
        print(f"{ranker.precision}, fresh compositions (seed {seed}): {_rate(ranker, fresh):.0f} pairs/s")


def offline() -> None:
    examples = [e for e in load_dataset("wikiqa:test") if e.candidates][:80]
    for precision in ("fp32", "bf16"):
        for name, overrides in (("default", {}), ("default-cascade", {"drop_ratios": 0.0})):
            ranker = load_ranker(name, precision=precision, **overrides)
            ranker.run(examples[:10])
            print(f"{precision} {name}: {_rate(ranker, [examples]):.0f} pairs/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("cascade", "chunks", "offline"), default="cascade")
    {"cascade": cascade, "chunks": chunks, "offline": offline}[parser.parse_args().mode]()


if __name__ == "__main__":
    main()
