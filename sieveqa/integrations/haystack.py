"""A Haystack ranker component that reranks with a sieveqa model (``pip install 'sieveqa[haystack]'``)::

    from haystack import Document
    from sieveqa.integrations.haystack import SieveQARanker

    ranker = SieveQARanker(model="default", top_k=2)
    ranker.warm_up()
    docs = [Document(content=t) for t in ["Paris is in France.", "Fleming found penicillin."]]
    ranker.run(query="Who discovered penicillin?", documents=docs)["documents"]

In a pipeline after a retriever: ``pipeline.add_component("ranker", SieveQARanker())``. Haystack
loads a saved pipeline's components only from modules it trusts: importing this module adds itself to
that list; a process that has not imported it passes
``Pipeline.loads(text, allowed_modules=["sieveqa.integrations.haystack"])``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from sieveqa.errors import ConfigError, require_extra
from sieveqa.integrations import MAX_DOCUMENTS, check_settings, keep, shared_ranker
from sieveqa.models.base import Ranker

require_extra("haystack", "haystack", "the Haystack ranker")

from haystack import Document, component, default_from_dict, default_to_dict  # noqa: E402

try:  # Haystack >= 2.2x: deserialization imports only allowlisted modules
    from haystack.core.serialization import allow_deserialization_module
except ImportError:  # pragma: no cover - older Haystack trusts every module
    pass
else:
    allow_deserialization_module(__name__)


@component
class SieveQARanker:
    """Keeps the ``top_k`` documents a sieveqa ranker puts first, best first, each with its score."""

    def __init__(
        self,
        model: str | Path | Ranker = "default",
        top_k: int | None = 10,
        drop_ratios: float | list[float] | None = None,
        max_documents: int | None = MAX_DOCUMENTS,
        fusion: str = "auto",
    ) -> None:
        """``model``: a shipped model name or folder; ``top_k``: how many documents to keep (None: all);
        ``drop_ratios``: a cascade's share dropped at each exit (its budget; None: the tuned ones);
        ``max_documents``: how many one run may rank (more: refused; None: no limit); ``fusion``: how
        the documents' retriever scores join the model's (none, auto, interp:W, rrf:W)."""
        check_settings(model, top_k, max_documents, fusion, "top_k")
        self.model, self.top_k, self.drop_ratios = model, top_k, drop_ratios
        self.max_documents, self.fusion = max_documents, fusion
        self._ranker: Ranker | None = None

    def warm_up(self) -> None:
        """Load the model (once per process for the same model and drop ratios)."""
        if self._ranker is None:
            self._ranker = shared_ranker(self.model, self.drop_ratios)

    def to_dict(self) -> dict[str, Any]:
        if not isinstance(self.model, str | Path):
            raise ConfigError(
                "a component given a loaded ranker cannot be serialized: give a model name or folder"
            )
        return default_to_dict(
            self,
            model=str(self.model),
            top_k=self.top_k,
            drop_ratios=self.drop_ratios,
            max_documents=self.max_documents,
            fusion=self.fusion,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SieveQARanker:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, documents: list[Document], top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """The documents best first for ``query``, the first ``top_k`` (this run's, else the
        component's), each with ``score`` set."""
        if not documents:
            return {"documents": []}  # as Haystack's own rankers answer an empty list
        self.warm_up()
        assert self._ranker is not None
        texts = [d.content or "" for d in documents]
        top = top_k if top_k is not None else self.top_k
        scores = [d.score for d in documents]
        kept = keep(self._ranker, query, texts, top, self.max_documents, scores, self.fusion)
        return {"documents": [dataclasses.replace(documents[i], score=score) for i, score in kept]}
