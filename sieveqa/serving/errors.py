"""How the service says no: every refused request gets an :class:`~sieveqa.serving.wire.ErrorBody`
with the status its issue deserves (400 empty or malformed, 413 too large, 422 wrong types, 429 with
Retry-After when the queue is full, 503 while an index is away); a 500 is a bug of ours, logged once."""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from sieveqa.errors import BusyError, ConfigError, DataFormatError, SieveQAError
from sieveqa.serving.service import RequestError
from sieveqa.serving.wire import ErrorBody

__all__ = ["COHERE_PATHS", "ERRORS", "TEI_TYPES", "error_response", "install_error_handlers"]

log = logging.getLogger("sieveqa.serving")
#: pydantic's errors for a text or list with nothing in it: 400, as for an empty request.
_EMPTY = {"string_too_short", "too_short", "string_pattern_mismatch"}
#: The refusals every endpoint documents in the OpenAPI schema.
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in {
        400: "empty or malformed input",
        413: "too many texts, too long a text, or too large a body",
        422: "a field of the wrong type",
        429: "the queue is full; see Retry-After",
        503: "the request ran out of time (timeout), or the server is draining or an index is away; "
        "see Retry-After",
    }.items()
}


#: The paths that answer as Cohere's API does, a refusal included: ``{"message": ...}``.
COHERE_PATHS = ("/v1/rerank", "/v2/rerank")


#: TEI's ``error_type`` for each of sieveqa's reasons: what a TEI client reads. Every reason not here
#: is the request's fault: ``Validation``.
TEI_TYPES = {
    "empty": "Empty",
    "overloaded": "Overloaded",
    "timeout": "Overloaded",
    "unavailable": "Unhealthy",
    "internal": "Backend",
}


def error_response(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None, path: str = ""
) -> JSONResponse:
    """The error body every refusal sends: TEI's ``ErrorResponse`` (its message and ``error_type``)
    with sieveqa's ``reason``, or at ``path`` Cohere's ``{"message"}`` where the path is Cohere's."""
    if path in COHERE_PATHS:
        return JSONResponse({"message": message}, status, headers)
    body = {"error": message, "error_type": TEI_TYPES.get(kind, "Validation"), "reason": kind}
    return JSONResponse(body, status, headers)


_NO_ERROR = {"type": "", "loc": (), "msg": "invalid request"}


def _field(part: object) -> bool:
    """Whether a pydantic error location part names a field or index (not the body, nor a union
    member such as ``Document`` or ``constrained-str``)."""
    return isinstance(part, int) or (part != "body" and not str(part)[:1].isupper() and "-" not in str(part))


def _validation(exc: RequestValidationError, path: str) -> JSONResponse:
    """422 for a field of the wrong type; 400 for a body that is missing, empty or not JSON."""
    errors = exc.errors()
    # Of a union's errors (a document is a string or an object), an empty text is the one to name.
    first = next((e for e in errors if e["type"] in _EMPTY), errors[0] if errors else _NO_ERROR)
    if first["type"] == "json_invalid" or (tuple(first["loc"]) == ("body",) and first["type"] == "missing"):
        what = "not valid JSON" if first["type"] == "json_invalid" else "missing"
        return error_response(400, "validation", f"the request body is {what}", path=path)
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"] if _field(p))
    where = where.lstrip(".") or "body"
    if first["type"] in _EMPTY:
        return error_response(400, "empty", f"{where} is empty", path=path)
    if first["type"] == "extra_forbidden":  # named as sent (min-confidence, Top): _field would drop it
        name = first["loc"][-1] if first["loc"] else where
        return error_response(422, "validation", f"{name}: no such field in this request", path=path)
    return error_response(422, "validation", f"{where}: {first['msg']}", path=path)


def install_error_handlers(app: FastAPI) -> None:
    """Turn every refusal, sieveqa error and framework error into an error body with its status."""

    @app.exception_handler(RequestError)
    async def refused(request: Request, exc: RequestError) -> JSONResponse:
        headers = None if exc.retry_after is None else {"Retry-After": str(math.ceil(exc.retry_after))}
        return error_response(exc.status, exc.kind, str(exc), headers, request.url.path)

    @app.exception_handler(BusyError)
    async def busy(request: Request, exc: BusyError) -> JSONResponse:
        return error_response(503, "unavailable", str(exc), {"Retry-After": "1"}, request.url.path)

    @app.exception_handler(SieveQAError)
    async def library(request: Request, exc: SieveQAError) -> JSONResponse:
        """A sieveqa error at request time: the request's fault (422) or the server's (500, logged
        once), always with its one-line message."""
        if isinstance(exc, ConfigError | DataFormatError):
            return error_response(422, "validation", str(exc), path=request.url.path)
        log.error("request failed: %s", exc)
        return error_response(500, "internal", str(exc), path=request.url.path)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation(exc, request.url.path)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        kind = {404: "not_found", 405: "not_allowed", 413: "too_large"}.get(exc.status_code, "validation")
        headers = getattr(exc, "headers", None)
        return error_response(exc.status_code, kind, str(exc.detail), headers, request.url.path)
