"""POST /rerank: both request shapes, the scores the model gives offline, cascades' budgets, batching."""

from __future__ import annotations

import asyncio
import math

import httpx
import pytest
from fastapi.testclient import TestClient

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.runtime.cascade import CascadeRanker
from sieveqa.serving import Limits, Service, create_app
from tests.serving.conftest import RecordingRanker

QUERY = "who wrote hamlet"
TEXTS = ["Hamlet is a tragedy.", "Shakespeare wrote Hamlet around 1600.", "Paris is in France."]


def _offline(model, texts: list[str] = TEXTS) -> list[float]:
    example = RankingExample(Question("q", QUERY), [Candidate(str(i), t) for i, t in enumerate(texts)])
    return model.run([example]).scores[0]


def test_texts_come_back_best_first_with_the_models_probabilities(client: TestClient, tiny_model) -> None:
    r = client.post("/rerank", json={"query": QUERY, "texts": TEXTS, "return_text": True})
    assert r.status_code == 200, r.text
    logits = _offline(tiny_model)
    ranked = r.json()
    assert [x["index"] for x in ranked] == sorted(range(3), key=lambda i: -logits[i])
    for x in ranked:
        assert x["score"] == pytest.approx(1 / (1 + math.exp(-logits[x["index"]])), abs=1e-5)
        assert x["text"] == TEXTS[x["index"]]
    for header in ("x-queue-time", "x-compute-time", "x-total-time"):
        assert float(r.headers[header]) >= 0
    assert r.headers["x-inferences"] == "3"
    assert int(r.headers["x-layer-units"]) > 0


def test_raw_scores_top_n_and_no_text(client: TestClient, tiny_model) -> None:
    r = client.post("/rerank", json={"query": QUERY, "texts": TEXTS, "raw_scores": True, "top_n": 2})
    logits = _offline(tiny_model)
    assert [x["score"] for x in r.json()] == pytest.approx(sorted(logits, reverse=True)[:2], abs=1e-5)
    assert all(x["text"] is None for x in r.json())


def test_documents_shape_answers_like_cohere(client: TestClient, tiny_model) -> None:
    docs = [TEXTS[0], {"text": TEXTS[1]}, TEXTS[2]]
    body = {"query": QUERY, "documents": docs, "top_n": 1, "return_documents": True, "model": "default"}
    r = client.post("/rerank", json=body)
    body = r.json()
    best = max(range(3), key=lambda i: _offline(tiny_model)[i])
    assert [d["index"] for d in body["results"]] == [best]
    assert body["results"][0]["document"] == {"text": TEXTS[best]}
    assert 0 < body["results"][0]["relevance_score"] < 1
    assert body["meta"]["model"] == "default"
    assert body["meta"]["cost"]["inferences"] == 3


def test_concurrent_requests_share_a_batch_and_score_as_alone(tiny_model) -> None:
    alone = {q: _offline(tiny_model, [q + " a", "b " + q]) for q in ("one", "two", "three", "four")}
    service = Service(tiny_model)
    app = create_app(service)
    held = RecordingRanker()  # keeps the worker busy while the four requests queue up
    held.gate.clear()

    async def run() -> list[httpx.Response]:
        service.start()
        service.batcher.submit(RankingExample(Question("h", "h"), [Candidate("0", "x")]), 1, held)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            sent = [
                asyncio.ensure_future(
                    c.post(
                        "/rerank", json={"query": QUERY, "texts": [q + " a", "b " + q], "raw_scores": True}
                    )
                )
                for q in alone
            ]
            while service.batcher.depth < 4:
                await asyncio.sleep(0.01)
            held.gate.set()
            out = await asyncio.gather(*sent)
        service.stop()
        return out

    for r, logits in zip(asyncio.run(run()), alone.values(), strict=True):
        assert r.status_code == 200
        assert int(r.headers["x-inferences"]) == 2
        got = {x["index"]: x["score"] for x in r.json()}
        assert [got[0], got[1]] == pytest.approx(logits, abs=1e-4)
    sizes = service.metrics.render().decode()  # the held batch of one, then the four together
    assert "sieveqa_batch_requests_sum 5.0" in sizes and "sieveqa_batch_requests_count 2.0" in sizes


