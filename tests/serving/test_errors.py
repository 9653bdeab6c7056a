"""Every refusal of the service: its status, its one-line message naming the field, never a 500."""

from __future__ import annotations

import json
import threading

import pytest
from fastapi.testclient import TestClient

from sieveqa.serving import Limits, Service, create_app
from tests.serving.conftest import RecordingRanker

OK = {"query": "q", "texts": ["a", "b"]}


@pytest.mark.parametrize(
    ("body", "status", "kind", "says"),
    [
        ({"query": "", "texts": ["a"]}, 400, "empty", "query is empty"),
        ({"query": "q", "texts": []}, 400, "empty", "texts is empty"),
        ({"query": "q"}, 400, "empty", "texts (or documents) is missing"),
        ({"query": "q", "documents": []}, 400, "empty", "documents is empty"),
        ({"query": "q", "texts": ["a", "  "]}, 400, "empty", "texts[1] is empty"),
        # Blank by the server's regex (Rust) and by the schema's (ECMA), which differ on these two.
        ({"query": "q", "texts": ["a", "\u0085"]}, 400, "empty", "texts[1] is empty"),
        ({"query": "q", "texts": ["a", "\ufeff "]}, 400, "empty", "texts[1] is empty"),
        ({"query": "q", "documents": [{"text": ""}]}, 400, "empty", "documents[0].text is empty"),
        ({"query": "q", "texts": ["a"] * 6}, 413, "too_large", "6 texts, more than the 5"),
        ({"query": "q", "texts": ["a", "x" * 201]}, 413, "too_large", "texts[1]: 201 characters"),
        ({"query": "x" * 201, "texts": ["a"]}, 413, "too_large", "query: 201 characters"),
        ({"query": "q", "texts": ["a"], "documents": ["b"]}, 422, "validation", "not both"),
        ({"query": 3, "texts": ["a"]}, 422, "validation", "query: Input should be a valid string"),
        ({"query": "q", "texts": "a"}, 422, "validation", "texts: Input should be a valid list"),
        ({"query": "q", "texts": ["a"], "top_n": 0}, 422, "validation", "top_n: Input should be greater"),
        ({"texts": ["a"]}, 422, "validation", "query: Field required"),
        ({"query": "q", "texts": ["a"], "budget": 2}, 422, "validation", "budget: Input should be less"),
        (
            {"query": "q", "texts": ["a"], "top_n": True},
            422,
            "validation",
            "top_n: Value error, expected a number",
        ),
        (
            {"query": "q", "texts": ["a"], "truncate": 0},
            422,
            "validation",
            "truncate: Input should be a valid bool",
        ),
        ({"query": "q", "texts": None}, 422, "validation", "texts: Input should be a valid list"),
        ([1, 2], 422, "validation", "body: Input should be a valid dictionary"),
    ],
)
def test_bad_rerank_requests(client: TestClient, body: object, status: int, kind: str, says: str) -> None:
    r = client.post("/rerank", json=body)
    assert (r.status_code, r.json()["reason"]) == (status, kind), r.text
    assert r.json()["error_type"] == ("Empty" if kind == "empty" else "Validation")  # TEI's ErrorType
    assert says in r.json()["error"]


@pytest.mark.parametrize(
    ("content", "headers", "status", "says"),
    [
        (b"{not json", {}, 400, "not valid JSON"),
        (b"", {}, 400, "is missing"),
        (b"x" * 5000, {}, 413, "Content-Length is over 4096 bytes"),
        (b"{}", {"content-length": "abc"}, 400, "Content-Length is not a number"),
    ],
)
def test_bad_bodies(client: TestClient, content: bytes, headers: dict, status: int, says: str) -> None:
    r = client.post("/rerank", content=content, headers={"content-type": "application/json", **headers})
    assert r.status_code == status, r.text
    assert says in r.json()["error"]


