"""Cohere's rerank endpoints: the real ``cohere`` SDK (v1 ``Client`` and v2 ``ClientV2``) with
``base_url`` alone, Cohere's request fields and error body, and ``model`` checked."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from sieveqa.serving import Limits, Service, create_app
from sieveqa.serving.app import serve_in_thread

QUERY = "what do puffins eat"
DOCS = ["Puffins eat small fish such as sand eels.", "The lighthouse has 412 steps.", "Gannets dive."]


def _probabilities(model, query: str, texts: list[str]) -> list[float]:
    logits = model.score_pairs([query] * len(texts), texts)
    return [1 / (1 + math.exp(-z)) for z in logits]


@pytest.fixture
def service(tiny_model) -> Service:
    return Service(tiny_model, name="tiny", aliases=("rerank-v3.5",), limits=Limits(max_texts=5))


@pytest.fixture
def client(service: Service) -> Iterator[TestClient]:
    with TestClient(create_app(service)) as c:
        yield c


@pytest.fixture
def url(service: Service) -> Iterator[str]:
    with serve_in_thread(service) as where:
        yield where


def test_the_cohere_v2_client_ranks_with_base_url_alone(url: str, tiny_model) -> None:
    cohere = pytest.importorskip("cohere")
    co = cohere.ClientV2(api_key="unused", base_url=url)
    got = co.rerank(model="rerank-v3.5", query=QUERY, documents=DOCS, top_n=2)
    want = _probabilities(tiny_model, QUERY, DOCS)
    best = sorted(range(3), key=lambda i: -want[i])[:2]
    assert [r.index for r in got.results] == best
    assert [r.relevance_score for r in got.results] == pytest.approx([want[i] for i in best], abs=1e-4)


def test_the_cohere_v1_client_ranks_objects_by_their_fields_and_returns_them(url: str, tiny_model) -> None:
    cohere = pytest.importorskip("cohere")
    co = cohere.Client(api_key="unused", base_url=url)
    docs = [{"title": "Birds", "text": t} for t in DOCS]
    got = co.rerank(
        model="tiny", query=QUERY, documents=docs, rank_fields=["title", "text"], return_documents=True
    )
    ranked = [f"title: Birds\ntext: {t}" for t in DOCS]  # Cohere's way of reading several fields
    want = _probabilities(tiny_model, QUERY, ranked)
    assert [r.index for r in got.results] == sorted(range(3), key=lambda i: -want[i])
    assert got.results[0].document.text == DOCS[got.results[0].index]


def test_a_model_that_is_not_served_reaches_the_cohere_user_as_the_servers_message(url: str) -> None:
    cohere = pytest.importorskip("cohere")
    co = cohere.ClientV2(api_key="unused", base_url=url)
    with pytest.raises(cohere.BadRequestError) as caught:
        co.rerank(model="rerank-english-v2.0", query=QUERY, documents=DOCS)
    assert "this server serves 'tiny'" in caught.value.body["message"]


def test_v2_answers_cohere_fields_and_refuses_in_cohere_body(client: TestClient) -> None:
    ok = client.post("/v2/rerank", json={"model": "tiny", "query": QUERY, "documents": DOCS, "top_n": 1})
    assert ok.status_code == 200
    body = ok.json()
    assert set(body) == {"id", "results", "meta"} and set(body["results"][0]) == {"index", "relevance_score"}
    assert body["meta"]["api_version"] == {"version": "2"}
    missing = client.post("/v2/rerank", json={"query": QUERY, "documents": DOCS})
    assert missing.status_code == 422 and "model" in missing.json()["message"]
    empty = client.post("/v2/rerank", json={"model": "tiny", "query": QUERY, "documents": []})
    assert empty.status_code == 400 and set(empty.json()) == {"message"}
    many = client.post("/v2/rerank", json={"model": "tiny", "query": QUERY, "documents": DOCS * 2})
    assert many.status_code == 413 and "more than the 5 allowed" in many.json()["message"]


def test_v1_takes_strings_and_objects_and_names_a_missing_field(client: TestClient) -> None:
    mixed = client.post("/v1/rerank", json={"query": QUERY, "documents": [DOCS[0], {"text": DOCS[1]}]})
    assert mixed.status_code == 200 and "document" not in mixed.json()["results"][0]
    bad = client.post("/v1/rerank", json={"query": QUERY, "documents": [{"title": "no text"}]})
    assert bad.status_code == 400 and bad.json() == {"message": "documents[0]: no text field 'text'"}


def test_model_and_top_n_are_checked_on_rerank_too(client: TestClient) -> None:
    wrong = client.post("/rerank", json={"query": QUERY, "texts": DOCS, "model": "bge-reranker"})
    assert wrong.status_code == 400
    assert wrong.json()["error"].startswith("model 'bge-reranker' is not served here")
    assert (
        client.post("/rerank", json={"query": QUERY, "texts": DOCS, "model": "rerank-v3.5"}).status_code
        == 200
    )
    text = client.post("/rerank", json={"query": QUERY, "texts": DOCS, "top_n": "2"})
    assert text.status_code == 422 and "not the string '2'" in text.json()["error"]
