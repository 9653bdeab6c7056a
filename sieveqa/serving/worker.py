"""One worker thread behind a bounded queue: the base of the micro-batcher (``/rerank``) and of the
answer queue (``/answer``).

Threads: the event loop only checks requests and ``submit``s them; the worker thread takes jobs and
runs the models; each job's :class:`~concurrent.futures.Future` carries its result back. A job whose
future was cancelled while it waited (the client went away, its deadline passed, a proxy timed out)
is dropped when taken, never worked on. A failing job fails its own futures, never the worker: the
thread ends only when ``stop`` has drained the queue, and ``ready`` says whether it still takes work
(``/health`` answers 503 otherwise). ``retry_after`` is the queued work at the measured rate.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sieveqa.errors import BusyError

log = logging.getLogger("sieveqa.serving")


class QueueFullError(BusyError):
    """The queue holds ``max_queue`` requests; ``retry_after`` is the seconds it needs to drain."""

    def __init__(self, depth: int, retry_after: float) -> None:
        super().__init__(f"the queue is full ({depth} requests waiting); retry in {retry_after:.0f} s")
        self.retry_after = retry_after


@dataclass
class Job:
    """One queued request: ``units`` of work (pairs, questions) for the rate and Retry-After."""

    units: int
    enqueued: float = field(default_factory=time.monotonic, kw_only=True)
    future: Future[Any] = field(default_factory=Future, kw_only=True)


J = TypeVar("J", bound=Job)


class Worker(ABC, Generic[J]):
    """A bounded FIFO of jobs and the one thread that works them off."""

    def __init__(self, max_queue: int, name: str) -> None:
        self.max_queue, self.name = max_queue, name
        self._pending: deque[J] = deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._rate = 0.0  # units per second, a moving average over batches
        self._thread: threading.Thread | None = None

    @property
    def depth(self) -> int:
        """Jobs waiting (not counting those being worked on, nor those cancelled while waiting)."""
        return sum(not j.future.cancelled() for j in list(self._pending))

    @property
    def stopping(self) -> bool:
        """Whether ``stop`` was called (the queue drains, new jobs are refused)."""
        return self._stopping

    @property
    def ready(self) -> bool:
        """Whether the worker runs and takes new jobs (not stopped, not draining)."""
        return self._thread is not None and self._thread.is_alive() and not self._stopping

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Finish every queued job, then end the worker."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def retry_after(self) -> float:
        """Seconds the queued work takes at the measured rate (at least 1)."""
        units = sum(j.units for j in list(self._pending) if not j.future.cancelled())
        return max(1.0, math.ceil(units / self._rate)) if self._rate > 0 else 1.0

    def _enqueue(self, job: J) -> Future[Any]:
        with self._cond:
            if self._stopping:
                raise BusyError("the server is shutting down")
            if len(self._pending) >= self.max_queue:  # cancelled jobs hold no place
                self._pending = deque(j for j in self._pending if not j.future.cancelled())
            if len(self._pending) >= self.max_queue:
                raise QueueFullError(len(self._pending), self.retry_after())
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
                taken = self._take()
            # A cancelled future cannot be claimed; a claimed one can no longer be cancelled.
            live = [job for job in taken if job.future.set_running_or_notify_cancel()]
            if not live:
                continue
            started = time.monotonic()
            try:
                self._work(live)
            except BaseException as err:  # the jobs' failure, never the worker's
                if not isinstance(err, Exception):
                    log.error("%s: a job raised %s", self.name, type(err).__name__)
                for job in live:
                    if not job.future.done():
                        job.future.set_exception(err)
            else:
                self._measure(sum(j.units for j in live), time.monotonic() - started)
            self._done(live)

    def _measure(self, units: int, seconds: float) -> None:
        rate = max(units, 1) / max(seconds, 1e-9)
        self._rate = rate if self._rate == 0 else 0.8 * self._rate + 0.2 * rate

    @abstractmethod
    def _take(self) -> list[J]:
        """The next jobs to work on together (called holding the lock; may wait on it)."""

    @abstractmethod
    def _work(self, jobs: list[J]) -> None:
        """Work the jobs and set each one's future (an exception raised fails those not set)."""

    def _done(self, jobs: list[J]) -> None:
        """Called after each batch of jobs, whatever became of them."""