@pytest.mark.parametrize("kind", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_json_body_is_read_whatever_type_it_declares(client: TestClient, kind: str | None) -> None:
    # Issue 30: curl -d sends a form type, others text/plain or none: all got 422 "a valid dictionary".
    body = json.dumps({"query": "who?", "documents": ["a cat", "a dog"]}).encode()
    r = client.post("/rerank", content=body, headers={"content-type": kind} if kind else {})
    assert r.status_code == 200, r.text
    assert len(r.json()["results"]) == 2


def test_a_multipart_body_is_415(client: TestClient) -> None:
    r = client.post("/rerank", files={"f": ("a.txt", b"x")})
    assert r.status_code == 415
    assert r.json() == {
        "error": "send the body as JSON, not multipart/form-data",
        "error_type": "Validation",
        "reason": "unsupported_media_type",
    }


def test_a_streamed_body_is_cut_at_the_limit(client: TestClient) -> None:
    def chunks():
        yield b'{"query": "q", "texts": ["'
        for _ in range(10):
            yield b"y" * 1000

    r = client.post("/rerank", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert r.json() == {
        "error": "request body over 4096 bytes",
        "error_type": "Validation",
        "reason": "too_large",
    }


def test_truncate_false_refuses_a_pair_over_the_models_length(client: TestClient) -> None:
    long = " ".join(["x"] * 90)  # 179 characters, 90 tokens
    assert client.post("/rerank", json={"query": "q", "texts": ["a", long]}).status_code == 200
    r = client.post("/rerank", json={"query": "q", "texts": ["a", long], "truncate": False})
    assert r.status_code == 413
    assert "texts[1]: the pair is longer than the model's 64 tokens" in r.json()["error"]


def test_unknown_routes_and_methods(client: TestClient) -> None:
    assert client.get("/nowhere").json()["reason"] == "not_found"
    r = client.get("/rerank")
    assert (r.status_code, r.json()["reason"]) == (405, "not_allowed")


def test_answer_without_an_index_is_404(client: TestClient) -> None:
    r = client.post("/answer", json={"question": "why?"})
    assert r.status_code == 404
    assert "--index" in r.json()["error"]


def test_a_full_queue_gives_429_with_retry_after() -> None:
    ranker = RecordingRanker()
    ranker.gate.clear()
    service = Service(ranker, limits=Limits(max_queue=1))
    app = create_app(service)

    with TestClient(app) as c:
        held = threading.Thread(target=c.post, args=("/rerank",), kwargs={"json": OK})
        held.start()  # taken by the worker, which waits at the gate
        assert ranker.entered.wait(5)
        # Other queries: an identical request would share the held one's work (test_recent.py).
        queued = threading.Thread(target=c.post, args=("/rerank",), kwargs={"json": {**OK, "query": "q2"}})
        queued.start()
        for _ in range(500):
            if service.batcher.depth == 1:
                break
            threading.Event().wait(0.01)
        r = c.post("/rerank", json={**OK, "query": "q3"})
        ranker.gate.set()
        held.join(5)
        queued.join(5)
    assert r.status_code == 429
    assert r.json()["error_type"] == "Overloaded"  # what a TEI client reads
    assert r.json()["reason"] == "overloaded"
    assert int(r.headers["retry-after"]) >= 1


def test_a_bug_is_a_500_that_leaks_nothing(tiny_model) -> None:
    class Broken(RecordingRanker):
        def run(self, examples, progress=False):
            raise RuntimeError("secret detail")

    with TestClient(create_app(Service(Broken())), raise_server_exceptions=False) as c:
        r = c.post("/rerank", json=OK)
    assert r.status_code == 500
    assert r.json() == {
        "error": "internal error (logged by the server)",
        "error_type": "Backend",
        "reason": "internal",
    }


def test_errors_are_counted_by_endpoint_and_status(client: TestClient) -> None:
    client.post("/rerank", json={"query": "", "texts": ["a"]})
    client.post("/rerank", json=OK)
    metrics = client.get("/metrics").text
    assert 'sieveqa_requests_total{endpoint="/rerank",status="400"} 1.0' in metrics
    assert 'sieveqa_requests_total{endpoint="/rerank",status="200"} 1.0' in metrics
    assert "sieveqa_queue_depth 0.0" in metrics
    assert 'sieveqa_inferences_total{endpoint="rerank"} 2.0' in metrics
    # the /metrics request is in progress while it renders; the answered ones are not
    assert 'sieveqa_requests_in_progress{endpoint="/metrics"} 1.0' in metrics
    assert 'sieveqa_requests_in_progress{endpoint="/rerank"} 0.0' in metrics


def test_a_refused_media_type_is_counted_and_not_left_in_progress(client: TestClient) -> None:
    multipart = {"content-type": "multipart/form-data"}
    assert client.post("/rerank", content=b"x", headers=multipart).status_code == 415
    metrics = client.get("/metrics").text
    assert 'sieveqa_requests_total{endpoint="/rerank",status="415"} 1.0' in metrics
    assert 'sieveqa_requests_in_progress{endpoint="/rerank"} 0.0' in metrics


def test_the_docs_page_needs_no_internet(client: TestClient) -> None:
    # Issue 30: /docs loaded Swagger UI from a CDN and was blank offline.
    page = client.get("/docs").text
    assert "cdn.jsdelivr.net" not in page and "/static-offline-docs/swagger-ui-bundle.js" in page
    script = client.get("/static-offline-docs/swagger-ui-bundle.js")
    assert script.status_code == 200 and len(script.content) > 100_000
    assert client.get("/redoc").status_code == 200


def test_every_reason_has_a_tei_error_type() -> None:
    from typing import get_args

    from sieveqa.serving.errors import TEI_TYPES
    from sieveqa.serving.wire import Reason, TeiErrorType

    assert set(TEI_TYPES) <= set(get_args(Reason))
    assert set(TEI_TYPES.values()) <= set(get_args(TeiErrorType))
    assert TEI_TYPES["unavailable"] == "Unhealthy"  # draining, or an index away: retry elsewhere
