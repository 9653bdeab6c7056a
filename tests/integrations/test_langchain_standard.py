"""LangChain's own standard retriever suite (``langchain-tests``) on the retriever the guide builds:
``ContextualCompressionRetriever`` with sieveqa's compressor over an in-memory vector store."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain_tests")
pytest.importorskip("langchain_classic")

from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests

from sieveqa.integrations.langchain import SieveQACompressor
from tests.serving.conftest import RecordingRanker

TEXTS = [
    "Puffins eat small fish.",
    "The lighthouse has 412 steps.",
    "Gannets dive for fish.",
    "Terns nest on the shingle.",
    "Fulmars glide over the cliffs.",
]


class TestTheGuidesRetriever(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[ContextualCompressionRetriever]:
        return ContextualCompressionRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        store.add_texts(TEXTS)
        # top_n None: the compressor reorders whatever the retriever found; k is the retriever's.
        compressor = SieveQACompressor(model=RecordingRanker(), top_n=None)
        return {"base_compressor": compressor, "base_retriever": store.as_retriever(search_kwargs={"k": 4})}

    @property
    def retriever_query_example(self) -> str:
        return "what do puffins eat"

    @pytest.mark.xfail(reason="ContextualCompressionRetriever takes no k: its retriever's search_kwargs do")
    def test_k_constructor_param(self) -> None:
        super().test_k_constructor_param()
