"""Running one request against the service, for every endpoint that ranks: cancelled when its client
goes away, its scores as probabilities where asked, its timing as headers (in milliseconds, as
text-embeddings-inference sends them)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import torch
from fastapi import Request, Response

from sieveqa.data.records import score_order
from sieveqa.errors import ConfigError
from sieveqa.runtime.answer.fusion import Fusion, lexical_scores
from sieveqa.serving.batcher import Scored
from sieveqa.serving.service import RequestError, Service
from sieveqa.serving.wire import RerankRequest

__all__ = ["ranked", "timing_headers", "unless_gone"]

T = TypeVar("T")

#: How often a waiting request checks whether its client is still there.
_GONE_POLL_S = 0.05


async def unless_gone(request: Request, work: Coroutine[Any, Any, T]) -> T:
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


def timing_headers(response: Response, queue: float, compute: float, inferences: int, units: int) -> None:
    response.headers["x-queue-time"] = f"{queue * 1000:.1f}"
    response.headers["x-compute-time"] = f"{compute * 1000:.1f}"
    response.headers["x-inferences"] = str(inferences)
    response.headers["x-layer-units"] = str(units)


async def ranked(
    service: Service, req: RerankRequest, request: Request, response: Response, probabilities: bool
) -> tuple[list[int], list[float], Scored]:
    """One rerank request run: the best ``top_n`` indices, every text's score (a probability where
    asked and the model gives logits; the fused score where the request fuses the first stage's), and
    what it took (set as timing headers on ``response``)."""
    fusion = _fusion(req)
    done = await unless_gone(request, service.rerank(req))
    shown = done.scores
    if probabilities and done.logits:
        shown = torch.tensor(shown, dtype=torch.float64).sigmoid().tolist()
    order = done.order
    if fusion.applies(req.retrieval_scores is not None):
        first = req.retrieval_scores or await asyncio.to_thread(
            lexical_scores, req.query, req.candidate_texts()
        )
        shown = fusion.combine(done.scores, first)
        order = score_order(shown)
    timing_headers(
        response, done.queue_seconds, done.cost.seconds, done.cost.sequences, done.cost.layer_units
    )
    return order[: req.top_n], shown, done


def _fusion(req: RerankRequest) -> Fusion:
    """The request's fusion, checked before any scoring (a bad one, or scores not one a text: 422)."""
    try:
        fusion = Fusion.parse(req.fusion if req.fusion is not None else "auto")
    except ConfigError as err:
        raise RequestError(422, "validation", f"fusion: {str(err).removeprefix('--fusion ')}") from None
    given, texts = req.retrieval_scores, req.candidate_texts()
    if given is not None and len(given) != len(texts):
        raise RequestError(
            422, "validation", f"retrieval_scores: {len(given)} scores for {len(texts)} texts (one a text)"
        )
    return fusion
