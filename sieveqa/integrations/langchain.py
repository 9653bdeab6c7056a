"""A LangChain document compressor that reranks with a sieveqa model (``pip install
'sieveqa[langchain]'``)::

    from langchain_core.documents import Document
    from sieveqa.integrations.langchain import SieveQACompressor

    compressor = SieveQACompressor(model="default", top_n=2)
    docs = [Document(page_content=t) for t in ["Paris is in France.", "Fleming found penicillin."]]
    compressor.compress_documents(docs, "Who discovered penicillin?")

Wrapped around any retriever with LangChain's ``ContextualCompressionRetriever``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sieveqa.errors import require_extra
from sieveqa.integrations import MAX_DOCUMENTS, check_settings, keep, shared_ranker

require_extra("langchain_core", "langchain", "the LangChain compressor")

from langchain_core.callbacks import Callbacks  # noqa: E402
from langchain_core.documents import BaseDocumentCompressor, Document  # noqa: E402
from pydantic import ConfigDict, model_validator  # noqa: E402


class SieveQACompressor(BaseDocumentCompressor):
    """Keeps the ``top_n`` documents a sieveqa ranker puts first, best first, each with its
    ``relevance_score`` in the metadata."""

    model: Any = "default"
    """A shipped model name, a folder, or a loaded sieveqa ranker."""
    top_n: int | None = 3
    """How many documents to keep (None: all, reordered)."""
    drop_ratios: float | list[float] | None = None
    """A cascade's share of candidates dropped at each exit (its budget); None: the tuned ones."""
    max_documents: int | None = MAX_DOCUMENTS
    """Documents one call may rank (more: refused); None: no limit."""
    fusion: str = "auto"
    """none, auto, interp:W or rrf:W: LangChain documents carry no retriever score, so an explicit
    fusion combines BM25 over the documents with the model (``sieveqa.integrations``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    @model_validator(mode="after")
    def _checked(self) -> SieveQACompressor:
        check_settings(self.model, self.top_n, self.max_documents, self.fusion, "top_n")
        return self

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        ranker = shared_ranker(self.model, self.drop_ratios)
        texts = [d.page_content for d in documents]
        kept = keep(ranker, query, texts, self.top_n, self.max_documents, fusion=self.fusion)
        return [
            Document(
                page_content=documents[i].page_content,
                metadata={**documents[i].metadata, "relevance_score": score},
                id=documents[i].id,
            )
            for i, score in kept
        ]
