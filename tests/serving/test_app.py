"""The app run in a thread of this process (``serve_in_thread``): it answers on its URL, then stops."""

from __future__ import annotations

import threading

import httpx

from sieveqa.serving import Service, serve_in_thread
from tests.fakes import KeywordRanker


def test_serve_in_thread_answers_then_stops_its_thread() -> None:
    with serve_in_thread(Service(KeywordRanker())) as url:
        assert url.startswith("http://127.0.0.1:")
        body = {"query": "q", "texts": ["no", "the answer"]}
        ranked = httpx.post(f"{url}/rerank", json=body, timeout=10).json()
        assert [r["index"] for r in ranked] == [1, 0]
    assert not any(t.name == "sieveqa-serve" for t in threading.enumerate())
