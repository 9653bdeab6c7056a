"""The app run in a thread of this process (``serve_in_thread``): it answers on its URL, then stops."""

from __future__ import annotations

import threading

import httpx
import pytest
from fastapi.testclient import TestClient

from sieveqa.serving import Service, create_app, serve_in_thread
from tests.fakes import KeywordRanker


@pytest.mark.slow
def test_serve_in_thread_answers_then_stops_its_thread() -> None:
    with serve_in_thread(Service(KeywordRanker())) as url:
        assert url.startswith("http://127.0.0.1:")
        body = {"query": "q", "texts": ["no", "the answer"]}
        ranked = httpx.post(f"{url}/rerank", json=body, timeout=10).json()
        assert [r["index"] for r in ranked] == [1, 0]
    assert not any(t.name == "sieveqa-serve" for t in threading.enumerate())


def test_a_local_server_refuses_other_hosts_and_pages_of_other_sites(tiny_model) -> None:
    # A web page could read the server through DNS rebinding (its own name resolving to 127.0.0.1),
    # or make it answer a text/plain POST, which needs no preflight and is read as JSON.
    from sieveqa.serving.app import local_hosts

    app = create_app(Service(tiny_model), local_hosts("127.0.0.1", ("rag.lan",)))
    body = '{"query": "q", "texts": ["a", "b"]}'
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        assert c.post("/rerank", content=body).status_code == 200
        for host in ("localhost:8000", "[::1]:8000", "RAG.lan"):
            assert c.get("/health", headers={"host": host}).status_code == 200
        rebound = c.get("/health", headers={"host": "evil.example:8000"})
        assert rebound.status_code == 403 and "'evil.example' is not a name" in rebound.json()["error"]
        page = {"origin": "https://evil.example", "content-type": "text/plain"}
        assert c.post("/rerank", content=body, headers=page).status_code == 403
        marked = {"sec-fetch-site": "cross-site", "content-type": "text/plain"}
        assert c.post("/rerank", content=body, headers=marked).status_code == 403
        own = {"origin": "http://localhost:8000", "content-type": "text/plain"}
        assert c.post("/rerank", content=body, headers=own).status_code == 200
    assert local_hosts("0.0.0.0") is None  # shared on purpose: any name


def test_info_says_what_text_embeddings_inference_says(tiny_model) -> None:
    with TestClient(create_app(Service(tiny_model, name="runs/my-ranker"))) as c:
        info = c.get("/info").json()
    assert info["model_id"] == "my-ranker" and info["model_type"] == {
        "reranker": {"id2label": {"0": "relevance"}, "label2id": {"relevance": 0}}
    }
    assert info["max_input_length"] == 64 and info["max_client_batch_size"] == 1000
    assert info["auto_truncate"] is True and len(info["model_sha"]) == 40
