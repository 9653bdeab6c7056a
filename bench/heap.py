"""What each of the service's heap settings (``sieveqa serve --heap``) costs per /rerank batch (issue 64,
issue 66 item 3): the server's CPU seconds and page faults per request, read from /proc.

For each setting a fresh ``sieveqa serve --heap SETTING`` (the default model, no index) gets a warm-up,
then ``--requests`` POST /rerank requests one after another, each a SQuAD v1.1 dev question with 5-40
of its paragraphs run together and cut at 20-300 words (drawn once with ``--seed``; every setting
gets the same requests in the same order: new batch shapes all along, as a RAG client's). Settings
are run in turn, ``--rounds`` times, so a drift of the machine shows as a spread, not a bias.

    python bench/heap.py --out bench/results/serving/heap-cpu.json
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
from _common import finish, served
from large_request import documents

from sieveqa.serving.settings import HEAP_SETTINGS

TICK = os.sysconf("SC_CLK_TCK")
KEYS = ("cpu_ms_per_request", "wall_ms_per_request", "minor_faults_per_request", "rss_end_mib")


def usage(pid: int) -> tuple[float, int, int]:
    """The process's CPU seconds (user + system), minor and major page faults so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # after the name: state(0) ... minflt(7) cminflt majflt(9) cmajflt utime(11) stime(12)
    return (int(fields[11]) + int(fields[12])) / TICK, int(fields[7]), int(fields[9])


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def requests(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` /rerank bodies of varied sizes (see the module's docstring)."""
    question, pool = documents(600, words=300)
    rng = random.Random(seed)
    bodies = []
    for _ in range(count):
        n, words = rng.randint(5, 40), rng.randint(20, 300)
        texts = [" ".join(d.split()[:words]) for d in rng.sample(pool, n)]
        bodies.append({"query": question, "texts": texts, "truncate": True})
    return bodies


def measure(setting: str, bodies: list[dict[str, Any]], port: int) -> dict[str, Any]:
    pids: list[int] = []
    started_server = served("--heap", setting, port=port, on_start=lambda p: pids.append(p.pid))
    with started_server as url, httpx.Client(timeout=120) as client:
        for body in bodies[:5]:  # warm-up: first calls, caches, the allocator's first growth
            client.post(f"{url}/rerank", json=body).raise_for_status()
        cpu0, minor0, major0 = usage(pids[0])
        started = time.perf_counter()
        for body in bodies:
            client.post(f"{url}/rerank", json=body).raise_for_status()
        wall = time.perf_counter() - started
        cpu1, minor1, major1 = usage(pids[0])
        rss = rss_mib(pids[0])
    n = len(bodies)
    return {
        "setting": setting,
        "cpu_ms_per_request": round(1000 * (cpu1 - cpu0) / n, 1),
        "wall_ms_per_request": round(1000 * wall / n, 1),
        "minor_faults_per_request": round((minor1 - minor0) / n),
        "major_faults": major1 - major0,
        "rss_end_mib": round(rss, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", default=",".join(HEAP_SETTINGS))
    parser.add_argument("--requests", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=66)
    parser.add_argument("--port", type=int, default=8771)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    bodies = requests(args.requests, args.seed)
    runs = []
    for round_ in range(args.rounds):
        for setting in args.settings.split(","):
            runs.append({"round": round_, **measure(setting, bodies, args.port)})
            print(runs[-1], flush=True)
    summary = {}
    for setting in args.settings.split(","):
        mine = [r for r in runs if r["setting"] == setting]
        summary[setting] = {key: statistics.median(r[key] for r in mine) for key in KEYS}
    print(summary)
    finish(args.out, "heap", {"requests": args.requests, "seed": args.seed, "runs": runs, "summary": summary})


if __name__ == "__main__":
    main()
