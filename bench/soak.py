"""Soak ``sieveqa serve`` (issue 28): minutes of mixed load on 127.0.0.1, bounded and self-stopping.

32 clients send /rerank and /answer back to back; a tenth of their requests are cancelled mid-flight
(the client gives up after 10-300 ms and closes the connection), a tenth are malformed (bad JSON,
empty or oversized fields, wrong types, a wrong content type); every minute ``sieveqa index corpus``
appends documents to the index the server answers from. Reported: requests served, 2xx/4xx/5xx
counts, hung requests (no answer within --hang-s), p50/p99 latency of the valid ones, and the
server's RSS at the start (after a warm-up) and the end, sampled every 30 s between.

``--traffic rag`` (issue 42) is a RAG client's instead: nine in ten requests are a /rerank of 5-20
documents of 2,000-20,000 characters, each seen once, half of them with ``truncate: false`` (most of
those refused as too long after their check tokenized them); the rest /answer. Its measure is the RSS
from minute 3 on (``rss_growth_from_3min_pct``).

    python bench/soak.py --seconds 600 --out bench/results/serving/soak.json
    python bench/soak.py --traffic rag --seconds 1200 --out bench/results/serving/soak-rag.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from _common import finish, served

from sieveqa.data.formats import read_documents

HERE = Path(__file__).parent
QUESTIONS = [
    "What protein carries oxygen in octopus blood?",
    "How do glaciers carve valleys?",
    "Who keeps the lighthouse lamp lit?",
    "Why does sourdough rise?",
    "What makes green tea different from black tea?",
    "How do honeybees make honey?",
    "What causes a rainbow?",
    "Who invented the bicycle?",
]
MALFORMED: list[tuple[str, dict[str, Any]]] = [
    ("/rerank", {"content": b"{not json", "headers": {"content-type": "application/json"}}),
    ("/rerank", {"json": {"query": "q", "texts": []}}),
    ("/rerank", {"json": {"query": 3, "texts": ["a"]}}),
    ("/rerank", {"json": {"query": "q", "texts": ["a"] * 5000}}),
    ("/rerank", {"json": {"query": "q", "texts": ["a"], "alpha": 0.5}}),
    ("/answer", {"json": {"question": "   "}}),
    ("/answer", {"json": {"question": "q", "top": 0}}),
    ("/answer", {"content": b'{"question": "q"}', "headers": {"content-type": "text/plain"}}),
    ("/nowhere", {"json": {}}),
]


def rss_kib(pid: int) -> int:
    """The process's resident set size (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Tally:
    def __init__(self) -> None:
        self.status: dict[str, int] = {}
        self.latency: list[float] = []
        self.cancelled = self.hung = self.errors = 0
        self.error_kinds: dict[str, int] = {}

    def count(self, status: int) -> None:
        self.status[str(status)] = self.status.get(str(status), 0) + 1


WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "a",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "they",
    "you",
    "were",
    "her",
    "she",
    "there",
    "been",
    "one",
    "all",
    "we",
    "their",
    "has",
    "would",
    "when",
    "if",
    "so",
    "what",
    "no",
    "more",
    "river",
    "glacier",
    "protein",
    "octopus",
    "lighthouse",
    "honey",
    "rainbow",
    "bicycle",
    "tea",
    "sourdough",
    "valley",
    "lamp",
]


def rag_document(rng: random.Random, serial: int) -> str:
    """A document of 2,000-20,000 characters no other request sends (its serial number leads it)."""
    size, words = rng.randint(2_000, 20_000), [f"doc{serial}"]
    while sum(map(len, words)) + len(words) < size:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:size]


async def client(
    url: str, rng: random.Random, sentences: list[str], stop: float, hang: float, t: Tally, rag: bool = False
) -> None:
    serial = 0
    async with httpx.AsyncClient(base_url=url, timeout=hang) as http:
        while time.monotonic() < stop:
            roll = rng.random()
            if rag:
                serial += 1
                if roll < 0.9:
                    texts = [rag_document(rng, serial * 100 + k) for k in range(rng.randint(5, 20))]
                    body = {"query": rng.choice(QUESTIONS), "texts": texts, "truncate": rng.random() < 0.5}
                    path, kwargs = "/rerank", {"json": body}
                else:
                    path, kwargs = "/answer", {"json": {"question": rng.choice(QUESTIONS)}}
                roll = 1.0  # neither malformed nor given up
            elif roll < 0.1:
                path, kwargs = rng.choice(MALFORMED)
            elif roll < 0.55:
                texts = rng.sample(sentences, rng.randint(10, 40))
                path, kwargs = "/rerank", {"json": {"query": rng.choice(QUESTIONS), "texts": texts}}
            else:
                path, kwargs = (
                    "/answer",
                    {"json": {"question": rng.choice(QUESTIONS), "top": rng.randint(1, 3)}},
                )
            cancel = 0.1 <= roll < 0.2  # a tenth of the valid requests are given up mid-flight
            started = time.monotonic()
            try:
                if cancel:
                    await asyncio.wait_for(http.post(path, **kwargs), rng.uniform(0.01, 0.3))
                    t.count(200)  # answered before the client gave up
                    continue
                response = await http.post(path, **kwargs)
            except TimeoutError:
                t.cancelled += 1
                continue
            except httpx.TimeoutException:
                t.hung += 1
                continue
            except httpx.TransportError as err:
                t.errors += 1
                t.error_kinds[type(err).__name__] = t.error_kinds.get(type(err).__name__, 0) + 1
                continue
            t.count(response.status_code)
            if response.status_code == 200:
                t.latency.append(time.monotonic() - started)


