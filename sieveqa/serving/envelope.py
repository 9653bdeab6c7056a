"""The ASGI envelope around the app: a body over the limit is refused (413) before it is read whole,
a body of another declared type is read as the JSON it should be, every response gets
``x-total-time``, requests (done and in progress) and latency are counted per endpoint, and a bug
of ours is logged once.

Local means local: given the host names the server answers to (``serve`` gives its address,
``localhost`` and ``--allowed-host``), a request for any other ``Host`` is refused (403), so a web
page cannot reach the server through DNS rebinding, and so is a POST a browser marks as sent from
another site (``Sec-Fetch-Site: cross-site``, or an ``Origin`` outside those names): a page may send
``text/plain`` without asking first, and it would be read as JSON.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import urlsplit

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sieveqa.serving.errors import error_response
from sieveqa.serving.service import Service

__all__ = ["ROUTES", "Envelope"]

log = logging.getLogger("sieveqa.serving")
#: The endpoints metrics are counted under (any other path: ``other``).
ROUTES = {"/rerank", "/v1/rerank", "/v2/rerank", "/answer", "/health", "/info", "/metrics", "/"}


class Envelope:
    """Pure ASGI around the app: refuses bodies over the limit (413) before they are read whole,
    adds ``x-total-time`` and counts requests (done and in progress) and latency per endpoint."""

    def __init__(self, app: ASGIApp, service: Service, hosts: frozenset[str] | None = None) -> None:
        self.app, self.service, self.hosts = app, service, hosts

    def _foreign(self, scope: Scope) -> str | None:
        """Why this request comes from outside the names the server answers to (None: it does not)."""
        if self.hosts is None:
            return None
        headers = dict(scope["headers"])
        host = _hostname(headers.get(b"host", b"").decode("latin-1"))
        if host not in self.hosts:
            name = host or "(none)"
            return f"Host {name!r} is not a name this server answers to (serve --allowed-host adds one)"
        if scope["method"] == "POST":
            origin = headers.get(b"origin")
            site = headers.get(b"sec-fetch-site", b"")
            if site == b"cross-site" or (
                origin is not None and _hostname(urlsplit(origin.decode("latin-1")).netloc) not in self.hosts
            ):
                return "a request sent by a page of another site is refused"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        endpoint = scope["path"] if scope["path"] in ROUTES else "other"
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

        self.service.metrics.in_progress.labels(endpoint).inc()  # every path below ends in finally
        try:
            if why := self._foreign(scope):
                await error_response(403, "forbidden", why, path=scope["path"])(scope, receive, timed)
                return
            headers = dict(scope["headers"])
            declared = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            json_declared = declared == b"application/json" or declared.endswith(b"+json")
            if scope["method"] == "POST" and not json_declared:
                if declared.startswith(b"multipart/"):
                    await error_response(
                        415,
                        "unsupported_media_type",
                        f"send the body as JSON, not {declared.decode()}",
                        path=scope["path"],
                    )(scope, receive, timed)
                    return
                # curl -d sends JSON as a form, others as text/plain or with no type: every body is read
                # as the JSON it should be (a body that is not JSON gets the usual 422 naming the problem).
                rest = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
                scope = {**scope, "headers": [*rest, (b"content-type", b"application/json")]}
            if not length.isdigit() or int(length) > limit:
                why = "is not a number" if not length.isdigit() else f"is over {limit} bytes"
                await error_response(
                    413 if length.isdigit() else 400,
                    "too_large" if length.isdigit() else "validation",
                    f"Content-Length {why}",
                    path=scope["path"],
                )(scope, receive, timed)
            else:
                await self.app(scope, limited, timed)
        except Exception as exc:  # a bug of ours: logged here once, not re-raised to the server
            log.exception("unexpected error in %s %s", scope.get("method"), scope["path"], exc_info=exc)
            if status == 500:  # nothing sent yet
                await error_response(
                    500, "internal", "internal error (logged by the server)", path=scope["path"]
                )(scope, receive, timed)
        finally:
            m = self.service.metrics
            m.in_progress.labels(endpoint).dec()
            m.requests.labels(endpoint, str(status)).inc()
            m.latency.labels(endpoint).observe(time.perf_counter() - started)


def _hostname(netloc: str) -> str:
    """The host name of a ``Host`` header or an origin's netloc, lower case, without port or brackets."""
    try:
        return urlsplit(f"//{netloc}").hostname or ""
    except ValueError:  # a malformed port or bracket
        return ""
