"""The app as a Ray Serve deployment on a local Ray: same answers, requests batched by @serve.batch."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # starting Ray and Serve takes ~15 s


def test_the_deployment_serves_and_batches_concurrent_requests(saved_tiny: Path) -> None:
    import httpx
    import ray
    from ray import serve

    from sieveqa.runtime.policy import load_ranker
    from sieveqa.serving.ray_serve import application
    from tests.serving.test_rerank import QUERY, TEXTS, _offline

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(application(str(saved_tiny), batch_wait_ms=200, limits={"max_texts": 10}), route_prefix="/")
        url = f"http://127.0.0.1:{port}"
        body = {"query": QUERY, "texts": TEXTS, "raw_scores": True}
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: httpx.post(f"{url}/rerank", json=body, timeout=60), range(8)))
        logits = _offline(load_ranker(str(saved_tiny)))  # loaded as the replica loads it
        for r in answers:
            assert r.status_code == 200, r.text
            assert {x["index"]: x["score"] for x in r.json()} == pytest.approx(
                dict(enumerate(logits)), abs=1e-4
            )
        metrics = httpx.get(f"{url}/metrics").text
        batches = next(
            line for line in metrics.splitlines() if line.startswith("sieveqa_batch_requests_count")
        )
        assert float(batches.split()[-1]) < 8  # some requests shared a batch
        too_many = httpx.post(f"{url}/rerank", json={"query": "q", "texts": ["a"] * 11})
        assert too_many.status_code == 413
    finally:
        serve.shutdown()
        ray.shutdown()
