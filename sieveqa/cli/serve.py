"""``sieveqa serve``: the HTTP service (rerank, answer, health, metrics, web page) with uvicorn."""

from __future__ import annotations

import errno
import functools
import socket
from pathlib import Path
from typing import Annotated, Any

import typer

from sieveqa.cli._app import (
    BackendOpt,
    BatchOpt,
    DeviceOpt,
    LongTextsOpt,
    PrecisionOpt,
    app,
    check_device,
    console,
)
from sieveqa.cli._options import Setting, given_settings, merge, settings_command, settings_of, was_given
from sieveqa.cli.answer import BudgetMsOpt, ConfidenceOpt, MinConfidenceOpt, budget_line
from sieveqa.errors import ConfigError, require_extra
from sieveqa.serving.settings import DEFAULT_HEAP, check_heap, configure_heap


@functools.cache
def serve_settings() -> dict[str, Setting]:
    from sieveqa.cli.answer import method_settings
    from sieveqa.serving.settings import Batching, Limits

    return merge(
        list(method_settings().values())
        + settings_of(Limits, "serve", panel="Limits")
        + [
            # "max_tokens" alone would read as a limit on the request; on the command line it is the batch's.
            Setting("max_batch_tokens", s.type, s.help, s.default, s.owners, "Micro-batching")
            if s.name == "max_tokens"
            else s
            for s in settings_of(Batching, "serve", panel="Micro-batching")
        ]
    )


#: Seconds an idle connection is kept open (load balancers idle at 60 s: above it, as advised).
KEEP_ALIVE_S = 75


def check_port(host: str, port: int) -> None:
    """Refuse a port that is out of range or taken, before any model loads."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port}: must be in 0..65535")
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as err:
        why = "is in use" if err.errno == errno.EADDRINUSE else f"cannot be bound ({err.strerror})"
        raise ConfigError(f"--host {host} --port {port}: the address {why}") from None


_HOST_HELP = "another host name clients may reach the server by (a proxy's, a LAN name); repeatable"
AllowedHostOpt = Annotated[list[str] | None, typer.Option("--allowed-host", help=_HOST_HELP)]
_ALIAS_HELP = "another name a request's model may give (a Cohere client's rerank-v3.5); repeatable"
ModelAliasOpt = Annotated[list[str] | None, typer.Option("--model-alias", help=_ALIAS_HELP)]
_HEAP_HELP = "heap settings: glibc (its own) or fixed (flatter memory, 1.85x the CPU a request)"
HeapOpt = Annotated[str, typer.Option("--heap", help=_HEAP_HELP)]


@app.command(cls=settings_command(serve_settings))
def serve(
    ctx: typer.Context,
    model: Annotated[
        str, typer.Option("--model", "-m", help="the /rerank model: a shipped name or a folder")
    ] = "default",
    index: Annotated[
        Path | None,
        typer.Option("--index", "-i", help="a corpus index (sieveqa index corpus) for /answer and /"),
    ] = None,
    method: Annotated[str, typer.Option(help="/answer's method (as sieveqa answer --method)")] = "peasi",
    retrieve: Annotated[int, typer.Option(help="/answer: passages retrieved per question")] = 20,
    host: Annotated[str, typer.Option(help="address to listen on (0.0.0.0: every interface)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
    grace: Annotated[
        float, typer.Option(help="seconds to finish requests in flight after SIGINT/SIGTERM")
    ] = 30.0,
    min_confidence: MinConfidenceOpt = None,
    confidence: ConfidenceOpt = None,
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = "auto",
    backend: BackendOpt = "torch",
    batch_size: BatchOpt = None,
    budget_ms: BudgetMsOpt = None,
    warm_up: Annotated[
        bool,
        typer.Option(help="run the ranker once at each batch shape before serving (bf16/fp16 only)"),
    ] = True,
    allowed_host: AllowedHostOpt = None,
    model_alias: ModelAliasOpt = None,
    heap: HeapOpt = DEFAULT_HEAP,
    long_texts: LongTextsOpt = "windows",
) -> None:
    """Serve a ranker over HTTP: POST /rerank, POST /answer (with --index), GET /health, GET /metrics,
    and a question page at / . Concurrent /rerank requests share forward passes (micro-batching).

    Listens on 127.0.0.1 unless --host says otherwise; SIGTERM finishes the requests in flight first.
    """
    uvicorn = require_extra("uvicorn", "serve", "sieveqa serve")
    require_extra("fastapi", "serve", "sieveqa serve")
    from sieveqa.cli.answer import method_settings
    from sieveqa.runtime.policy import check_long_texts
    from sieveqa.serving.app import create_app, local_hosts
    from sieveqa.serving.service import Service
    from sieveqa.serving.settings import Batching, Limits

    values = given_settings(ctx)
    answer_options = {k: values.pop(k) for k in list(values) if k in method_settings()}
    batching_values = {"max_tokens": values.pop("max_batch_tokens")} if "max_batch_tokens" in values else {}
    batching_values |= {k: values.pop(k) for k in ("max_wait_ms",) if k in values}
    limits, batching = Limits(**values), Batching(**batching_values)
    check_device(device, precision, backend)
    if budget_ms is not None and index is None:
        raise ConfigError("--budget-ms goes with --index: it chooses how /answer runs")
    levers: dict[str, Any] = {"retrieve": retrieve, "backend": backend}
    if budget_ms is not None:  # the budget chooses the levers not typed, among settings with those typed
        levers = {n: (v if was_given(ctx, n) else None) for n, v in levers.items()}
    check_long_texts(long_texts)  # before any model loads
    check_port(host, port)
    configure_heap(check_heap(heap))  # before the models load, for the whole process
    service = Service.load(
        model,
        None if index is None else str(index),
        method,
        device,
        precision,
        batch_size,
        limits,
        batching,
        **levers,
        confidence=confidence,
        min_confidence=min_confidence,
        budget_ms=budget_ms,
        warm_up=warm_up,
        aliases=tuple(model_alias or ()),
        long_texts=long_texts,
        **answer_options,
    )
    where = f"http://{host}:{port}"
    console.print(f"sieveqa serving {model} ({service.kind}) at {where}  [dim]docs: {where}/docs[/dim]")
    if service.warmed_up[0]:
        shapes, seconds = service.warmed_up
        console.print(f"[dim]warmed up {shapes} batch shapes in {seconds:.1f} s[/dim]")
    if index is not None:
        console.print(f"answering over {index} with {method}: the page is {where}/")
        if service.answerer is not None and service.answerer.budget is not None:
            console.print(f"[dim]{budget_line(service.answerer.budget)}[/dim]")
    # Keep-alive past a busy client's pause between requests (uvicorn's 5 s closed connections a client
    # was reusing: 530 ReadErrors in 20 minutes of RAG traffic, docs/RESULTS.md, issue 42).
    hosts = local_hosts(host, tuple(allowed_host or ()))
    config = uvicorn.Config(
        create_app(service, hosts), host=host, port=port, timeout_graceful_shutdown=grace,
        log_level="warning", timeout_keep_alive=KEEP_ALIVE_S,
    )  # fmt: skip

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: object) -> None:
            service.drain()  # /health says "draining" from the signal on, not only at the end
            super().handle_exit(sig, frame)

    Server(config).run()