async def appender(
    index: Path, docs: list[dict[str, str]], stop: float, every: float, log: list[dict]
) -> None:
    """``sieveqa index corpus`` into the served index every ``every`` seconds."""
    sieveqa = str(Path(sys.executable).parent / "sieveqa")
    round_ = 0
    while time.monotonic() + every < stop:
        await asyncio.sleep(every)
        round_ += 1
        batch = Path(index).parent / f"add-{round_}.jsonl"
        batch.write_text("".join(json.dumps({**d, "id": f"{d['id']}-{round_}"}) + "\n" for d in docs))
        started = time.monotonic()
        proc = await asyncio.create_subprocess_exec(
            sieveqa, "index", "corpus", "--input", str(batch), "--out", str(index),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        log.append(
            {"round": round_, "exit_code": await proc.wait(), "seconds": round(time.monotonic() - started, 1)}
        )


async def soak(url: str, pid: int, index: Path, args: argparse.Namespace) -> dict[str, Any]:
    sentences = [
        s for d in read_documents("demo") for s in d.text.replace("\n", " ").split(". ") if s.strip()
    ]
    docs = [{"id": d.id, "title": d.title, "text": d.text} for d in read_documents("demo")[:2]]
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:  # warm-up: both endpoints
        for _ in range(3):
            (await http.post("/answer", json={"question": QUESTIONS[0]})).raise_for_status()
            (await http.post("/rerank", json={"query": "q", "texts": sentences[:20]})).raise_for_status()
    rss = [{"second": 0, "rss_mib": round(rss_kib(pid) / 1024, 1)}]
    tally, appends, started = Tally(), [], time.monotonic()
    stop = started + args.seconds

    async def sample() -> None:
        while time.monotonic() + 30 < stop:
            await asyncio.sleep(30)
            rss.append(
                {"second": round(time.monotonic() - started), "rss_mib": round(rss_kib(pid) / 1024, 1)}
            )

    rngs = [random.Random(args.seed * 1000 + i) for i in range(args.clients)]
    rag = args.traffic == "rag"
    await asyncio.gather(
        *(client(url, r, sentences, stop, args.hang_s, tally, rag) for r in rngs),
        appender(index, docs, stop, args.append_every, appends),
        sample(),
    )
    rss.append({"second": round(time.monotonic() - started), "rss_mib": round(rss_kib(pid) / 1024, 1)})
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        health = (await http.get("/health")).status_code
        server_counts = {
            line.split("{", 1)[1].split("}", 1)[0]: float(line.split()[-1])
            for line in (await http.get("/metrics")).text.splitlines()
            if line.startswith("sieveqa_requests_total{")
        }
        after = (
            await http.post("/answer", json={"question": "Who keeps the lighthouse lamp lit?"})
        ).status_code
    lat = sorted(tally.latency)
    served_ok = sum(v for k, v in tally.status.items() if k.startswith("2"))
    return {
        "seconds": args.seconds,
        "clients": args.clients,
        "requests_answered": sum(tally.status.values()),
        "served_2xx": served_ok,
        "status_counts": dict(sorted(tally.status.items())),
        "responses_4xx": sum(v for k, v in tally.status.items() if k.startswith("4")),
        "responses_5xx": sum(v for k, v in tally.status.items() if k.startswith("5")),
        "cancelled_by_client": tally.cancelled,
        "hung": tally.hung,
        "transport_errors": tally.errors,
        "transport_error_kinds": tally.error_kinds,
        "p50_ms": round(1000 * statistics.median(lat), 1) if lat else None,
        "p99_ms": round(1000 * lat[int(0.99 * (len(lat) - 1))], 1) if lat else None,
        "rss_start_mib": rss[0]["rss_mib"],
        "rss_end_mib": rss[-1]["rss_mib"],
        "rss_growth_pct": round(100 * (rss[-1]["rss_mib"] / rss[0]["rss_mib"] - 1), 1),
        "rss_growth_from_3min_pct": _growth_from(rss, 180),
        "rss_samples": rss,
        "appends": appends,
        "server_requests": server_counts,
        "health_after": health,
        "answer_after": after,
    }


def _growth_from(rss: list[dict[str, float]], second: float) -> float | None:
    """RSS growth from the first sample at or after ``second`` to the last, in percent."""
    later = [r for r in rss if r["second"] >= second]
    return round(100 * (later[-1]["rss_mib"] / later[0]["rss_mib"] - 1), 1) if len(later) > 1 else None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--traffic", choices=("mixed", "rag"), default="mixed", help="see the docstring")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--append-every", type=float, default=60)
    parser.add_argument(
        "--hang-s", type=float, default=120, help="a valid request unanswered this long hangs"
    )
    parser.add_argument("--model", default="default")
    parser.add_argument("--heap", default=None, help="the server's --heap setting (default: its own)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--port", type=int, default=8767)
    parser.add_argument("--out", type=Path, default=HERE / "results/serving/soak.json")
    args = parser.parse_args()
    sieveqa = str(Path(sys.executable).parent / "sieveqa")
    procs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index"
        subprocess.run([sieveqa, "index", "corpus", "--input", "demo", "--out", str(index)], check=True)
        heap = ["--heap", args.heap] if args.heap else []
        with served(
            "--model", args.model, "--index", str(index), *heap, port=args.port, on_start=procs.append
        ) as url:
            report = asyncio.run(soak(url, procs[0].pid, index, args))
    print(json.dumps({k: v for k, v in report.items() if k not in ("rss_samples", "appends")}, indent=2))
    finish(args.out, "soak", {"model": args.model, "traffic": args.traffic, "heap": args.heap, **report})


if __name__ == "__main__":
    main()
