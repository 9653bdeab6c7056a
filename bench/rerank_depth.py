"""What reranking fewer passages costs PEASI, read offline from a ``peasi_choice.py cache`` (issue 66).

PEASI's passage reranker reads every retrieved passage (20 by default): most of an answer's time. A
cheaper policy reranks BM25's first ``K`` and goes on to the rest only when none of them scores at
least ``tau`` (the reranker is point-wise: a passage's score does not depend on the others read). With
EASI reading the best passage (read 1), the answer is that passage's best sentence; the cache holds
the sentences of the ``--read`` best passages of the full ranking, so a policy that picks a passage
outside them has an unknown answer, counted wrong and reported (``unknown``).

    python bench/rerank_depth.py --cache runs/judge-minilm-kd/cache-dev-both.cache.json \
        --out bench/results/latency/rerank-depth-dev.json

Each row: ``K``, ``tau`` (``-inf``: always stop at K, BM25's top K only), answer P@1 over the answerable
questions, how many were unknown, and the mean number of passages reranked a question.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from _common import finish, markdown

DEPTHS = (5, 8, 10, 12, 15)
TAUS = (-math.inf, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0)


def answer(row: dict[str, Any], depth: int, tau: float) -> tuple[bool | None, int]:
    """Whether the policy's answer is right (None: not in the cache) and the passages it reranked."""
    scores = row["retrieved"]
    first = scores[:depth]
    read = range(len(first)) if first and max(first) >= tau else range(len(scores))
    chosen = max(read, key=lambda i: (scores[i], -i))
    mine = [c for c in row["candidates"] if c["retrieved_at"] == chosen]
    if not mine:
        return None, len(read)
    return max(mine, key=lambda c: c["in_passage"])["right"], len(read)


def table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every policy of the grid, and reranking everything (``K`` = all)."""
    answerable = [r for r in rows if r["answerable"] and r["retrieved"]]
    out = []
    for depth, tau in [(None, math.inf)] + [(k, t) for k in DEPTHS for t in TAUS]:
        got = [answer(r, depth or len(r["retrieved"]), tau) for r in answerable]
        right = sum(1 for ok, _ in got if ok)
        out.append({
            "K": depth or "all", "tau": tau if math.isfinite(tau) else ("-inf" if tau < 0 else "inf"),
            "p@1": round(100 * right / max(len(got), 1), 2),
            "unknown": sum(1 for ok, _ in got if ok is None),
            "passages": round(sum(n for _, n in got) / max(len(got), 1), 2),
        })  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True, help="a peasi_choice.py cache")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    cache = json.loads(args.cache.read_text())
    rows = cache["questions"]
    if rows and "retrieved" not in rows[0]:
        raise SystemExit(f"{args.cache}: made before caches kept every retrieved passage's score; remake it")
    out = table(rows)
    print(markdown(out, ["K", "tau", "p@1", "unknown", "passages"]))
    finish(args.out, "rerank_depth", {"cache": str(args.cache), "models": cache["models"], "rows": out})


if __name__ == "__main__":
    main()
