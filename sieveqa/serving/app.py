"""The FastAPI app: ``create_app(service)`` wires routes, limits, errors, metrics and the web page.

Every response to a bad request is an :class:`~sieveqa.serving.wire.ErrorBody` with the status the
issue of the request deserves: 400 empty or malformed, 413 too many texts or too large, 422 wrong
types, 429 (with Retry-After) when the queue is full. A 500 means a bug of ours, never a client's.
Timing headers, in milliseconds as text-embeddings-inference sends them: ``x-queue-time``,
``x-compute-time``, ``x-total-time``; plus ``x-inferences`` and ``x-layer-units``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, TypeVar

import anyio
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sieveqa import __version__
from sieveqa.errors import BusyError, ConfigError, DataFormatError, SieveQAError
from sieveqa.serving.metrics import CONTENT_TYPE
from sieveqa.serving.service import ANSWER_SETTINGS, REQUEST_SETTINGS, RequestError, Service
from sieveqa.serving.wire import (
    AnswerRequest,
    AnswerResponse,
    Cost,
    ErrorBody,
    FoundAnswer,
    Health,
    Passage,
    RankedDocument,
    RankedText,
    RerankDocuments,
    RerankMeta,
    RerankRequest,
)

log = logging.getLogger("sieveqa.serving")
T = TypeVar("T")
STATIC = resources.files("sieveqa.serving") / "static"
_ROUTES = {"/rerank", "/answer", "/health", "/metrics", "/"}
#: pydantic's errors for a text or list with nothing in it: 400, as for an empty request.
_EMPTY = {"string_too_short", "too_short", "string_pattern_mismatch"}
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in {
        400: "empty or malformed input",
        413: "too many texts, too long a text, or too large a body",
        422: "a field of the wrong type",
        429: "the queue is full; see Retry-After",
    }.items()
}


def _error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "error_type": kind}, status, headers)


class _Envelope:
    """Pure ASGI around the app: refuses bodies over the limit (413) before they are read whole,
    adds ``x-total-time`` and counts requests and latency per endpoint."""

    def __init__(self, app: ASGIApp, service: Service) -> None:
        self.app, self.service = app, service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        endpoint = scope["path"] if scope["path"] in _ROUTES else "other"
        status = 500
        limit = self.service.limits.max_body_bytes
        length = dict(scope["headers"]).get(b"content-length", b"0")
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > limit:
                raise HTTPException(413, f"request body over {limit} bytes")
            return message

        async def timed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                total = f"{(time.perf_counter() - started) * 1000:.1f}".encode()
                message.setdefault("headers", []).append((b"x-total-time", total))
            await send(message)

        headers = dict(scope["headers"])
        declared = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        if scope["method"] == "POST" and not (declared == b"application/json" or declared.endswith(b"+json")):
            if declared.startswith(b"multipart/"):
                await _error(
                    415, "unsupported_media_type", f"send the body as JSON, not {declared.decode()}"
                )(scope, receive, timed)
                return
            # curl -d sends JSON as a form, others as text/plain or with no type: every body is read
            # as the JSON it should be (a body that is not JSON gets the usual 422 naming the problem).
            rest = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
            scope = {**scope, "headers": [*rest, (b"content-type", b"application/json")]}
        try:
            if not length.isdigit() or int(length) > limit:
                why = "is not a number" if not length.isdigit() else f"is over {limit} bytes"
                await _error(
                    413 if length.isdigit() else 400,
                    "too_large" if length.isdigit() else "validation",
                    f"Content-Length {why}",
                )(scope, receive, timed)
            else:
                await self.app(scope, limited, timed)
        except Exception as exc:  # a bug of ours: logged here once, not re-raised to the server
            log.exception("unexpected error in %s %s", scope.get("method"), scope["path"], exc_info=exc)
            if status == 500:  # nothing sent yet
                await _error(500, "internal", "internal error (logged by the server)")(scope, receive, timed)
        finally:
            m = self.service.metrics
            m.requests.labels(endpoint, str(status)).inc()
            m.latency.labels(endpoint).observe(time.perf_counter() - started)


_NO_ERROR = {"type": "", "loc": (), "msg": "invalid request"}


def _field(part: object) -> bool:
    """Whether a pydantic error location part names a field or index (not the body, nor a union
    member such as ``Document`` or ``constrained-str``)."""
    return isinstance(part, int) or (part != "body" and not str(part)[:1].isupper() and "-" not in str(part))


def _validation(exc: RequestValidationError) -> JSONResponse:
    """422 for a field of the wrong type; 400 for a body that is missing, empty or not JSON."""
    errors = exc.errors()
    # Of a union's errors (a document is a string or an object), an empty text is the one to name.
    first = next((e for e in errors if e["type"] in _EMPTY), errors[0] if errors else _NO_ERROR)
    if first["type"] == "json_invalid" or (tuple(first["loc"]) == ("body",) and first["type"] == "missing"):
        what = "not valid JSON" if first["type"] == "json_invalid" else "missing"
        return _error(400, "validation", f"the request body is {what}")
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"] if _field(p))
    where = where.lstrip(".") or "body"
    if first["type"] in _EMPTY:
        return _error(400, "empty", f"{where} is empty")
    return _error(422, "validation", f"{where}: {first['msg']}")


def _describe_limits(schema: dict[str, Any], service: Service) -> None:
    """Write this server's limits into its OpenAPI schema, and leave out the cascade settings where
    the model is no cascade, so the schema says what the server accepts."""
    limits, parts = service.limits, schema["components"]["schemas"]
    rerank = parts["RerankRequest"]["properties"]
    rerank["query"]["maxLength"] = parts["AnswerRequest"]["properties"]["question"]["maxLength"] = (
        limits.max_chars
    )
    for key in ("texts", "documents"):
        rerank[key]["maxItems"] = limits.max_texts
    for text in (rerank["texts"]["items"], *rerank["documents"]["items"]["anyOf"]):
        if text.get("type") == "string":
            text["maxLength"] = limits.max_chars
    for name, part in parts.items():
        if name.startswith("Document"):
            part["properties"]["text"]["maxLength"] = limits.max_chars
    for name in REQUEST_SETTINGS:
        if name not in service.ranker.request_settings:
            del rerank[name]
    method = service.answerer.method if service.answerer is not None else None
    for name in ANSWER_SETTINGS:
        if method is None or name not in method.request_settings:
            del parts["AnswerRequest"]["properties"][name]


#: How often a waiting request checks whether its client is still there.
_GONE_POLL_S = 0.05


async def _unless_gone(request: Request, work: Coroutine[Any, Any, T]) -> T:
    """``work``'s result, or, if the client disconnects first, ``work`` cancelled (its queued job is
    then dropped, never computed) and a 499 that nobody reads, but the metrics count."""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=_GONE_POLL_S)
            if done:
                return task.result()
            if await request.is_disconnected():
                task.cancel()
                raise RequestError(499, "client_closed", "the client closed the connection")
    finally:
        if not task.done():  # this request itself was cancelled (server shutdown)
            task.cancel()


def _sigmoid(x: float) -> float:
    """1 / (1 + e^-x) without overflow for any float (a logit of -1000 is a probability of 0)."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def _timing_headers(response: Response, queue: float, compute: float, inferences: int, units: int) -> None:
    response.headers["x-queue-time"] = f"{queue * 1000:.1f}"
    response.headers["x-compute-time"] = f"{compute * 1000:.1f}"
    response.headers["x-inferences"] = str(inferences)
    response.headers["x-layer-units"] = str(units)


