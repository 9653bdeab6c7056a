"""Sentence splitting time against text length (issue 42): pysbd's time grows with the square of its
input, so ``sieveqa.data.sentences`` gives it long texts in blocks. Times ``_pysbd`` on generated text,
with sentence breaks (15 words each) and without any, at each size.

    python bench/split_speed.py --out bench/results/sentence_split/speed.json
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from _common import finish

from sieveqa.data.sentences import _pysbd

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa"]


def text(size: int, breaks: bool, rng: random.Random) -> str:
    if not breaks:
        return " ".join(rng.choice(WORDS) for _ in range(size // 6))
    parts, n = [], 0
    while n < size:
        parts.append(" ".join(rng.choice(WORDS) for _ in range(15)).capitalize() + ".")
        n += len(parts[-1]) + 1
    return " ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,40000,160000,1000000")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = []
    for breaks in (True, False):
        for size in map(int, args.sizes.split(",")):
            t = text(size, breaks, random.Random(0))
            started = time.perf_counter()
            pieces = len(_pysbd(t))
            rows.append({"chars": len(t), "sentence_breaks": breaks, "pieces": pieces,
                         "seconds": round(time.perf_counter() - started, 2)})  # fmt: skip
            print(rows[-1], flush=True)
    finish(args.out, "split_speed", {"rows": rows})


if __name__ == "__main__":
    main()