def _units(client: TestClient, **settings: object) -> int:
    texts = [f"candidate number {i} about hamlet" for i in range(20)]
    r = client.post("/rerank", json={"query": QUERY, "texts": texts, **settings})
    assert r.status_code == 200, r.text
    assert len(r.json()) == 20
    return int(r.headers["x-layer-units"])


def test_cascade_alpha_and_budget_cut_layer_units(tiny_cascade) -> None:
    service = Service(CascadeRanker(tiny_cascade, drop_ratios=0.0), name="tiny-cascade")
    with TestClient(create_app(service)) as c:
        full = _units(c)
        assert full == 20 * 4  # 4 layers on every candidate
        assert _units(c, alpha=0.5) < full
        halved = _units(c, budget=0.5)
        assert halved <= full * 0.5 + 4
        r = c.post("/rerank", json={"query": QUERY, "texts": TEXTS, "budget": 0.1})
        assert r.status_code == 400 and "budget 0.1 is below" in r.json()["error"]


def test_alpha_is_refused_for_a_model_that_is_no_cascade(client: TestClient) -> None:
    r = client.post("/rerank", json={"query": QUERY, "texts": TEXTS, "alpha": 0.3})
    assert r.status_code == 400
    assert "alpha: default takes no per-request settings" in r.json()["error"]


class CountingTokenizer:
    """A featurizer's tokenizing, counting the texts it encodes and whether an event loop ran the call."""

    def __init__(self, featurizer) -> None:
        self.encode, self.texts, self.on_loop = featurizer._encode_ids, [], []

    def __call__(self, texts):
        try:
            asyncio.get_running_loop()
            self.on_loop.append(True)
        except RuntimeError:
            self.on_loop.append(False)
        self.texts.extend(texts)
        return self.encode(texts)


def test_a_truncate_false_request_is_tokenized_once_and_off_the_event_loop(tiny_model) -> None:
    service = Service(tiny_model)
    tiny_model.featurizer.cache.clear()  # texts other tests tokenized are not tokenized again
    counting = CountingTokenizer(tiny_model.featurizer)
    tiny_model.featurizer._encode_ids = counting
    try:
        with TestClient(create_app(service)) as c:
            r = c.post("/rerank", json={"query": QUERY, "texts": TEXTS, "truncate": False})
    finally:
        del tiny_model.featurizer._encode_ids
    assert r.status_code == 200, r.text
    assert sorted(counting.texts) == sorted([QUERY, *TEXTS])  # each text once: check and scoring
    assert counting.on_loop and not any(counting.on_loop)


def _texts_held(root: object, texts: list[str]) -> int:
    """Characters of ``texts`` reachable from ``root``'s attributes and containers."""
    wanted = set(texts)
    seen, stack, held = set(), [root], 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            held += len(obj) if obj in wanted else 0
        elif isinstance(obj, dict):
            stack += [*obj.keys(), *obj.values()]
        elif isinstance(obj, list | tuple | set):
            stack += list(obj)
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            stack += list(vars(obj).values())
    return held


def test_the_text_a_request_leaves_held_is_bounded_in_bytes(tiny_model) -> None:
    """A checked request's tokens once waited for its scoring in a memory bounded in token ids that
    pinned each text as well: crafted ``truncate: false`` requests held 1.5 GiB of text (issue 64).
    Now they are the featurizer's cache, whose byte bound counts the text."""
    from sieveqa.tokenizing import TokenCache

    featurizer = tiny_model.featurizer
    featurizer.cache = TokenCache(200_000)
    service = Service(tiny_model, limits=Limits(max_chars=200_000))
    long_texts = [f"text {i} " + "x" * 60_000 + " word" * 100 for i in range(10)]  # 600 KB, 100 tokens each
    with TestClient(create_app(service)) as c:
        for text in long_texts:  # each refused as too long: checked, never scored
            r = c.post("/rerank", json={"query": QUERY, "texts": [text, "a"], "truncate": False})
            assert r.status_code == 413, r.text
    assert 0 < _texts_held(featurizer, long_texts) <= 200_000


