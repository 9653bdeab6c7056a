"""Cohere's rerank endpoints, so Cohere's clients work with ``base_url`` set to the service: the
``cohere`` SDK (``Client`` calls ``POST /v1/rerank``, ``ClientV2`` ``POST /v2/rerank``), and through it
LangChain's, LlamaIndex's and Haystack's Cohere rerankers.

The request and response fields are Cohere's (v1: documents as strings or objects, ``rank_fields``,
``return_documents``; v2: documents as strings, ``max_tokens_per_doc``), the scores probabilities as
Cohere's ``relevance_score`` are, and a refusal is Cohere's error body, ``{"message": ...}``, with the
status Cohere would send. ``model`` must name the served model (or an alias given to ``serve``).
"""

from __future__ import annotations

import uuid
from pathlib import PurePath
from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import Field, StrictBool

from sieveqa.serving.errors import ERRORS
from sieveqa.serving.running import ranked
from sieveqa.serving.service import RequestError, Service
from sieveqa.serving.wire import Int, RerankRequest, Text, _Request, _Wire

__all__ = ["cohere_routes"]


class V2Rerank(_Request):
    """Cohere's v2 rerank request."""

    model: str = Field(description="the served model's name (or an alias given to serve)")
    query: Text
    documents: list[Text] = Field(min_length=1, description="the texts to rank")
    top_n: Int | None = Field(None, ge=1, description="return only the N best")
    max_tokens_per_doc: Int | None = Field(
        None,
        ge=1,
        description="accepted, not applied: a long document is read whole, in windows of the model's "
        "length (cut at that length where serve runs --long-texts cut)",
    )

    def ranking(self) -> RerankRequest:
        return RerankRequest(query=self.query, documents=self.documents, top_n=self.top_n, model=self.model)

    def document(self, i: int) -> dict[str, Any] | None:
        return None


class V1Rerank(_Request):
    """Cohere's v1 rerank request: a document is a string or an object whose ``rank_fields`` (default
    ``text``) are ranked, written ``field: value`` one a line as Cohere does."""

    model: str | None = Field(None, description="the served model's name (or an alias given to serve)")
    query: Text
    documents: list[Text | dict[str, Any]] = Field(min_length=1, description="strings or objects")
    top_n: Int | None = Field(None, ge=1, description="return only the N best")
    rank_fields: list[str] | None = Field(None, min_length=1, description="the fields of an object to rank")
    return_documents: StrictBool = Field(False, description="include each document in its result")
    max_chunks_per_doc: Int | None = Field(None, ge=1, description="accepted; documents are not chunked")

    def texts(self) -> list[str]:
        out = []
        for i, doc in enumerate(self.documents):
            if isinstance(doc, str):
                out.append(doc)
                continue
            fields = self.rank_fields or ["text"]
            missing = [f for f in fields if not isinstance(doc.get(f), str)]
            if missing:
                raise RequestError(400, "validation", f"documents[{i}]: no text field {missing[0]!r}")
            text = doc[fields[0]] if fields == ["text"] else "\n".join(f"{f}: {doc[f]}" for f in fields)
            if not text.strip():
                raise RequestError(400, "empty", f"documents[{i}] is empty")
            out.append(text)
        return out

    def ranking(self) -> RerankRequest:
        return RerankRequest(query=self.query, documents=self.texts(), top_n=self.top_n, model=self.model)

    def document(self, i: int) -> dict[str, Any] | None:
        if not self.return_documents:
            return None
        doc = self.documents[i]
        return {"text": doc} if isinstance(doc, str) else dict(doc)


class CohereResult(_Wire):
    index: int
    relevance_score: float
    document: dict[str, Any] | None = None


class CohereResponse(_Wire):
    id: str
    results: list[CohereResult]
    meta: dict[str, Any]


def cohere_routes(service: Service) -> APIRouter:
    """``POST /v1/rerank`` and ``POST /v2/rerank`` over ``service``."""
    app = APIRouter()

    async def run(
        version: str, req: V1Rerank | V2Rerank, request: Request, response: Response
    ) -> CohereResponse:
        ranking = req.ranking()
        order, scores, done = await ranked(service, ranking, request, response, probabilities=True)
        results = [CohereResult(index=i, relevance_score=scores[i], document=req.document(i)) for i in order]
        meta = {
            "api_version": {"version": version},
            "billed_units": {"search_units": 1},
            "model": PurePath(service.name).name,  # a folder by its own name, not the server's path
            "cost": {"inferences": done.cost.sequences, "layer_units": done.cost.layer_units},
        }
        return CohereResponse(id=str(uuid.uuid4()), results=results, meta=meta)

    @app.post("/v1/rerank", response_model=CohereResponse, response_model_exclude_none=True, responses=ERRORS)
    async def rerank_v1(req: V1Rerank, request: Request, response: Response) -> CohereResponse:
        """Cohere's v1 rerank: rank documents for a query, best first."""
        return await run("1", req, request, response)

    @app.post("/v2/rerank", response_model=CohereResponse, response_model_exclude_none=True, responses=ERRORS)
    async def rerank_v2(req: V2Rerank, request: Request, response: Response) -> CohereResponse:
        """Cohere's v2 rerank: rank documents for a query, best first."""
        return await run("2", req, request, response)

    return app
