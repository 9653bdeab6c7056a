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
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost
from sieveqa.models.base import Ranker
from sieveqa.serving.worker import Job, ModelThread, QueueFullError, Worker

__all__ = ["BatchStats", "MicroBatcher", "QueueFullError", "Scored", "score_batch"]

log = logging.getLogger("sieveqa.serving")


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
class _Job(Job):
    example: RankingExample
    tokens: int
    ranker: Ranker


@dataclass(frozen=True)
class BatchStats:
    """What one batch was, for the metrics."""

    requests: int
    pairs: int
    tokens: int
    seconds: float
    layer_units: int


class MicroBatcher(Worker[_Job]):
    """Queues (question, candidates) requests and scores them in batches on one worker thread."""

    def __init__(
        self,
        max_tokens: int = 32768,
        max_wait: float = 0.002,
        max_queue: int = 512,
        on_batch: Callable[[BatchStats], None] | None = None,
        thread: ModelThread | None = None,
    ) -> None:
        super().__init__(max_queue, "sieveqa-batcher", thread)
        self.max_tokens, self.max_wait = max_tokens, max_wait
        self.on_batch = on_batch
        self._free_since, self._last_size = 0.0, 0  # when the last batch ended, and its requests

    def submit(self, example: RankingExample, tokens: int, ranker: Ranker) -> Future[Scored]:
        """Queue one question; the future gets its scores, or raises what the ranker raised.
        Cancelling the future while it waits drops the question."""
        return self._enqueue(_Job(len(example.candidates), example, tokens, ranker))

    def _take(self) -> list[_Job]:
        first = self._pending[0]
        # Waiting pays only under concurrency (the last batch held several requests); then it
        # counts from when the model came free, too, since the clients the last batch answered
        # send again within milliseconds and can join this one.
        wait = self.max_wait if self._last_size > 1 else 0.0
        deadline = max(first.enqueued, self._free_since) + wait
        while not self._stopping and self._queued_tokens(first.ranker) < self.max_tokens:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._cond.wait(left)
        return self._oldest(first.ranker)

    def _queued_tokens(self, ranker: Ranker) -> int:
        return sum(j.tokens for j in self._pending if j.ranker is ranker and not j.future.cancelled())

    def _oldest(self, ranker: Ranker) -> list[_Job]:
        """The oldest jobs for ``ranker`` that fit ``max_tokens`` (the first always does)."""
        batch: list[_Job] = []
        kept: deque[_Job] = deque()
        tokens = 0
        for job in self._pending:
            if job.ranker is ranker and (not batch or tokens + job.tokens <= self.max_tokens):
                batch.append(job)
                tokens += job.tokens if not job.future.cancelled() else 0
            else:
                kept.append(job)
        self._pending = kept
        return batch

    def _work(self, jobs: list[_Job]) -> None:
        done, stats = score_batch(jobs[0].ranker, [j.example for j in jobs], [j.enqueued for j in jobs])
        if self.on_batch is not None:  # before the answers go out, so /metrics already counts them
            try:
                self.on_batch(replace(stats, tokens=sum(j.tokens for j in jobs)))
            except Exception:  # a broken hook must not keep the answers from their requests
                log.exception("the on_batch hook failed")
        for job, scored in zip(jobs, done, strict=True):
            job.future.set_result(scored)

    def _done(self, jobs: list[_Job]) -> None:
        self._free_since, self._last_size = time.monotonic(), len(jobs)


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
