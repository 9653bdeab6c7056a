"""The service's endpoints: ``/rerank`` (text-embeddings-inference's or Cohere's request shape),
Cohere's ``/v1/rerank`` and ``/v2/rerank`` (``sieveqa.serving.cohere``), ``/answer``, ``/health``,
``/metrics`` and the web page. Timing headers, in milliseconds as text-embeddings-inference sends
them: ``x-queue-time``, ``x-compute-time``; plus ``x-inferences`` and ``x-layer-units``. A request
whose client goes away is cancelled, its queued work dropped."""

from __future__ import annotations

import uuid
from importlib import resources
from pathlib import Path

from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse

from sieveqa import __version__
from sieveqa.serving.cohere import cohere_routes
from sieveqa.serving.errors import ERRORS
from sieveqa.serving.metrics import CONTENT_TYPE
from sieveqa.serving.running import ranked, timing_headers, unless_gone
from sieveqa.serving.service import Service
from sieveqa.serving.wire import (
    AnswerRequest,
    AnswerResponse,
    Cost,
    ErrorBody,
    FoundAnswer,
    Health,
    Info,
    Passage,
    RankedDocument,
    RankedText,
    RerankDocuments,
    RerankMeta,
    RerankRequest,
)

__all__ = ["STATIC", "service_routes"]

STATIC = resources.files("sieveqa.serving") / "static"


def service_routes(service: Service) -> APIRouter:
    """The endpoints of ``service``."""
    app = APIRouter()
    app.include_router(cohere_routes(service))

    @app.post("/rerank", response_model=list[RankedText] | RerankDocuments, responses=ERRORS)
    async def rerank(
        req: RerankRequest, request: Request, response: Response
    ) -> list[RankedText] | RerankDocuments:
        """Rank texts for a query, best first (text-embeddings-inference or Cohere request shape)."""
        order, shown, done = await ranked(service, req, request, response, not req.raw_scores)
        texts = req.candidate_texts()
        if req.texts is not None:
            return [
                RankedText(index=i, score=shown[i], text=texts[i] if req.return_text else None) for i in order
            ]
        cost = Cost(
            inferences=done.cost.sequences,
            layer_units=done.cost.layer_units,
            flops=done.cost.flops,
            compute_seconds=round(done.cost.seconds, 4),
            queue_seconds=round(done.queue_seconds, 4),
        )
        results = [
            RankedDocument(
                index=i,
                relevance_score=shown[i],
                document={"text": texts[i]} if req.return_documents else None,
            )
            for i in order
        ]
        return RerankDocuments(
            id=str(uuid.uuid4()),
            results=results,
            meta=RerankMeta(model=service.name, cost=cost, info=done.info),
        )

    @app.post("/answer", response_model=AnswerResponse, responses={**ERRORS, 404: {"model": ErrorBody}})
    async def answer(req: AnswerRequest, request: Request, response: Response) -> AnswerResponse:
        """Answer a question over the server's corpus index: the answer in its passage, the runner-up
        passages, and what it cost."""
        found = await unless_gone(request, service.answer(req))
        scores = found.passage_scores or [None] * len(found.passages)
        ranked = sorted(
            zip(found.passages, scores, strict=True), key=lambda p: -(p[1] if p[1] is not None else 0)
        )
        passages = [
            Passage(passage_id=p.id, document=p.doc_id, title=p.title, text=p.text, score=s)
            for p, s in ranked[: req.passages]
        ]
        c = found.cost
        timing_headers(response, 0.0, c.seconds, found.inferences, c.layer_units)
        assert service.answerer is not None  # service.answer refuses the request otherwise
        answered = service.answerer.answers(found, req.min_confidence)
        return AnswerResponse(
            question=found.question,
            method=service.answerer.method.name,
            answered=answered,
            reason=found.reason(answered),
            confidence=found.confidence,
            answers=[FoundAnswer(**f.as_dict()) for f in found.answers],
            passages=passages,
            cost=Cost(
                inferences=found.inferences,
                layer_units=c.layer_units,
                flops=c.flops,
                compute_seconds=round(c.seconds, 4),
            ),
            retrieval_seconds=round(found.retrieval_seconds, 4),
            budget=None if found.budget is None else found.budget.as_dict(),
        )

    # GET and HEAD as two operations: one route with both gave both one operation id (an invalid schema)
    @app.head(
        "/health", operation_id="health_head", response_model=Health, responses={503: {"model": Health}}
    )
    @app.get("/health", operation_id="health", response_model=Health, responses={503: {"model": Health}})
    async def health(response: Response) -> Health:
        """Readiness, and what this server has loaded: 503 while it drains or if a worker is down."""
        method = service.answerer.method.name if service.answerer is not None else None
        depth = service.queue_depth
        status = "ok" if service.ready else "draining" if service.draining else "down"
        if status != "ok":
            response.status_code = 503
        return Health(
            status=status,
            model=service.name,
            kind=service.kind,
            index=service.index,
            method=method,
            queue_depth=depth,
        )

    sha: list[str | None] = []  # the weights' fingerprint, read once (it reads every weight)

    @app.get("/info", response_model=Info)
    async def info() -> Info:
        """The served model and this server's limits, as text-embeddings-inference's /info gives them."""
        model = service.model
        if not sha:
            sha.append(model.body_fingerprint()[:40] if model is not None else None)
        label = {"id2label": {"0": "relevance"}, "label2id": {"relevance": 0}}
        precision = getattr(model, "precision", "")
        return Info(
            model_id=Path(service.name).name,
            model_sha=sha[0],
            model_dtype={"bf16": "bfloat16", "fp16": "float16"}.get(precision, "float32"),
            model_type={"reranker": label},
            max_concurrent_requests=service.limits.max_queue,
            max_input_length=model.config.max_length if model is not None else 0,
            max_batch_tokens=service.batcher.max_tokens if service.batcher is not None else 0,
            max_client_batch_size=service.limits.max_texts,
            auto_truncate=True,
            tokenization_workers=1,
            version=__version__,
        )

    @app.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}}}})
    async def metrics() -> Response:
        """Prometheus metrics: requests, latency, batch sizes, queue depth, layer-units."""
        return Response(service.metrics.render(), media_type=CONTENT_TYPE)

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(str(STATIC / "index.html"))

    return app
