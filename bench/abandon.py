"""Abandoned work after disconnects (issue 42): do requests whose clients hung up still get computed?

A real ``sieveqa serve`` (the default model); ``--clients`` clients each send one /rerank of
``--texts`` texts and hang up after ``--leave-s`` seconds. Then one small /rerank is sent every half
second until it is answered. Reported: the pairs the server scored (``sieveqa_pairs_total``) against
the pairs sent, the batches it ran, how long the small request waited, and the status codes it got.
Scoring every abandoned request would be ``clients x texts`` pairs; dropping them, about the batches
already running when their clients left.

    python bench/abandon.py --out bench/results/serving/abandon.json
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
from _common import finish, served

HERE = Path(__file__).parent


def metric(text: str, name: str) -> float:
    """A counter's (or a histogram's ``_count``) value in Prometheus text."""
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + " "))


async def abandon(url: str, args: argparse.Namespace) -> dict[str, Any]:
    texts = [
        f"Sentence {i} about the lighthouse keeper and the lamp that burns all night."
        for i in range(args.texts)
    ]
    body = {"query": "Who keeps the lighthouse lamp lit?", "texts": texts}
    async with httpx.AsyncClient(base_url=url, timeout=600) as http:
        (await http.post("/rerank", json={"query": "q", "texts": texts[:8]})).raise_for_status()  # warm-up
        before = (await http.get("/metrics")).text

        async def leaver() -> str:
            try:
                r = await asyncio.wait_for(http.post("/rerank", json=body), args.leave_s)
                return str(r.status_code)
            except TimeoutError:
                return "left"

        started = time.monotonic()
        outcomes = await asyncio.gather(*(leaver() for _ in range(args.clients)))
        left_at = time.monotonic()
        statuses: list[int] = []
        while True:
            r = await http.post("/rerank", json={"query": "q", "texts": texts[:4]})
            statuses.append(r.status_code)
            if r.status_code == 200 or time.monotonic() - left_at > args.give_up_s:
                break
            await asyncio.sleep(0.5)
        waited = time.monotonic() - left_at
        await asyncio.sleep(2)  # let a batch that was running finish before reading the counters
        after = (await http.get("/metrics")).text
    scored = metric(after, "sieveqa_pairs_total") - metric(before, "sieveqa_pairs_total") - 4
    batches = metric(after, "sieveqa_batch_pairs_count") - metric(before, "sieveqa_batch_pairs_count") - 1
    return {
        "clients": args.clients,
        "texts": args.texts,
        "leave_s": args.leave_s,
        "outcomes": {o: outcomes.count(o) for o in sorted(set(outcomes))},
        "pairs_sent": args.clients * args.texts,
        "pairs_scored_for_them": int(scored),
        "batches_for_them": int(batches),
        "seconds_sending": round(left_at - started, 1),
        "small_request_waited_s": round(waited, 1),
        "small_request_statuses": {str(s): statuses.count(s) for s in sorted(set(statuses))},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--leave-s", type=float, default=1.0)
    parser.add_argument("--give-up-s", type=float, default=600.0)
    parser.add_argument("--model", default="default")
    parser.add_argument("--port", type=int, default=8768)
    parser.add_argument("--out", type=Path, default=HERE / "results/serving/abandon.json")
    args = parser.parse_args()
    with served("--model", args.model, "--max-texts", str(max(args.texts, 1000)), port=args.port) as url:
        report = asyncio.run(abandon(url, args))
    for key, value in report.items():
        print(f"{key}: {value}")
    finish(args.out, "abandon", {"model": args.model, **report})


if __name__ == "__main__":
    main()
