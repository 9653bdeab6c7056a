"""The clients people already run, each called as its documentation says with the service's URL alone:
LangChain's and LlamaIndex's Cohere rerankers, Haystack's ``CohereRanker``, LlamaIndex's TEI
postprocessor and ``rerankers`` (TEI and Cohere providers), against a served tiny model. Each gets
the right indices and scores, and a refusal reaches its user as the server's message. (The ``cohere``
SDK itself: test_cohere.py.)"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from sieveqa.serving import Limits, Service
from sieveqa.serving.app import serve_in_thread

QUERY = "what do puffins eat"
DOCS = ["Puffins eat small fish such as sand eels.", "The lighthouse has 412 steps.", "Gannets dive."]


@pytest.fixture
def want(tiny_model) -> list[float]:
    """The served model's probabilities for DOCS: what every client should see."""
    logits = tiny_model.score_pairs([QUERY] * len(DOCS), DOCS)
    return [1 / (1 + math.exp(-z)) for z in logits]


def _best(scores: list[float], n: int) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: -scores[i])[:n]


@pytest.fixture
def url(tiny_model) -> Iterator[str]:
    service = Service(tiny_model, name="tiny", limits=Limits(max_texts=5))
    with serve_in_thread(service) as where:
        yield where


def test_langchain_cohere_rerank(url: str, want: list[float]) -> None:
    pytest.importorskip("langchain_cohere")
    from langchain_cohere import CohereRerank
    from langchain_core.documents import Document

    rerank = CohereRerank(cohere_api_key="unused", base_url=url, model="tiny", top_n=2)
    kept = rerank.compress_documents([Document(page_content=d) for d in DOCS], QUERY)
    assert [d.page_content for d in kept] == [DOCS[i] for i in _best(want, 2)]
    scores = [d.metadata["relevance_score"] for d in kept]
    assert scores == pytest.approx([want[i] for i in _best(want, 2)], abs=1e-4)


def test_llamaindex_cohere_rerank_and_its_refusal(url: str, want: list[float]) -> None:
    pytest.importorskip("llama_index.postprocessor.cohere_rerank")
    from llama_index.core.schema import NodeWithScore, TextNode
    from llama_index.postprocessor.cohere_rerank import CohereRerank

    nodes = [NodeWithScore(node=TextNode(text=d)) for d in DOCS]
    rerank = CohereRerank(api_key="unused", base_url=url, model="tiny", top_n=2)
    kept = rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert [n.node.get_content() for n in kept] == [DOCS[i] for i in _best(want, 2)]
    assert [n.score for n in kept] == pytest.approx([want[i] for i in _best(want, 2)], abs=1e-4)
    too_many = CohereRerank(api_key="unused", base_url=url, model="tiny", top_n=2)
    with pytest.raises(Exception, match="6 texts, more than the 5 allowed"):
        too_many.postprocess_nodes(nodes * 2, query_str=QUERY)


def test_llamaindex_tei_rerank(url: str, want: list[float]) -> None:
    pytest.importorskip("llama_index.postprocessor.tei_rerank")
    from llama_index.core.schema import NodeWithScore, TextNode
    from llama_index.postprocessor.tei_rerank import TextEmbeddingInference

    rerank = TextEmbeddingInference(base_url=url, top_n=2)
    kept = rerank.postprocess_nodes([NodeWithScore(node=TextNode(text=d)) for d in DOCS], query_str=QUERY)
    assert [n.node.get_content() for n in kept] == [DOCS[i] for i in _best(want, 2)]
    assert [n.score for n in kept] == pytest.approx([want[i] for i in _best(want, 2)], abs=1e-4)


def test_haystack_cohere_ranker_and_its_refusal(url: str, want: list[float]) -> None:
    pytest.importorskip("haystack_integrations.components.rankers.cohere")
    from haystack import Document
    from haystack.utils import Secret
    from haystack_integrations.components.rankers.cohere import CohereRanker

    ranker = CohereRanker(api_key=Secret.from_token("unused"), api_base_url=url, model="tiny", top_k=2)
    got = ranker.run(query=QUERY, documents=[Document(content=d) for d in DOCS])["documents"]
    assert [d.content for d in got] == [DOCS[i] for i in _best(want, 2)]
    assert [d.score for d in got] == pytest.approx([want[i] for i in _best(want, 2)], abs=1e-4)
    wrong = CohereRanker(api_key=Secret.from_token("unused"), api_base_url=url, model="rerank-v3.5")
    with pytest.raises(Exception, match="this server serves 'tiny'"):
        wrong.run(query=QUERY, documents=[Document(content=d) for d in DOCS])


@pytest.mark.parametrize(
    ("provider", "path"), [("text-embeddings-inference", "/rerank"), ("cohere", "/v1/rerank")]
)
def test_rerankers_api_providers(url: str, want: list[float], provider: str, path: str) -> None:
    pytest.importorskip("rerankers")
    from rerankers import Reranker

    ranker = Reranker("tiny", model_type=provider, api_key="unused", url=url + path, verbose=0)
    got = ranker.rank(QUERY, DOCS)
    assert [r.document.text for r in got.results] == [DOCS[i] for i in _best(want, 3)]
    assert [r.score for r in got.results] == pytest.approx([want[i] for i in _best(want, 3)], abs=1e-4)
