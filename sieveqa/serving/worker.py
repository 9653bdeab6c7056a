"""Bounded queues of jobs and the one thread that works them off: the base of the micro-batcher
(``/rerank``) and of the answer queue (``/answer``).

Threads: the event loop only checks requests and ``submit``s them; a :class:`ModelThread` takes jobs
and runs the models; each job's :class:`~concurrent.futures.Future` carries its result back. A job
whose future was cancelled while it waited (the client went away, its deadline passed, a proxy timed
out) is dropped when taken, never worked on. A failing job fails its own futures, never the thread:
it ends only when every worker on it was stopped and drained, and ``ready`` says whether a worker
still takes work (``/health`` answers 503 otherwise). ``retry_after`` is the queued work at the
measured rate.

Why one thread for every model of a process: PyTorch's CPU kernels run on an OpenMP team per calling
thread, and GNU OpenMP stops spinning between parallel regions once its threads outnumber the CPUs.
Two threads that have each run a model (the one that loaded it, the batcher, the answer queue) make
every kernel wake sleeping threads; on 2 cores that cost a third of the throughput
(docs/RESULTS.md, "The service's missing cores"). So a service loads its models on its ModelThread
(``call``) and every worker it has shares that thread.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sieveqa.device import trim_heap
from sieveqa.errors import BusyError

log = logging.getLogger("sieveqa.serving")

#: Seconds between two returns of freed heap memory to the system (``malloc_trim``) by a model thread.
TRIM_EVERY_S = 10.0


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


class ModelThread:
    """One thread that works off the jobs of several workers, the oldest job first, and runs any
    other model work of the process (``call``), so that all of it shares one OpenMP team."""

    def __init__(self, name: str = "sieveqa-models") -> None:
        self.name = name
        self.cond = threading.Condition()
        self.workers: list[Worker[Any]] = []
        self._calls: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._thread: threading.Thread | None = None  # None once the loop has returned
        self._closed = False
        self._trimmed = time.monotonic()

    @property
    def alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def start(self) -> None:
        """Start the thread unless it runs (a thread whose loop has ended is replaced)."""
        with self.cond:
            self._ensure_running()

    def _ensure_running(self) -> None:  # holding the lock
        if self._thread is None:
            self._closed = False
            self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
            self._thread.start()

    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        """Queue ``fn`` to run on this thread (started if need be) before any waiting job; the
        future gets its result or exception (cancelled while queued, it never runs)."""
        future: Future[Any] = Future()
        with self.cond:  # queued and the thread checked at once: an ending loop cannot strand it
            self._calls.append((fn, future))
            self._ensure_running()
            self.cond.notify_all()
        return future

    @property
    def current(self) -> bool:
        """Whether the caller runs on this thread."""
        return threading.current_thread() is self._thread

    def call(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on this thread and return its result (or raise its exception): how a service
        loads its models. Called on the thread itself, it just runs ``fn``."""
        if self.current:
            return fn()
        return self.submit(fn).result()

    def close(self) -> None:
        """End the thread once its queued calls ran, whatever its workers (a failed load has none)."""
        with self.cond:
            self._closed = True
            self.cond.notify_all()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread to end (it does once every worker is stopped and drained)."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _finished(self) -> bool:
        return self._closed or (bool(self.workers) and all(w.stopping for w in self.workers))

    def _loop(self) -> None:
        try:
            self._work_off()
        finally:  # however it ends, the next start() makes a new thread and waiters hear of it
            with self.cond:
                if self._thread is threading.current_thread():
                    self._thread = None
                self.cond.notify_all()

    def _work_off(self) -> None:
        while True:
            with self.cond:
                while not self._calls and not any(w._pending for w in self.workers) and not self._finished():
                    self.cond.wait()
                if self._calls:
                    fn, future = self._calls.popleft()
                    worker, taken = None, []
                else:
                    waiting = [w for w in self.workers if w._pending]
                    if not waiting:  # every worker stopped (or the thread closed), nothing left
                        # Let go while holding the lock: a call submitted from now on starts a new
                        # thread (set after the lock was released, one could be stranded).
                        self._thread = None
                        return
                    worker = min(waiting, key=lambda w: w._pending[0].enqueued)
                    worker.busy = True
                    taken = worker._take()
            if worker is None:
                if future.set_running_or_notify_cancel():  # a cancelled call is dropped
                    try:
                        future.set_result(fn())
                    except BaseException as err:  # the caller's failure, never the thread's
                        future.set_exception(err)
                continue
            try:
                worker._run(taken)
            finally:
                with self.cond:
                    worker.busy = False
                    self.cond.notify_all()
            if time.monotonic() - self._trimmed > TRIM_EVERY_S:  # the heap's settings: serving/settings.py
                trim_heap()
                self._trimmed = time.monotonic()


