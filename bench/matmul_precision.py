"""Dense matrix-product speed of this CPU in fp32 and bf16 (does bf16 inference pay off here?).

python bench/matmul_precision.py --out bench/results/matmul_precision.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from sieveqa.evaluation.provenance import run_info
from sieveqa.io import atomic_write_json


def gflops(n: int, dtype: torch.dtype, repeats: int) -> float:
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    a @ b  # warm-up: oneDNN picks its kernel on the first call
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/results/matmul_precision.json"))
    args = parser.parse_args()
    rows = {
        str(dt).split(".")[-1]: round(gflops(args.size, dt, args.repeats), 2)
        for dt in (torch.float32, torch.bfloat16)
    }
    result = {
        "bench": "matmul_precision",
        **run_info(f"python bench/matmul_precision.py --size {args.size} --repeats {args.repeats}"),
        "size": args.size,
        "gflops": rows,
        "bf16_over_fp32": round(rows["bfloat16"] / rows["float32"], 4),
    }
    atomic_write_json(args.out, result)
    print(result)


if __name__ == "__main__":
    main()