def create_app(service: Service) -> FastAPI:
    """The service's app; the lifespan starts the batcher and, at shutdown, drains it."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        service.start()
        yield
        await anyio.to_thread.run_sync(service.stop)

    # /docs and /redoc serve Swagger UI and ReDoc from the package (fastapi-offline), not a CDN, so
    # they work on a machine without internet access.
    app = FastAPIOffline(
        title="sieveqa",
        version=__version__,
        summary="Answer sentence selection and QA over your documents, with as little compute as needed.",
        lifespan=lifespan,
    )
    app.add_middleware(_Envelope, service=service)

    @app.exception_handler(RequestError)
    async def refused(_: Request, exc: RequestError) -> JSONResponse:
        headers = None if exc.retry_after is None else {"Retry-After": str(math.ceil(exc.retry_after))}
        return _error(exc.status, exc.kind, str(exc), headers)

    @app.exception_handler(BusyError)
    async def busy(_: Request, exc: BusyError) -> JSONResponse:
        return _error(503, "unavailable", str(exc), {"Retry-After": "1"})

    @app.exception_handler(SieveQAError)
    async def library(_: Request, exc: SieveQAError) -> JSONResponse:
        """A sieveqa error at request time: the request's fault (422) or the server's (500, logged
        once), always with its one-line message."""
        if isinstance(exc, ConfigError | DataFormatError):
            return _error(422, "validation", str(exc))
        log.error("request failed: %s", exc)
        return _error(500, "internal", str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation(exc)

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        kind = {404: "not_found", 405: "not_allowed", 413: "too_large"}.get(exc.status_code, "validation")
        return _error(exc.status_code, kind, str(exc.detail), getattr(exc, "headers", None))

    @app.post("/rerank", response_model=list[RankedText] | RerankDocuments, responses=_ERRORS)
    async def rerank(
        req: RerankRequest, request: Request, response: Response
    ) -> list[RankedText] | RerankDocuments:
        """Rank texts for a query, best first (text-embeddings-inference or Cohere request shape)."""
        done = await _unless_gone(request, service.rerank(req))
        scores = done.scores
        order = done.order[: req.top_n]
        shown = scores if req.raw_scores or not done.logits else [_sigmoid(s) for s in scores]
        _timing_headers(
            response, done.queue_seconds, done.cost.seconds, done.cost.sequences, done.cost.layer_units
        )
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

    @app.post("/answer", response_model=AnswerResponse, responses={**_ERRORS, 404: {"model": ErrorBody}})
    async def answer(req: AnswerRequest, request: Request, response: Response) -> AnswerResponse:
        """Answer a question over the server's corpus index: the answer in its passage, the runner-up
        passages, and what it cost."""
        found = await _unless_gone(request, service.answer(req))
        scores = found.passage_scores or [None] * len(found.passages)
        ranked = sorted(
            zip(found.passages, scores, strict=True), key=lambda p: -(p[1] if p[1] is not None else 0)
        )
        passages = [
            Passage(passage_id=p.id, document=p.doc_id, title=p.title, text=p.text, score=s)
            for p, s in ranked[: req.passages]
        ]
        c = found.cost
        _timing_headers(response, 0.0, c.seconds, found.inferences, c.layer_units)
        assert service.answerer is not None  # service.answer refuses the request otherwise
        return AnswerResponse(
            question=found.question,
            method=service.answerer.method.name,
            answered=service.answerer.answers(found, req.min_confidence),
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

    @app.api_route(
        "/health", methods=["GET", "HEAD"], response_model=Health, responses={503: {"model": Health}}
    )
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

    @app.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}}}})
    async def metrics() -> Response:
        """Prometheus metrics: requests, latency, batch sizes, queue depth, layer-units."""
        return Response(service.metrics.render(), media_type=CONTENT_TYPE)

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(str(STATIC / "index.html"))

    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    default_schema = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _describe_limits(default_schema(), service)
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]
    return app
