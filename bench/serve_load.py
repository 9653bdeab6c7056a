"""Load test of ``sieveqa serve`` (issue 14): each question of a dataset is one POST /rerank of its
candidates, sent by N concurrent clients over loopback; throughput is set against ranking the same
pairs offline, in one call, as ``sieveqa eval`` does.

The offline rate is measured first, in this process, with the model loaded as the server loads it.
Then the server runs in a subprocess and, for each client count, every question is sent ``--rounds``
times (after a warm-up); latency is the client's, from send to parsed answer. Client and server share
the machine's CPUs, which the offline run does not: the client's cost is part of what the ratio shows.

    python bench/serve_load.py --dataset wikiqa:test --clients 1,8,32,64 --out bench/results/serving/load.json
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
from _common import finish, markdown, served

from sieveqa.data.registry import load_dataset
from sieveqa.runtime.policy import load_ranker


def offline_rate(model: str, examples: list, repeats: int, chunk: int | None = None) -> float:
    """Pairs per second ranking every example in one call, or in calls of ``chunk`` questions (the
    best of ``repeats``, after a warm-up)."""
    ranker = load_ranker(model)
    ranker.run(examples[:20])
    step = chunk or len(examples)
    rates = []
    for _ in range(repeats):
        started, pairs = time.perf_counter(), 0
        for i in range(0, len(examples), step):
            pairs += ranker.run(examples[i : i + step]).n_pairs
        rates.append(pairs / (time.perf_counter() - started))
    return max(rates)


def _batches(metrics: str) -> tuple[float, ...]:
    """(micro-batches run, requests in them, seconds the model computed) from a /metrics page."""
    values = dict(re.findall(r"^(sieveqa_batch_\w+) (\S+)$", metrics, re.M))
    names = ("sieveqa_batch_requests_count", "sieveqa_batch_requests_sum", "sieveqa_batch_seconds_sum")
    return tuple(float(values.get(n, 0)) for n in names)


async def load(url: str, bodies: list[dict[str, Any]], clients: int) -> dict[str, Any]:
    """Send every body once with ``clients`` concurrent senders; latency, throughput and status codes."""
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=300) as client:
        before = _batches((await client.get("/metrics")).text)

        async def sender() -> None:
            while not queue.empty():
                body = queue.get_nowait()
                sent = time.perf_counter()
                response = await client.post("/rerank", json=body)
                response.json()
                latencies.append(time.perf_counter() - sent)
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

        started = time.perf_counter()
        await asyncio.gather(*(sender() for _ in range(clients)))
        wall = time.perf_counter() - started
        after = _batches((await client.get("/metrics")).text)
    pairs = sum(len(b["texts"]) for b in bodies)
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    batches, requests, computing = (a - b for a, b in zip(after, before, strict=True))
    return {
        "clients": clients,
        "requests": len(bodies),
        "pairs": pairs,
        "seconds": round(wall, 2),
        "pairs_per_s": round(pairs / wall, 1),
        "requests_per_s": round(len(bodies) / wall, 1),
        "p50_ms": round(cuts[49] * 1000, 1),
        "p99_ms": round(cuts[98] * 1000, 1),
        "p99_over_p50": round(cuts[98] / cuts[49], 2),
        "requests_per_batch": round(requests / batches, 1) if batches else None,
        "model_busy": round(computing / wall, 2),
        "statuses": statuses,
        "5xx": sum(n for code, n in statuses.items() if code >= 500),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="default")
    parser.add_argument("--dataset", default="wikiqa:test")
    parser.add_argument("--clients", default="1,8,32,64")
    parser.add_argument("--repeats", type=int, default=3, help="offline runs (the best counts)")
    parser.add_argument("--rounds", type=int, default=3, help="times each question is sent per client count")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--serve-args", default="", help="more sieveqa serve options, e.g. '--max-wait-ms 10'"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/serving/load.json"))
    args = parser.parse_args()
    examples = [e for e in load_dataset(args.dataset) if e.candidates]
    bodies = [{"query": e.question.text, "texts": [c.text for c in e.candidates]} for e in examples]
    offline = offline_rate(args.model, examples, args.repeats)
    # What batch composition alone costs: the same pairs offline, 16 questions a call, as a served
    # micro-batch at 32 clients holds about.
    chunked = offline_rate(args.model, examples, args.repeats, chunk=16)
    print(f"offline: {offline:.0f} pairs/s ({chunked:.0f} in calls of 16 questions)")
    rows = []
    with served("--model", args.model, *args.serve_args.split(), port=args.port) as url:
        asyncio.run(load(url, bodies[:50], 8))  # warm-up
        for clients in (int(c) for c in args.clients.split(",")):
            row = asyncio.run(load(url, bodies * args.rounds, clients))
            row["of_offline"] = round(row["pairs_per_s"] / offline, 2)
            rows.append(row)
            print(row)
    keys = [
        "clients",
        "pairs_per_s",
        "of_offline",
        "p50_ms",
        "p99_ms",
        "p99_over_p50",
        "requests_per_batch",
        "5xx",
    ]
    print(markdown(rows, keys))
    finish(
        args.out,
        "serve_load",
        {
            "model": args.model,
            "dataset": args.dataset,
            "offline_pairs_per_s": round(offline, 1),
            "offline_16_questions_pairs_per_s": round(chunked, 1),
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
