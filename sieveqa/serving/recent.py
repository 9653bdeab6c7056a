"""Recent /rerank results, and those being computed, shared by identical requests.

A client that times out retries the same request (Haystack's and the Cohere SDK's clients do, up to
three times). Computing it again would only queue the same work behind the work already running, so
an identical request (same ranker settings, query and texts) joins the one in flight, or gets the
result it left, kept here for a while at most ``max_bytes`` in all, the least recently used dropped
first. A job every waiter has left is cancelled unless it has started: started, it finishes and is
kept, for the retry that is surely coming.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace

from sieveqa.encoder import Cost
from sieveqa.serving.batcher import Scored

__all__ = ["RecentResults", "request_key", "result_bytes"]

#: Bytes one kept result costs besides its candidates (its key, the entry, the cost and info).
_ENTRY_BYTES = 2048
#: Bytes a kept result costs per candidate: a float score and an int in the order, each boxed.
_CANDIDATE_BYTES = 80


def request_key(settings: object, query: str, texts: Sequence[str]) -> bytes:
    """What identifies a request's scores: the ranker's settings, the query and the texts in order."""
    digest = hashlib.sha256(repr(settings).encode())
    for part in (query, *texts):
        encoded = part.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little"))
        digest.update(encoded)
    return digest.digest()


def result_bytes(scored: Scored) -> int:
    """What keeping ``scored`` costs, about."""
    return _ENTRY_BYTES + _CANDIDATE_BYTES * len(scored.scores)


@dataclass
class _Flight:
    future: Future[Scored]
    waiters: int = 0


class RecentResults:
    """Results by request key: those in flight (shared) and the recent ones (kept, bounded in bytes)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max(int(max_bytes), 0)
        self._kept: OrderedDict[bytes, Scored] = OrderedDict()
        self._bytes = 0
        self._flying: dict[bytes, _Flight] = {}
        self._lock = threading.RLock()  # a job done or cancelled calls back on the caller's thread
        #: Requests answered without computing: a kept result, or one joined in flight.
        self.hits = 0

    @property
    def bytes(self) -> int:
        """Bytes the kept results cost (as :func:`result_bytes` counts them)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._kept)

    async def result(self, key: bytes, start: Callable[[], Future[Scored]]) -> Scored:
        """The scores for ``key``: kept, joined in flight, or from a job ``start`` queues (what it
        raises, a full queue, goes to the caller). Cancelled, the caller leaves the job, which is
        cancelled too once nobody waits for it and it has not started."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                self.hits += 1
                return replace(kept, queue_seconds=0.0, cost=Cost())  # it cost nothing this time
            flight = self._flying.get(key)
            if flight is None:
                flight = self._flying[key] = _Flight(start())
                flight.future.add_done_callback(lambda done: self._landed(key, flight, done))
            else:
                self.hits += 1
            flight.waiters += 1
        try:
            return await asyncio.shield(asyncio.wrap_future(flight.future))
        finally:
            with self._lock:  # (a job cancelled calls back at once, on this thread: the lock is an RLock)
                flight.waiters -= 1
                if not flight.waiters:
                    flight.future.cancel()  # does nothing once it runs: then it lands here

    def _landed(self, key: bytes, flight: _Flight, done: Future[Scored]) -> None:
        """A job ended (on the model thread): kept if it gave scores and fits."""
        with self._lock:
            if self._flying.get(key) is flight:
                del self._flying[key]
            if done.cancelled() or done.exception() is not None or not self.max_bytes:
                return
            scored = done.result()
            size = result_bytes(scored)
            if size > self.max_bytes:
                return
            old = self._kept.pop(key, None)
            self._bytes += size - (0 if old is None else result_bytes(old))
            self._kept[key] = scored
            while self._bytes > self.max_bytes:
                self._bytes -= result_bytes(self._kept.popitem(last=False)[1])