def test_one_setting_asked_at_once_from_two_threads_builds_one_ranker(tiny_cascade) -> None:
    """Checks run on the thread pool now: unguarded, two requests with the same alpha both missed
    the cache and built two rankers (which the batcher, grouping by ranker, cannot batch together),
    and eviction could raise KeyError between a lookup and its move_to_end."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from sieveqa.serving.wire import RerankRequest

    cascade = CascadeRanker(tiny_cascade, drop_ratios=0.0)
    build = cascade.with_settings

    def slow_build(**settings):  # building a ranker takes a while: both threads are inside
        time.sleep(0.2)
        return build(**settings)

    cascade.with_settings = slow_build
    service = Service(cascade)
    request = RerankRequest(query="q", texts=["a"], alpha=0.3)
    barrier = threading.Barrier(2)

    def ask(_: int) -> object:
        barrier.wait()
        return service._ranker_for(request)

    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(ask, range(2))
    assert first is second


@pytest.mark.parametrize("how", ["windows", "cut"])
def test_a_long_text_is_read_as_serve_long_texts_says(saved_tiny, how: str) -> None:
    """/rerank read only a passage's first max_length tokens; by default it now reads the whole in
    windows (the best one's score), and ``--long-texts cut`` keeps the old reading."""
    long = " ".join(["filler words"] * 40) + " the answer is here."
    service = Service.load(str(saved_tiny), precision="fp32", warm_up=False, long_texts=how)
    try:
        with TestClient(create_app(service)) as http:
            r = http.post("/rerank", json={"query": "q?", "texts": [long], "raw_scores": True})
        expected, cost = service.model.score_matrix(["q?"], [long], last_only=True, windows=how == "windows")
        assert r.json()[0]["score"] == pytest.approx(expected[0, 0].item(), abs=1e-5)
        assert int(r.headers["x-inferences"]) == cost.sequences
        assert (cost.sequences > 1) is (how == "windows") and service.model.windows is (how == "windows")
    finally:
        service.thread.close()


def test_a_retrievers_scores_are_fused_by_default_and_checked_first(client: TestClient, tiny_model) -> None:
    """A RAG client sends its retriever's scores: the ranking fuses them (auto: interp:0.2); with
    fusion none, or without them, the model ranks alone; a wrong count or fusion is a 422."""
    from sieveqa.runtime.answer.fusion import Fusion

    logits, given = _offline(tiny_model), [0.0, 30.0, 1.0]
    r = client.post("/rerank", json={"query": QUERY, "texts": TEXTS, "retrieval_scores": given})
    assert r.status_code == 200, r.text
    fused = Fusion.parse("auto").combine(logits, given)
    assert [x["index"] for x in r.json()] == sorted(range(3), key=lambda i: -fused[i])
    assert [x["score"] for x in r.json()] == pytest.approx(sorted(fused, reverse=True), abs=1e-5)
    body = {"query": QUERY, "texts": TEXTS, "retrieval_scores": given, "fusion": "none", "raw_scores": True}
    assert [x["score"] for x in client.post("/rerank", json=body).json()] == pytest.approx(
        sorted(logits, reverse=True), abs=1e-5
    )
    bad = client.post("/rerank", json={"query": QUERY, "texts": TEXTS, "retrieval_scores": [1.0]})
    assert bad.status_code == 422 and "retrieval_scores: 1 scores for 3 texts" in bad.json()["error"]
    bad = client.post("/rerank", json={"query": QUERY, "texts": TEXTS, "fusion": "bm25"})
    assert bad.status_code == 422 and bad.json()["error"].startswith("fusion: must be none, auto")
    nan = '{"query": "q", "texts": ["a"], "retrieval_scores": [NaN]}'
    r = client.post("/rerank", content=nan, headers={"content-type": "application/json"})
    assert r.status_code == 422
