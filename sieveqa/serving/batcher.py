"""Dynamic micro-batching: the questions of concurrent requests share forward passes.

Each request is one question with its candidates. Requests wait in one queue; a single worker thread
takes the oldest, gathers the requests queued behind it for the same ranker (only while the batch is
under ``max_tokens``), and runs them as one call, so the ranker sorts all their pairs by length and
pads little. Under concurrency (the last batch held several requests) it first waits for company, up
to ``max_wait`` seconds after the oldest arrived or the model came free, whichever is later; a lone
client never waits. The model is used by that one thread, while the event loop keeps accepting and
validating requests.

A batch's cost is shared by its requests in proportion to their pairs; its compute time is each
request's compute time, since each waited for all of it.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost
from sieveqa.errors import BusyError
from sieveqa.models.base import Ranker

log = logging.getLogger("sieveqa.serving")


class QueueFullError(BusyError):
    """The queue holds ``max_queue`` requests; ``retry_after`` is the seconds it needs to drain."""

    def __init__(self, depth: int, retry_after: float) -> None:
        super().__init__(f"the queue is full ({depth} requests waiting); retry in {retry_after:.0f} s")
        self.retry_after = retry_after


@dataclass
class Scored:
    """One request's share of a batch: its scores, its ranking (a cascade ranks the candidates that
    reached a later exit first, whatever their scores), and its part of the cost."""

    scores: list[float]
    order: list[int]
    cost: Cost
    info: dict[str, Any]
    logits: bool
    queue_seconds: float
    batch_requests: int
    batch_pairs: int


@dataclass
class _Job:
    example: RankingExample
    tokens: int
    ranker: Ranker
    enqueued: float = field(default_factory=time.monotonic)
    future: Future[Scored] = field(default_factory=Future)


@dataclass(frozen=True)
class BatchStats:
    """What one batch was, for the metrics."""

    requests: int
    pairs: int
    tokens: int
    seconds: float
    layer_units: int


class MicroBatcher:
    """Queues (question, candidates) requests and scores them in batches on one worker thread."""

    def __init__(
        self,
        max_tokens: int = 32768,
        max_wait: float = 0.002,
        max_queue: int = 512,
        on_batch: Callable[[BatchStats], None] | None = None,
    ) -> None:
        self.max_tokens, self.max_wait, self.max_queue = max_tokens, max_wait, max_queue
        self.on_batch = on_batch
        self._pending: deque[_Job] = deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._rate = 0.0  # pairs per second, a moving average over batches
        self._free_since, self._last_size = 0.0, 0  # when the last batch ended, and its requests
        self._thread: threading.Thread | None = None

    @property
    def depth(self) -> int:
        """Requests waiting (not counting the batch being computed)."""
        return len(self._pending)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="sieveqa-batcher", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Finish every queued request, then end the worker."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def retry_after(self) -> float:
        """Seconds the queued pairs take at the measured rate (at least 1)."""
        pairs = sum(len(j.example.candidates) for j in list(self._pending))
        return max(1.0, math.ceil(pairs / self._rate)) if self._rate > 0 else 1.0

    def submit(self, example: RankingExample, tokens: int, ranker: Ranker) -> Future[Scored]:
        """Queue one question; the future gets its scores, or raises what the ranker raised."""
        with self._cond:
            if self._stopping:
                raise BusyError("the server is shutting down")
            if len(self._pending) >= self.max_queue:
                raise QueueFullError(len(self._pending), self.retry_after())
            job = _Job(example, tokens, ranker)
            self._pending.append(job)
            self._cond.notify()
        return job.future

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if not self._pending:
                    return
                first = self._pending[0]
                # Waiting pays only under concurrency (the last batch held several requests); then
                # it counts from when the model came free, too, since the clients the last batch
                # answered send again within milliseconds and can join this one.
                wait = self.max_wait if self._last_size > 1 else 0.0
                deadline = max(first.enqueued, self._free_since) + wait
                while not self._stopping and self._queued_tokens(first.ranker) < self.max_tokens:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                batch = self._take(first.ranker)
            self._run(batch)
            self._free_since, self._last_size = time.monotonic(), len(batch)

    def _queued_tokens(self, ranker: Ranker) -> int:
        return sum(j.tokens for j in self._pending if j.ranker is ranker)

    def _take(self, ranker: Ranker) -> list[_Job]:
        """The oldest jobs for ``ranker`` that fit ``max_tokens`` (the first always does)."""
        batch, kept, tokens = [], deque(), 0
        for job in self._pending:
            if job.ranker is ranker and (not batch or tokens + job.tokens <= self.max_tokens):
                batch.append(job)
                tokens += job.tokens
            else:
                kept.append(job)
        self._pending = kept
        return batch

    def _run(self, batch: list[_Job]) -> None:
        try:
            done, stats = score_batch(
                batch[0].ranker, [j.example for j in batch], [j.enqueued for j in batch]
            )
        except BaseException as err:  # handed to every waiting request, which reports it
            for job in batch:
                job.future.set_exception(err)
            return
        pairs = max(stats.pairs, 1)
        self._rate = (
            pairs / stats.seconds if self._rate == 0 else 0.8 * self._rate + 0.2 * pairs / stats.seconds
        )
        if self.on_batch is not None:  # before the answers go out, so /metrics already counts them
            try:
                self.on_batch(replace(stats, tokens=sum(j.tokens for j in batch)))
            except Exception:  # a broken hook must not keep the answers from their requests
                log.exception("the on_batch hook failed")
        for job, scored in zip(batch, done, strict=True):
            job.future.set_result(scored)


def score_batch(
    ranker: Ranker, examples: Sequence[RankingExample], enqueued: Sequence[float]
) -> tuple[list[Scored], BatchStats]:
    """Run the questions of several requests as one call; each request gets its scores and a share of
    the cost in proportion to its pairs (``enqueued``: when each arrived, ``time.monotonic``)."""
    started = time.monotonic()
    result = ranker.run(examples)
    seconds = max(time.monotonic() - started, 1e-9)
    pairs = max(result.n_pairs, 1)
    info, done = result.info(), []
    for scores, order, arrived in zip(result.scores, result.orders(), enqueued, strict=True):
        share = len(scores) / pairs
        cost = Cost(
            layer_units=round(result.cost.layer_units * share),
            flops=round(result.cost.flops * share),
            sequences=round(result.cost.sequences * share),
            seconds=seconds,
        )
        done.append(
            Scored(scores, order, cost, info, result.logits, started - arrived, len(examples), result.n_pairs)
        )
    return done, BatchStats(len(examples), result.n_pairs, 0, seconds, result.cost.layer_units)
