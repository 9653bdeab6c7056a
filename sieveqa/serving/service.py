"""What the HTTP service does, apart from HTTP: check requests against the limits, queue reranking
for the micro-batcher, answer questions over the corpus index, and meter all of it.

Every refusal is a :class:`RequestError` (its HTTP status, the field at fault), before the model.

Which thread runs what: the event loop parses requests and awaits futures, nothing more. Checking a
``/rerank`` request (tokenizing it, for ``truncate: false``) runs in the loop's thread pool; scoring
runs on the micro-batcher's one thread; answering runs on the answer queue's one thread, a question
at a time. Both queues are bounded (429 with the Retry-After their measured rate gives), a request
that waits or runs past ``Limits.timeout_s`` gets a 503 and is cancelled, and a cancelled request
(a client gone, a deadline passed) is dropped when its turn comes, never worked on.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import ConfigError, SieveQAError
from sieveqa.models.base import Ranker
from sieveqa.runtime.answer.answerer import Answer, Answerer, load_answerer
from sieveqa.runtime.answer.budget import Choice
from sieveqa.runtime.policy import load_ranker, pair_model, read_long_texts
from sieveqa.runtime.policy import warm_up as warm_up_ranker
from sieveqa.serving.batcher import MicroBatcher, Scored
from sieveqa.serving.capacity import fit_to_deadline, full_length_rate, over_capacity
from sieveqa.serving.metrics import Metrics
from sieveqa.serving.recent import RecentResults, request_key
from sieveqa.serving.settings import Batching, Limits
from sieveqa.serving.wire import AnswerRequest, RerankRequest
from sieveqa.serving.worker import Job, ModelThread, QueueFullError, Worker

#: The request fields that change the ranker (``Ranker.request_settings`` says which it takes).
REQUEST_SETTINGS = ("alpha", "budget")
#: The /answer fields that change the method (``AnswerMethod.request_settings`` says which it takes).
ANSWER_SETTINGS = ("budget",)
#: Rankers kept for per-request settings.
_SETTINGS_CACHE = 32


class RequestError(SieveQAError):
    """A request the service refuses: ``status`` and ``kind`` go to the client with the message."""

    def __init__(self, status: int, kind: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.retry_after = status, kind, retry_after


@dataclass
class _Question(Job):
    answerer: Answerer
    question: str
    top: int
    settings: dict[str, Any]
    budget: Choice | None = None
    confidences: str | None = None


class AnswerQueue(Worker[_Question]):
    """Questions over the index, answered one at a time on one thread (the answerer's models are
    not shared between threads); ``retry_after`` comes from the measured seconds per question."""

    def __init__(self, max_queue: int, thread: ModelThread | None = None) -> None:
        super().__init__(max_queue, "sieveqa-answers", thread)

    def submit(
        self,
        answerer: Answerer,
        question: str,
        top: int,
        settings: dict[str, Any] | None = None,
        budget: Choice | None = None,
        confidences: str | None = None,
    ) -> Future[Answer]:
        """Queue a question for its ``top`` answers (``confidences``: which carry one), with the
        method's per-request ``settings`` and the setting its budget chose (``Answerer.budget_choice``,
        resolved once, before queueing); cancelling the future while it waits drops it."""
        return self._enqueue(_Question(1, answerer, question, top, settings or {}, budget, confidences))

    def _take(self) -> list[_Question]:
        return [self._pending.popleft()]

    def _work(self, jobs: list[_Question]) -> None:
        (job,) = jobs
        answerer = job.answerer
        if (job.settings or job.budget is not None) and answerer.index is not None:
            answerer.refresh()  # the server's own answerer sees a new generation first
        # This question's own method settings, through the method's hook, then its budget's setting.
        method = answerer.method.with_settings(**job.settings) if job.settings else None
        if job.budget is not None:
            answerer = answerer.at(job.budget, method)
        elif method is not None:
            answerer = answerer.with_method(method)
        job.future.set_result(answerer.answer(job.question, job.top, job.confidences))


class Service:
    """One loaded ranker (and, given an index, an answerer) serving many requests."""

    def __init__(
        self,
        ranker: Ranker,
        answerer: Answerer | None = None,
        name: str = "default",
        index: str | None = None,
        limits: Limits | None = None,
        batching: Batching | None = None,
        thread: ModelThread | None = None,
        aliases: tuple[str, ...] = (),
    ) -> None:
        self.ranker, self.answerer, self.name, self.index = ranker, answerer, name, index
        #: Names a request's ``model`` may give: the model's, a folder's own, ``serve``'s aliases.
        self.model_names = frozenset({name, Path(name).name, *aliases})
        #: Runs every model of this service: /rerank's batches and /answer's questions (worker.py says why).
        self.thread = thread or ModelThread()
        self.limits = limits = limits or Limits()
        if answerer is not None:
            answerer.max_question_chars = limits.max_chars
        batching = batching or Batching()
        self.model = pair_model(ranker)
        self.metrics = Metrics(lambda: self.queue_depth)
        self.batcher = self._micro_batcher(batching, limits)
        self.answers = AnswerQueue(limits.max_queue, self.thread)
        #: Recent /rerank results and those in flight, for a client's retry of the same request.
        self.recent = RecentResults(int(limits.result_cache_mb * 2**20))
        self._settings: OrderedDict[tuple[tuple[str, object], ...], Ranker] = OrderedDict()
        self._settings_lock = threading.Lock()
        self._draining = False
        #: Batch shapes the ranker ran at load (``load(warm_up=True)``), and the seconds it took.
        self.warmed_up: tuple[int, float] = (0, 0.0)

    @classmethod
    def load(
        cls,
        model: str = "default",
        index: str | None = None,
        method: str = "peasi",
        device: str = "auto",
        precision: str = "auto",
        batch_size: int | None = None,
        limits: Limits | None = None,
        batching: Batching | None = None,
        backend: str | None = "torch",
        warm_up: bool = True,
        aliases: tuple[str, ...] = (),
        long_texts: str = "windows",
        **answer_options: Any,
    ) -> Service:
        """The ranker ``model`` (a shipped name or folder; a cascade with its saved policy; reading
        ``long_texts`` as ``read_long_texts`` says) and, given a corpus ``index``, an answerer with
        ``method`` (``answer_options`` as ``load_answerer`` takes; ``backend`` None: torch for the
        ranker, the answerer's ``budget_ms`` chooses its own). With ``warm_up`` the ranker runs at each
        bucketed batch shape (bf16/fp16: ``sieveqa.batching``) and ``limits.max_texts`` is lowered to
        what it ranks within the deadline (``sieveqa.serving.capacity``)."""
        settings = {"device": device, "precision": precision, "batch_size": batch_size}
        thread = ModelThread()  # the models load on the thread that will run them
        warmed: list[float] = [0, 0.0]
        rate: list[float | None] = [None]

        def models() -> tuple[Ranker, Answerer | None]:
            answerer = None
            if index is not None:  # a bad index is refused before any model loads
                answerer = load_answerer(method, index, **answer_options, **settings, backend=backend)
            ranker = read_long_texts(load_ranker(model, **settings, backend=backend or "torch"), long_texts)
            if warm_up:
                warmed[:] = warm_up_ranker(ranker)
                rate[0] = full_length_rate(ranker)
            return ranker, answerer

        try:
            ranker, answerer = thread.call(models)
        except BaseException:
            thread.close()  # no service will own it
            raise
        name = None if index is None else Path(index).name  # /health: its name, not the server's path
        limits = fit_to_deadline(limits or Limits(), rate[0])  # a request within them finishes
        service = cls(ranker, answerer, model, name, limits, batching, thread, aliases)
        service.warmed_up = (int(warmed[0]), warmed[1])
        return service

    def _micro_batcher(self, batching: Batching, limits: Limits) -> MicroBatcher | None:
        """The queue that batches /rerank's questions (None where something else batches them)."""
        wait_s = batching.max_wait_ms / 1000
        return MicroBatcher(batching.max_tokens, wait_s, limits.max_queue, self.metrics.batch, self.thread)

    @property
    def _workers(self) -> list[Worker[Any]]:
        return [w for w in (self.batcher, self.answers) if w is not None]

    @property
    def kind(self) -> str:
        """What answers /rerank: a model kind (cross-encoder, cascade, ...) or ``ensemble``."""
        if hasattr(self.ranker, "members"):
            return "ensemble"
        return self.model.kind if self.model is not None else type(self.ranker).__name__

    @property
    def ready(self) -> bool:
        """Whether both workers run and take requests (not dead, not draining)."""
        return all(w.ready for w in self._workers) and not self.draining

    @property
    def draining(self) -> bool:
        """Whether shutdown has begun (a signal came, or the workers are stopping)."""
        return self._draining or any(w.stopping for w in self._workers)

    def drain(self) -> None:
        """Say "draining" on /health from now on; the requests in flight still finish."""
        self._draining = True

    def start(self) -> None:
        """Take requests (again, after a stop: a lifespan that ended does not end the service)."""
        self._draining = False
        for worker in self._workers:
            worker.start()

    def stop(self) -> None:
        for worker in self._workers:
            worker.stop()

    async def _await(self, submit: Any, *args: Any, key: bytes | None = None) -> Any:
        """Queue a job on a worker (``submit``, a worker's method) and await it within the deadline;
        a request cancelled or past its deadline cancels the job, which the worker then drops unless
        it had started. With a ``key``, an identical request's result kept or in flight is shared
        (:class:`~sieveqa.serving.recent.RecentResults`)."""
        try:
            if key is None:
                work = asyncio.wrap_future(submit(*args))
            else:
                work = self.recent.result(key, lambda: submit(*args))
            return await self.within_deadline(work, submit.__self__.retry_after)
        except QueueFullError as err:
            raise RequestError(429, "overloaded", str(err), retry_after=err.retry_after) from None

    async def within_deadline(self, work: Any, retry_after: Any) -> Any:
        """Await ``work`` for at most ``Limits.timeout_s`` (then cancel it: 503 with ``retry_after()``)."""
        try:
            return await asyncio.wait_for(work, self.limits.timeout_s)
        except TimeoutError:
            raise RequestError(
                503,
                "timeout",
                f"not done within {self.limits.timeout_s:g} s (the server's --timeout-s); retry later",
                retry_after=retry_after(),
            ) from None

    # -- /rerank --------------------------------------------------------------------------------

    def check_rerank(self, req: RerankRequest) -> tuple[RankingExample, int, Ranker]:
        """The request as one question with candidates, its token count, and the ranker it asks for
        (blank texts were refused by the wire model, as the schema says)."""
        if req.model is not None and req.model not in self.model_names:
            raise RequestError(
                400,
                "validation",
                f"model {req.model!r} is not served here: this server serves {Path(self.name).name!r} "
                "(send that, or start serve with --model-alias for this name)",
            )
        if req.texts is not None and req.documents is not None:
            raise RequestError(422, "validation", "give texts or documents, not both")
        if req.texts is None and req.documents is None:
            raise RequestError(400, "empty", "texts (or documents) is missing: nothing to rank")
        field_name = "texts" if req.texts is not None else "documents"
        texts = req.candidate_texts()
        if not texts:
            raise RequestError(400, "empty", f"{field_name} is empty: nothing to rank")
        for where, text in [("query", req.query), *((f"{field_name}[{i}]", t) for i, t in enumerate(texts))]:
            if len(text) > self.limits.max_chars:
                raise RequestError(
                    413, "too_large", f"{where}: {len(text)} characters, more than {self.limits.max_chars}"
                )
        if over := over_capacity(field_name, req.query, texts, self.model, self.limits.max_texts):
            raise RequestError(413, "too_large", over)
        ranker = self._ranker_for(req)
        example = RankingExample(
            Question("q", req.query), [Candidate(str(i), t) for i, t in enumerate(texts)]
        )
        tokens = self._tokens(req, texts, field_name)
        return example, tokens, ranker

    def _tokens(self, req: RerankRequest, texts: list[str], field_name: str) -> int:
        """The request's size for packing batches: about four characters a token, except with
        ``truncate: false``, which needs the tokenizer's count to refuse an overlong pair."""
        if self.model is None or req.truncate:
            return sum(len(req.query) + len(t) for t in texts) // 4 + 1
        # Tokenized once: the featurizer's cache (bounded in bytes) gives scoring these tokens back.
        features = self.model.featurize([req.query] * len(texts), texts)
        if not req.truncate and any(features.truncated):
            i = features.truncated.index(True)
            raise RequestError(
                413,
                "too_large",
                f"{field_name}[{i}]: the pair is longer than the model's {self.model.config.max_length} "
                "tokens (send truncate: true to cut it)",
            )
        return sum(features.lengths)

    def _ranker_for(self, req: RerankRequest) -> Ranker:
        """The server's ranker, or the ranker with this request's settings (cached), through the
        ranker's own ``with_settings`` hook."""
        settings = {name: getattr(req, name) for name in REQUEST_SETTINGS if getattr(req, name) is not None}
        if not settings:
            return self.ranker
        refused = sorted(set(settings) - set(self.ranker.request_settings))
        if refused:
            takes = ", ".join(self.ranker.request_settings) or "no per-request settings"
            raise RequestError(400, "validation", f"{' and '.join(refused)}: {self.name} takes {takes}")
        if len(settings) > 1:
            raise RequestError(422, "validation", f"give {' or '.join(settings)}, not both")
        key = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(settings.items()))
        with self._settings_lock:  # checks run on the loop's thread pool, several at once
            return self._cached_ranker(key, settings)

    def _cached_ranker(self, key: tuple[tuple[str, object], ...], settings: dict[str, Any]) -> Ranker:
        if key in self._settings:
            self._settings.move_to_end(key)
            return self._settings[key]
        try:
            ranker = self.ranker.with_settings(**settings)
        except ConfigError as err:
            raise RequestError(400, "validation", f"{next(iter(settings))}: {err}") from None
        self._settings[key] = ranker
        if len(self._settings) > _SETTINGS_CACHE:
            self._settings.popitem(last=False)
        return ranker

    async def rerank(self, req: RerankRequest) -> Scored:
        """Check (off the event loop: it may tokenize), queue and await one request's scores (an
        identical request's, kept or in flight, where there is one)."""
        example, tokens, ranker = await asyncio.to_thread(self.check_rerank, req)
        settings = tuple((name, getattr(req, name)) for name in REQUEST_SETTINGS)
        key = request_key(settings, req.query, [c.text for c in example.candidates])
        done = await self.score(example, tokens, ranker, key)
        self.metrics.queue_seconds.observe(done.queue_seconds)
        return done

    async def score(
        self, example: RankingExample, tokens: int, ranker: Ranker, key: bytes | None = None
    ) -> Scored:
        """One checked question's scores, from the micro-batcher (Ray Serve replicas batch otherwise),
        shared with identical requests by ``key``."""
        assert self.batcher is not None  # a service without one scores otherwise
        done: Scored = await self._await(self.batcher.submit, example, tokens, ranker, key=key)
        return done

    @property
    def queue_depth(self) -> int:
        """Requests waiting for a model, /rerank and /answer together."""
        return sum(w.depth for w in self._workers)

    # -- /answer --------------------------------------------------------------------------------

    async def answer(self, req: AnswerRequest) -> Answer:
        """Answer one question over the index, one question at a time on the answerer's models."""
        if self.answerer is None:
            raise RequestError(
                404, "not_found", "this server has no corpus index (start it with --index DIR)"
            )
        if len(req.question) > self.limits.max_chars:
            raise RequestError(
                413,
                "too_large",
                f"question: {len(req.question)} characters, more than {self.limits.max_chars}",
            )
        if req.min_confidence is not None and self.answerer.confidence is None:
            raise RequestError(
                400,
                "validation",
                f"min_confidence: --method {self.answerer.method.name} has no calibrated confidence "
                "for its models here",
            )
        settings = {name: getattr(req, name) for name in ANSWER_SETTINGS if getattr(req, name) is not None}
        refused = sorted(set(settings) - set(self.answerer.method.request_settings))
        if refused:
            takes = ", ".join(self.answerer.method.request_settings) or "no per-request settings"
            raise RequestError(
                400,
                "validation",
                f"{' and '.join(refused)}: --method {self.answerer.method.name} takes {takes}",
            )
        budget = None
        if req.budget_ms is not None:  # resolved here, once: a measured setting for the models as loaded
            try:
                asked = True if req.min_confidence is not None else None  # else: the server's flag
                budget = self.answerer.budget_choice(req.budget_ms, keep_confidence=asked)
            except ConfigError as err:
                why = str(err).removeprefix("--budget-ms: ")  # the field is named once
                raise RequestError(400, "validation", f"budget_ms: {why}") from None
        found: Answer = await self._await(
            self.answers.submit, self.answerer, req.question, req.top, settings, budget, req.confidences
        )
        self.metrics.layer_units.labels("answer").inc(found.cost.layer_units)
        self.metrics.inferences.labels("answer").inc(found.inferences)
        return found
