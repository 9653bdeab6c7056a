"""A LlamaIndex node postprocessor that reranks with a sieveqa model (``pip install
'sieveqa[llamaindex]'``)::

    from llama_index.core.schema import NodeWithScore, TextNode
    from sieveqa.integrations.llamaindex import SieveQARerank

    rerank = SieveQARerank(model="default", top_n=2)
    texts = ["Paris is in France.", "Fleming found penicillin."]
    nodes = [NodeWithScore(node=TextNode(text=t)) for t in texts]
    rerank.postprocess_nodes(nodes, query_str="Who discovered penicillin?")

Given to a query engine as ``node_postprocessors=[rerank]``.
"""

from __future__ import annotations

from typing import Any

from sieveqa.errors import ConfigError, require_extra
from sieveqa.integrations import MAX_DOCUMENTS, check_settings, keep, shared_ranker

require_extra("llama_index.core", "llamaindex", "the LlamaIndex postprocessor")

from llama_index.core.postprocessor.types import BaseNodePostprocessor  # noqa: E402
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle  # noqa: E402
from pydantic import ConfigDict, Field, model_validator  # noqa: E402


class SieveQARerank(BaseNodePostprocessor):
    """Keeps the ``top_n`` nodes a sieveqa ranker puts first, best first, each scored by it."""

    model: Any = Field(default="default", description="a shipped model name, a folder or a loaded ranker")
    top_n: int | None = Field(default=3, description="how many nodes to keep (None: all, reordered)")
    drop_ratios: float | list[float] | None = Field(
        default=None, description="a cascade's share dropped at each exit (its budget); None: the tuned ones"
    )
    max_documents: int | None = Field(
        default=MAX_DOCUMENTS, description="nodes one call may rank (more: refused); None: no limit"
    )
    fusion: str = Field(
        default="auto",
        description="how the nodes' retriever scores (higher: better) join the model's (see fusion)",
    )

    model_config = ConfigDict(extra="forbid")  # a misspelt argument was silently ignored

    @model_validator(mode="after")
    def _checked(self) -> SieveQARerank:
        check_settings(self.model, self.top_n, self.max_documents, self.fusion, "top_n")
        return self

    @classmethod
    def class_name(cls) -> str:
        return "SieveQARerank"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ConfigError("SieveQARerank needs the query (query_str or query_bundle)")
        ranker = shared_ranker(self.model, self.drop_ratios)
        texts = [n.node.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes]
        return [
            NodeWithScore(node=nodes[i].node, score=score)
            for i, score in keep(
                ranker,
                query_bundle.query_str,
                texts,
                self.top_n,
                self.max_documents,
                [n.score for n in nodes],
                self.fusion,
            )
        ]
