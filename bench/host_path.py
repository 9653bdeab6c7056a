"""The host path alone (issue 46): pairs per second of everything a ranking call does except the
model's arithmetic, with the body's forward replaced by a no-op (embeddings are a broadcast zero
tensor, each layer returns its input; the small heads still run). On a GPU this path is what feeds the
card: a GPU check found sieveqa and sentence-transformers both capped near 12k pairs/s whatever the
batch, 2% of an H200, so the bound is here, not in the model.

Paths, each on the same questions, best of ``--repeats`` passes after a warm-up:

- ``tokenize``: the featurizer alone (the Rust tokenizer and the pair rows), every text new;
- ``rank-cold``: ``Ranker.run`` as ``sieveqa rank`` calls it (tokenize, batch, pad, score, regroup),
  every text new (the token cache and the fast tokenizer's word cache emptied before each pass);
- ``rank``: the same with the texts' token ids cached (``sieveqa.tokenizing``: what a second pass,
  or a service reranking passages it has seen, gets);
- ``eval``: ``rank`` plus the metrics, as ``sieveqa eval`` reports them;
- ``cascade``: ``default-cascade`` at its tuned drop ratios (per-row states, pruning per exit);
- ``service``: ``sieveqa serve``'s /rerank over loopback, one request per question, ``--clients``
  concurrent clients in this process (the client's work is on the same cores).

    python bench/host_path.py --dataset wikiqa:test --out bench/results/host-path/wikiqa.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from _common import finish, markdown, served

from sieveqa.data.registry import load_dataset
from sieveqa.encoder import SteppableEncoder
from sieveqa.evaluation.report import evaluate_result
from sieveqa.runtime.policy import load_ranker


@contextlib.contextmanager
def no_forward() -> Iterator[None]:
    """The body's arithmetic replaced by a no-op for the block."""
    embed, layer = SteppableEncoder.embed, SteppableEncoder.run_layer

    def zero_embed(
        self: SteppableEncoder, input_ids: torch.Tensor, *args: Any, **kwargs: Any
    ) -> torch.Tensor:
        return torch.zeros(1, 1, self.hidden_size, device=input_ids.device).expand(*input_ids.shape, -1)

    SteppableEncoder.embed = zero_embed  # type: ignore[method-assign]
    SteppableEncoder.run_layer = lambda self, index, hidden, *args, **kwargs: hidden  # type: ignore[method-assign]
    try:
        yield
    finally:
        SteppableEncoder.embed, SteppableEncoder.run_layer = embed, layer  # type: ignore[method-assign]


def best_rate(call: Callable[[], int], repeats: int) -> float:
    """Pairs per second of ``call`` (which returns its pairs): the best of ``repeats`` after a warm-up."""
    call()
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        pairs = call()
        rates.append(pairs / (time.perf_counter() - started))
    return max(rates)


def service_rate(model: str, examples: list, clients: int, repeats: int) -> tuple[float, float]:
    """/rerank pairs per second over loopback, every question once per pass, ``clients`` at a time, to
    ``sieveqa serve`` in a process of its own (its forward a no-op too); and pairs per CPU-second the
    server spent (its own cost, whatever the client's: the client shares the cores)."""
    import httpx
    import psutil

    bodies = [{"query": e.question.text, "texts": [c.text for c in e.candidates]} for e in examples]
    pairs = sum(len(b["texts"]) for b in bodies)
    server: list[psutil.Process] = []

    async def one_pass(url: str) -> int:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        for body in bodies:
            queue.put_nowait(body)
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=300) as client:

            async def sender() -> None:
                while not queue.empty():
                    (await client.post("/rerank", json=queue.get_nowait())).raise_for_status()

            await asyncio.gather(*(sender() for _ in range(clients)))
        return pairs

    program = [sys.executable, __file__, "--serve"]
    with served(
        "--model", model, program=program, on_start=lambda p: server.append(psutil.Process(p.pid))
    ) as url:
        rate = best_rate(lambda: asyncio.run(one_pass(url)), repeats)
        before = sum(server[0].cpu_times()[:2])
        asyncio.run(one_pass(url))
        return rate, pairs / (sum(server[0].cpu_times()[:2]) - before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="wikiqa:test")
    parser.add_argument("--model", default="default")
    parser.add_argument("--cascade", default="default-cascade")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paths", default="tokenize,rank-cold,rank,eval,cascade,service")
    parser.add_argument("--out", type=Path, default=Path("bench/results/host-path/wikiqa.json"))
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the service's process
    args, rest = parser.parse_known_args()
    if args.serve:
        from sieveqa.cli import app

        with no_forward():
            app(["serve", *rest])
        return
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    examples = [e for e in load_dataset(args.dataset) if e.candidates]
    pairs = sum(len(e.candidates) for e in examples)
    ranker = load_ranker(args.model, precision=args.precision)
    cascade = load_ranker(args.cascade, precision=args.precision)
    model = ranker  # a cross-encoder is its own ranker
    questions = [e.question.text for e in examples for _ in e.candidates]
    texts = [c.text for e in examples for c in e.candidates]

    def cold(call: Callable[[], int]) -> int:
        model.featurizer.forget()
        return call()

    def eval_call() -> int:
        result = ranker.run(examples)
        evaluate_result(examples, result, args.dataset)
        return result.n_pairs

    repeats = args.repeats
    paths: dict[str, Callable[[], float | tuple[float, float]]] = {
        "tokenize": lambda: best_rate(
            lambda: cold(lambda: len(model.featurize(questions, texts))), args.repeats
        ),
        "rank-cold": lambda: best_rate(lambda: cold(lambda: ranker.run(examples).n_pairs), repeats),
        "rank": lambda: best_rate(lambda: ranker.run(examples).n_pairs, args.repeats),
        "eval": lambda: best_rate(eval_call, args.repeats),
        "cascade": lambda: best_rate(lambda: cascade.run(examples).n_pairs, args.repeats),
        "service": lambda: service_rate(args.model, examples, args.clients, args.repeats),
    }
    rows = []
    with no_forward():
        for name in args.paths.split(","):
            rate, per_cpu = (lambda r: r if isinstance(r, tuple) else (r, None))(paths[name]())
            rows.append({"path": name, "pairs_per_second": round(rate, 1)})
            if per_cpu is not None:  # the service: what its own process spent, the client's apart
                rows[-1]["pairs_per_server_cpu_second"] = round(per_cpu, 1)
            print(f"{name}: {rate:,.0f} pairs/s (host path alone)", flush=True)
    print(markdown(rows, ["path", "pairs_per_second", "pairs_per_server_cpu_second"]))
    finish(
        args.out,
        "host_path",
        {
            "dataset": args.dataset,
            "n_pairs": pairs,
            "model": args.model,
            "cascade": args.cascade,
            "precision": getattr(ranker, "precision", args.precision),
            "clients": args.clients,
            "repeats": args.repeats,
            "results": rows,
        },
    )


if __name__ == "__main__":
    main()
