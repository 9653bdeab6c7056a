"""The same HTTP app as ``sieveqa serve``, as a Ray Serve deployment: each replica loads the model once
and batches concurrent /rerank requests with ``@serve.batch`` (Ray's queue, not the micro-batcher).
A replica holds at most ``max_queue`` /rerank requests waiting (429 with the Retry-After its measured
rate gives, as ``sieveqa serve`` does), reports them as its queue depth, and keeps the deadline. Ray's
own limits are set from the same ``max_queue``: it admits ``max_queue + 1`` requests into a replica
(its default, 128, kept the replica's 429 from ever firing) and queues at most ``max_queue`` more
before it answers 503 itself (its default queue is unbounded, and time in it is outside ``timeout_s``).

    >>> from ray import serve
    >>> from sieveqa.serving.ray_serve import application
    >>> serve.run(application("default", index="runs/demo-index", num_replicas=2))

or ``serve run sieveqa.serving.ray_serve:build model=default num_replicas=2`` on a cluster.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import time
from collections import defaultdict
from typing import Any

from ray import serve

from sieveqa.data.records import RankingExample
from sieveqa.device import thread_env
from sieveqa.errors import ConfigError
from sieveqa.models.base import Ranker
from sieveqa.serving.app import create_app
from sieveqa.serving.batcher import Scored, score_batch
from sieveqa.serving.service import RequestError, Service
from sieveqa.serving.settings import DEFAULT_HEAP, Batching, Limits, check_heap, configure_heap

_Job = tuple[RankingExample, Ranker, float]


def _pairs(jobs: list[_Job]) -> int:
    """A Ray Serve batch's size: its pairs, so one batch of many small requests stays bounded."""
    return sum(len(job[0].candidates) for job in jobs)


class RayService(Service):
    """A ``Service`` whose /rerank questions are batched by Ray Serve."""

    _waiting_pairs = 0
    _waiting = 0
    _rate = 0.0  # pairs per second, a moving average over batches

    def _micro_batcher(self, batching: Batching, limits: Limits) -> None:
        return None  # Ray Serve batches /rerank (``_batched``)

    @property
    def queue_depth(self) -> int:
        return self._waiting + self.answers.depth

    def _retry_after(self) -> float:
        return max(1.0, math.ceil(self._waiting_pairs / self._rate)) if self._rate > 0 else 1.0

    def batch_with(self, max_pairs: int, wait_ms: float) -> None:
        """Batches of at most ``max_pairs`` pairs (at least ``max_texts``, so any request fits),
        waiting at most ``wait_ms`` for company."""
        if max_pairs < self.limits.max_texts:
            raise ConfigError(f"max_batch_pairs {max_pairs} is below max_texts {self.limits.max_texts}")
        self._batched.set_max_batch_size(max_pairs)
        self._batched.set_batch_wait_timeout_s(wait_ms / 1000)

    async def score(
        self, example: RankingExample, tokens: int, ranker: Ranker, key: bytes | None = None
    ) -> Scored:
        if self._waiting >= self.limits.max_queue:
            raise RequestError(
                429,
                "overloaded",
                f"the queue is full ({self._waiting} requests waiting); retry later",
                retry_after=self._retry_after(),
            )
        pairs = len(example.candidates)
        self._waiting, self._waiting_pairs = self._waiting + 1, self._waiting_pairs + pairs
        try:
            work = self._batched((example, ranker, time.monotonic()))
            done: Scored = await self.within_deadline(work, self._retry_after)
        finally:
            self._waiting, self._waiting_pairs = self._waiting - 1, self._waiting_pairs - pairs
        return done

    @serve.batch(max_batch_size=1024, batch_wait_timeout_s=0.002, batch_size_fn=_pairs)
    async def _batched(self, jobs: list[_Job]) -> list[Scored]:
        """Score a Ray Serve batch: one call per ranker (a cascade's alpha or budget is its own)."""
        by_ranker: dict[int, list[int]] = defaultdict(list)
        for i, (_, ranker, _) in enumerate(jobs):
            by_ranker[id(ranker)].append(i)
        out: list[Scored | None] = [None] * len(jobs)
        for rows in by_ranker.values():
            ranker = jobs[rows[0]][1]
            examples, arrived = [jobs[i][0] for i in rows], [jobs[i][2] for i in rows]
            job = functools.partial(score_batch, ranker, examples, arrived)
            done, stats = await asyncio.wrap_future(self.thread.submit(job))  # the models' one thread
            self.metrics.batch(stats)
            rate = max(stats.pairs, 1) / max(stats.seconds, 1e-9)
            self._rate = rate if self._rate == 0 else 0.8 * self._rate + 0.2 * rate
            for i, scored in zip(rows, done, strict=True):
                out[i] = scored
        return out  # type: ignore[return-value]


@serve.deployment(name="sieveqa", ray_actor_options={"num_cpus": 1}, max_ongoing_requests=128)
@serve.ingress()
class SieveQADeployment:
    """One replica: the model (and corpus index) loaded once, behind the app ``create_app`` makes."""

    def __init__(
        self,
        model: str = "default",
        index: str | None = None,
        method: str = "peasi",
        max_batch_pairs: int = 1024,
        batch_wait_ms: float = 2.0,
        threads: int = 1,
        limits: dict[str, int] | None = None,
        heap: str = DEFAULT_HEAP,
        **answer_options: Any,
    ) -> None:
        import torch

        torch.set_num_threads(threads)
        configure_heap(heap)  # the replica's process is the service's: set before its models load
        self.service = RayService.load(
            model, index, method, limits=Limits(**(limits or {})), **answer_options
        )
        self.service.batch_with(max_batch_pairs, batch_wait_ms)

    def __serve_build_asgi_app__(self) -> Any:
        return create_app(self.service)


def application(
    model: str = "default",
    index: str | None = None,
    num_replicas: int = 1,
    threads: int = 1,
    **options: Any,
) -> serve.Application:
    """The deployment bound to its settings: ``num_replicas`` replicas of ``threads`` CPUs each;
    ``options`` go to ``SieveQADeployment`` (method, max_batch_pairs, batch_wait_ms, limits, heap, ...)."""
    check_heap(options.get("heap", DEFAULT_HEAP))  # here, not in a replica Ray would restart
    return deployment(num_replicas, threads, options.get("limits")).bind(
        model, index, threads=threads, **options
    )


def deployment(num_replicas: int, threads: int, limits: dict[str, Any] | None = None) -> serve.Deployment:
    """``SieveQADeployment`` with Ray's admission and queue bounded by ``limits``' ``max_queue``."""
    max_queue = Limits(**(limits or {})).max_queue
    return SieveQADeployment.options(
        num_replicas=num_replicas,
        # nanotoken's pool sized too (it took every core of the machine in each replica).
        ray_actor_options={"num_cpus": threads, "runtime_env": {"env_vars": thread_env(threads)}},
        max_ongoing_requests=max_queue + 1,
        max_queued_requests=max_queue,
    )


def build(args: dict[str, str]) -> serve.Application:
    """The builder ``serve run sieveqa.serving.ray_serve:build key=value ...`` calls: a value that
    reads as JSON (``read=3``, ``limits={"max_queue":64}``) is that, any other a string, and a model,
    index or method (names and paths) always a string."""
    return application(**{key: value if key in _TEXT else _value(value) for key, value in args.items()})


#: The builder's arguments that are always text: a model folder named ``2024`` is a folder, not a number.
_TEXT = frozenset(
    {"model", "index", "method", "heap", "reranker", "selector", "judge", "look_ranker", "confidence"}
)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