class Worker(ABC, Generic[J]):
    """A bounded FIFO of jobs, worked off on a :class:`ModelThread` (its own unless one is given, to
    share with other workers)."""

    def __init__(self, max_queue: int, name: str, thread: ModelThread | None = None) -> None:
        self.max_queue, self.name = max_queue, name
        self.thread = thread or ModelThread(name)
        self.thread.workers.append(self)
        self._pending: deque[J] = deque()
        self._cond = self.thread.cond
        self._stopping = False
        self._started = False
        self.busy = False  # a batch of this worker's is being worked on
        self._rate = 0.0  # units per second, a moving average over batches
        self._running: tuple[int, float] = (0, 0.0)  # the running batch's units, and when it began

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
        return self._started and self.thread.alive and not self._stopping

    def start(self) -> None:
        """Take jobs (again, after a stop: a service whose lifespan ended can start anew)."""
        with self._cond:
            self._started, self._stopping = True, False
        self.thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Finish every queued job, then refuse more (the thread ends when its last worker stops);
        ``timeout`` bounds the whole wait."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            if self.thread.alive and not self.thread.current:
                drained = lambda: (not self._pending and not self.busy) or not self.thread.alive  # noqa: E731
                self._cond.wait_for(drained, timeout)
        if self.thread._finished():
            self.thread.join(None if deadline is None else max(deadline - time.monotonic(), 0.0))

    def retry_after(self) -> float:
        """Seconds the queued work and what is left of the running batch take at the measured rate
        (at least 1)."""
        if self._rate <= 0:
            return 1.0
        units, since = self._running
        left = max(units / self._rate - (time.monotonic() - since), 0.0) if units else 0.0
        queued = sum(j.units for j in list(self._pending) if not j.future.cancelled())
        return max(1.0, math.ceil(queued / self._rate + left))

    def _enqueue(self, job: J) -> Future[Any]:
        with self._cond:
            if self._stopping:
                raise BusyError("the server is shutting down")
            if len(self._pending) >= self.max_queue:  # cancelled jobs hold no place
                self._pending = deque(j for j in self._pending if not j.future.cancelled())
            if len(self._pending) >= self.max_queue:
                raise QueueFullError(len(self._pending), self.retry_after())
            self._pending.append(job)
            self._cond.notify_all()
        return job.future

    def _run(self, taken: list[J]) -> None:
        """Work the taken jobs still wanted (on the model thread, not holding the lock)."""
        # A cancelled future cannot be claimed; a claimed one can no longer be cancelled.
        live = [job for job in taken if job.future.set_running_or_notify_cancel()]
        if not live:
            return
        started = time.monotonic()
        self._running = (sum(j.units for j in live), started)
        try:
            self._work(live)
        except BaseException as err:  # the jobs' failure, never the thread's
            if not isinstance(err, Exception):
                log.error("%s: a job raised %s", self.name, type(err).__name__)
            for job in live:
                if not job.future.done():
                    job.future.set_exception(err)
        else:
            self._measure(sum(j.units for j in live), time.monotonic() - started)
        finally:
            self._running = (0, 0.0)
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
