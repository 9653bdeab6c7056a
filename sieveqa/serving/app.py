"""The FastAPI app: ``create_app(service)`` puts together the service's endpoints
(``sieveqa.serving.routes``), the envelope of limits, timing and metrics around them
(``sieveqa.serving.envelope``), the error bodies (``sieveqa.serving.errors``), the web page and an
OpenAPI schema that states this server's limits.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from sieveqa import __version__
from sieveqa.serving.envelope import Envelope
from sieveqa.serving.errors import install_error_handlers
from sieveqa.serving.routes import STATIC, service_routes
from sieveqa.serving.service import ANSWER_SETTINGS, REQUEST_SETTINGS, Service

__all__ = ["create_app", "local_hosts", "serve_in_thread"]


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
    for name in ("V1Rerank", "V2Rerank"):  # Cohere's endpoints, under the same limits
        parts[name]["properties"]["documents"]["maxItems"] = limits.max_texts
        parts[name]["properties"]["query"]["maxLength"] = limits.max_chars
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


def local_hosts(host: str, allowed: tuple[str, ...] = ()) -> frozenset[str] | None:
    """The host names a server bound to ``host`` answers to: its address, the loopback names and
    ``allowed``; None (any) for a server bound to every interface with nothing allowed named."""
    if host in ("0.0.0.0", "::", "") and not allowed:
        return None
    names = {host, "localhost", "127.0.0.1", "::1", *allowed}
    return frozenset(n.strip("[]").lower() for n in names)


def create_app(service: Service, hosts: frozenset[str] | None = None) -> FastAPI:
    """The service's app; the lifespan starts the batcher and, at shutdown, drains it. Given ``hosts``
    (``local_hosts``), requests for other host names, and POSTs from pages of other sites, get 403."""

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
    app.add_middleware(Envelope, service=service, hosts=hosts)
    install_error_handlers(app)
    app.include_router(service_routes(service))
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    default_schema = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _describe_limits(default_schema(), service)
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]
    return app


@contextmanager
def serve_in_thread(service: Service, timeout: float = 10.0) -> Iterator[str]:
    """Serve ``service`` with uvicorn on a free loopback port in a thread of this process for the
    block (a notebook, a test, a benchmark); yields its URL."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_app(service, local_hosts("127.0.0.1"))
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="sieveqa-serve", daemon=True)
    thread.start()
    pause = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if server.started or not thread.is_alive():
            break
        pause.wait(0.01)
    if not server.started:
        server.should_exit = True
        thread.join(timeout)
        raise RuntimeError(f"the server did not start on 127.0.0.1:{port} within {timeout:g} s")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
