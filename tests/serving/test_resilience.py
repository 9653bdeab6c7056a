"""The service survives its clients and its own failures: a bug is logged once and answered 500, a
deadline answers 503 and drops the work, /answer is queued and bounded like /rerank, /health
says 503 when the workers are gone, and no score overflows."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

import pytest
from fastapi.testclient import TestClient

from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError, StoreError
from sieveqa.models.base import Ranker, RankResult
from sieveqa.runtime.answer.answerer import Answerer
from sieveqa.serving import Limits, Service, create_app
from tests.fakes import KeywordRanker
from tests.serving.conftest import RecordingRanker

OK = {"query": "q", "texts": ["a", "b"]}


class Raises(Ranker):
    def __init__(self, err: BaseException) -> None:
        self.err = err

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        raise self.err


def test_a_bug_is_logged_once_and_never_reaches_the_server(caplog: pytest.LogCaptureFixture) -> None:
    """Starlette's handler for Exception re-raised after answering: the server logged it again."""
    app = create_app(Service(Raises(RuntimeError("boom"))))
    with TestClient(app) as c, caplog.at_level(logging.ERROR, "sieveqa.serving"):  # raises what escapes
        r = c.post("/rerank", json=OK)
    assert (r.status_code, r.json()["reason"]) == (500, "internal")
    ours = [r for r in caplog.records if r.exc_info and str(r.exc_info[1]) == "boom"]
    assert len(ours) == 1 and ours[0].getMessage().startswith("unexpected error in POST /rerank")


@pytest.mark.parametrize(
    ("err", "status", "says"),
    [
        (ConfigError("stride 64 must be below the 42 passage tokens"), 422, "stride 64 must be below"),
        (StoreError("idx: gen-00001/corpus.sqlite is missing"), 500, "corpus.sqlite is missing"),
    ],
)
def test_a_library_error_at_request_time_says_what_it_is(err: Exception, status: int, says: str) -> None:
    with TestClient(create_app(Service(Raises(err)))) as c:
        r = c.post("/rerank", json=OK)
    assert r.status_code == status and says in r.json()["error"]


def test_very_negative_logits_are_probability_zero_not_a_500() -> None:
    class Extreme(Ranker):
        def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
            return RankResult([[-1000.0, 1000.0] for _ in examples], Cost())

    with TestClient(create_app(Service(Extreme()))) as c:
        r = c.post("/rerank", json=OK)
    assert r.status_code == 200, r.text
    assert [x["score"] for x in r.json()] == [1.0, 0.0]


def test_a_request_past_its_deadline_is_503_and_its_work_is_dropped() -> None:
    ranker = RecordingRanker()
    ranker.gate.clear()
    service = Service(ranker, limits=Limits(timeout_s=1))
    with TestClient(create_app(service)) as c:
        held = threading.Thread(target=c.post, args=("/rerank",), kwargs={"json": OK})
        held.start()
        assert ranker.entered.wait(5)
        r = c.post("/rerank", json={"query": "late", "texts": ["a"]})  # waits behind the held one
        ranker.gate.set()
        held.join(5)
        assert c.post("/rerank", json={"query": "after", "texts": ["a"]}).status_code == 200
    assert (r.status_code, r.json()["reason"]) == (503, "timeout")
    assert "within 1 s" in r.json()["error"] and int(r.headers["retry-after"]) >= 1
    assert [q for call in ranker.calls for q in call] == ["q", "after"]  # "late" never ran


class SlowAnswerer(Answerer):
    """The keyword answerer, held at a gate; records the questions it worked on."""

    def __init__(self, base: Answerer) -> None:
        self.__dict__.update(base.__dict__)
        self.gate, self.entered, self.asked = threading.Event(), threading.Event(), []

    def answer(self, question: str, top: int | None = None, confidences: str | None = None):
        self.entered.set()
        self.gate.wait(10)
        self.asked.append(question)
        return super().answer(question, top)


def test_answer_is_queued_bounded_and_cancelled_like_rerank(keyword_answerer: Answerer) -> None:
    answerer = SlowAnswerer(keyword_answerer)
    service = Service(KeywordRanker(), answerer, limits=Limits(max_queue=1, timeout_s=1))
    with TestClient(create_app(service)) as c:
        held = threading.Thread(target=c.post, args=("/answer",), kwargs={"json": {"question": "first"}})
        held.start()
        assert answerer.entered.wait(5)
        late = {}
        waiting = threading.Thread(target=lambda: late.update(r=c.post("/answer", json={"question": "late"})))
        waiting.start()
        for _ in range(200):
            if service.answers.depth == 1:
                break
            time.sleep(0.01)
        assert c.get("/health").json()["queue_depth"] == 1
        full = c.post("/answer", json={"question": "refused"})
        waiting.join(5)  # its deadline passed while "first" held the worker
        answerer.gate.set()
        held.join(5)
        assert c.post("/answer", json={"question": "the answer?"}).status_code == 200
    assert (full.status_code, full.json()["reason"]) == (429, "overloaded")
    assert int(full.headers["retry-after"]) >= 1
    assert late["r"].status_code == 503
    assert answerer.asked == ["first", "the answer?"]  # "late" was dropped, "refused" never queued


def test_health_is_503_when_the_workers_are_down_or_draining() -> None:
    service = Service(RecordingRanker())
    with TestClient(create_app(service)) as c:
        assert c.get("/health").status_code == 200
        service.drain()  # what the server's signal handler calls: in-flight work still finishes
        r = c.get("/health")
        assert (r.status_code, r.json()["status"]) == (503, "draining")
        assert c.post("/rerank", json=OK).status_code == 200
        service._draining = False
        service.batcher.stop(5)  # as at shutdown: draining
        r = c.get("/health")
        assert (r.status_code, r.json()["status"]) == (503, "draining")
        service.answers.stop(5)  # the last worker on the models' thread: the thread ends
        assert not service.thread.alive
        service.batcher._stopping = service.answers._stopping = False  # ended without a stop: down
        r = c.get("/health")
        assert (r.status_code, r.json()["status"]) == (503, "down")


def test_a_client_that_goes_away_has_its_queued_work_dropped() -> None:
    """A client that disconnects while its request waits: the job is cancelled, never computed."""
    import asyncio
    import json

    from sieveqa.data.records import Candidate, Question, RankingExample

    ranker = RecordingRanker()
    ranker.gate.clear()
    service = Service(ranker)
    app = create_app(service)
    service.start()
    service.batcher.submit(RankingExample(Question("held", "held"), [Candidate("0", "a")]), 1, ranker)
    assert ranker.entered.wait(5)
    body = json.dumps({"query": "gone", "texts": ["a"]}).encode()
    sent: list[dict] = []

    async def client() -> None:
        messages = [{"type": "http.request", "body": body, "more_body": False}]
        leaves = time.monotonic() + 0.2  # the client waits a little, then leaves

        async def receive() -> dict:
            if messages:
                return messages.pop()
            if time.monotonic() >= leaves:  # as uvicorn does: a disconnect seen is returned at once
                return {"type": "http.disconnect"}
            await asyncio.sleep(leaves - time.monotonic())
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
            "path": "/rerank", "raw_path": b"/rerank", "query_string": b"", "root_path": "",
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "scheme": "http",
        }  # fmt: skip
        await asyncio.wait_for(app(scope, receive, send), 5)

    asyncio.run(client())
    ranker.gate.set()
    service.stop()
    assert sent[0]["status"] == 499
    assert [q for call in ranker.calls for q in call] == ["held"]  # "gone" was never scored
