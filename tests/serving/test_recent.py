"""A retried identical /rerank request is not computed again: it joins the one in flight or gets the
result kept (bounded in bytes); a job every waiter left before it started is never computed."""

from __future__ import annotations

import threading

from fastapi.testclient import TestClient

from sieveqa.encoder import Cost
from sieveqa.serving import Limits, Service, create_app
from sieveqa.serving.batcher import Scored
from sieveqa.serving.recent import RecentResults, request_key, result_bytes
from tests.serving.conftest import RecordingRanker

BIG = {"query": "q", "texts": ["a", "bb", "ccc"]}


def _scored(n: int) -> Scored:
    return Scored([0.0] * n, list(range(n)), Cost(), {}, False, 0.0, 1, n)


def test_the_key_tells_settings_query_and_texts_apart() -> None:
    base = request_key((("alpha", None),), "q", ["a", "b"])
    assert base == request_key((("alpha", None),), "q", ["a", "b"])
    others = [
        request_key((("alpha", 0.5),), "q", ["a", "b"]),
        request_key((("alpha", None),), "q2", ["a", "b"]),
        request_key((("alpha", None),), "q", ["b", "a"]),
        request_key((("alpha", None),), "q", ["ab"]),  # lengths delimit the texts
        request_key((("alpha", None),), "qa", ["b"]),
    ]
    assert base not in others and len(set(others)) == len(others)


def test_kept_results_stay_within_their_bytes_the_oldest_dropped_first() -> None:
    import asyncio
    from concurrent.futures import Future

    recent = RecentResults(max_bytes=3 * result_bytes(_scored(10)))

    def done(n: int) -> Future[Scored]:
        future: Future[Scored] = Future()
        future.set_result(_scored(n))
        return future

    for i in range(5):
        asyncio.run(recent.result(bytes([i]), lambda: done(10)))
    assert len(recent) == 3 and recent.bytes <= recent.max_bytes
    asyncio.run(recent.result(bytes([9]), lambda: done(10_000)))  # larger than the whole bound: not kept
    assert len(recent) == 3
    got = asyncio.run(recent.result(bytes([4]), lambda: done(1)))  # kept: not started again
    assert len(got.scores) == 10 and recent.hits == 1


def test_an_identical_request_is_answered_from_the_kept_result() -> None:
    ranker = RecordingRanker()
    with TestClient(create_app(Service(ranker))) as c:
        first = c.post("/rerank", json=BIG)
        again = c.post("/rerank", json=BIG)
        other = c.post("/rerank", json={**BIG, "query": "other"})
        shown = c.post("/rerank", json={**BIG, "return_text": True, "raw_scores": True})
    assert first.status_code == again.status_code == other.status_code == shown.status_code == 200
    assert again.json() == first.json()
    assert float(again.headers["x-compute-time"]) == 0 and again.headers["x-inferences"] == "0"
    assert [r["text"] for r in shown.json()] == ["ccc", "bb", "a"]  # presentation is per request
    assert ranker.calls == [["q"], ["other"]]


def test_a_retry_after_a_timeout_joins_the_job_still_running() -> None:
    """A client that gave up at its timeout and sent the same request again made the server compute it
    again behind the first (a 1,000-document request, three times)."""
    ranker = RecordingRanker()
    ranker.gate.clear()
    service = Service(ranker, limits=Limits(timeout_s=1))
    with TestClient(create_app(service)) as c:
        late = c.post("/rerank", json=BIG)  # running at the gate when its deadline passes
        assert ranker.entered.is_set() and late.status_code == 503
        retried: list = []
        retry = threading.Thread(target=lambda: retried.append(c.post("/rerank", json=BIG)))
        retry.start()
        threading.Event().wait(0.2)
        ranker.gate.set()
        retry.join(5)
    assert retried[0].status_code == 200, retried[0].text
    assert [x["index"] for x in retried[0].json()] == [2, 1, 0]
    assert ranker.calls == [["q"]]  # computed once
    assert service.recent.hits == 1


def test_no_result_is_kept_when_the_cache_is_off() -> None:
    ranker = RecordingRanker()
    with TestClient(create_app(Service(ranker, limits=Limits(result_cache_mb=0)))) as c:
        assert c.post("/rerank", json=BIG).json() == c.post("/rerank", json=BIG).json()
    assert ranker.calls == [["q"], ["q"]]
