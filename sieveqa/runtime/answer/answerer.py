"""Answering questions over a corpus index: retrieve passages, then let an answering method choose.

The methods (``sieveqa.runtime.answer.sentence``: peasi, peasi-all, pointwise, cascade;
``sieveqa.runtime.answer.reading``: reader, tower, skyline) are registered by name in
``sieveqa.registry``; ``load_answerer`` builds one from its options. ``run`` works on passages given by
the caller (a labelled benchmark); ``answer`` retrieves them from the index first. Nothing here keeps
per-call state, so one Answerer can serve several threads.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sieveqa import registry
from sieveqa.data.corpus import RETRIEVERS, CorpusIndex, Embedder, IndexedPassage
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.profiling import stage
from sieveqa.runtime.answer.budget import Choice
from sieveqa.runtime.answer.budgeted import choose_for, load_within, models_text, run_at
from sieveqa.runtime.answer.confidence import LOCAL_CONFIDENCE, Confidence, load_confidence
from sieveqa.runtime.answer.judge import attach_judge, judged
from sieveqa.runtime.answer.method import AnswerMethod, AnswerRun, Found, ModelSettings, method_options
from sieveqa.runtime.answer.questions import MAX_QUESTION_CHARS, check_question_length

log = logging.getLogger(__name__)

__all__ = [
    "CONFIDENCES", "Answer", "AnswerRun", "Answerer", "Found",
    "load_answerer", "method_names",
]  # fmt: skip

#: Which answers carry a confidence: the best (what abstention reads: one judge pass a question) or
#: all (one judge pass per distinct answer passage).
CONFIDENCES = ("best", "all")


def method_names() -> list[str]:
    """The registered answering methods' names."""
    return [spec.name for spec in registry.answer_methods()]


@dataclass
class Answer(AnswerRun):
    """An ``AnswerRun`` for a question asked of an index."""

    question: str = ""
    passages: list[IndexedPassage] = field(default_factory=list)
    #: The setting ``--budget-ms`` (or a request's ``budget_ms``) chose, if one did.
    budget: Choice | None = None

    @property
    def best(self) -> Found | None:
        return self.answers[0] if self.answers else None

    def reason(self, answered: bool | None = None) -> str | None:
        """Why it is not answered (None when it is; ``answered``: as a request's own cut says)."""
        if self.answered if answered is None else answered:
            return None
        if not self.answers:
            return "no passage of the index matches the question" if not self.passages else (
                "the passages retrieved hold no answer"
            )  # fmt: skip
        return "the best answer's confidence is below the cut: the answers are best guesses"


class Answerer:
    """Answers questions with one method over a corpus index (or over given passages)."""

    def __init__(
        self,
        method: AnswerMethod,
        index: CorpusIndex | None = None,
        retrieve: int = 20,
        retriever: str = "bm25",
        embedder: Embedder | None = None,
        top: int = 1,
        confidence: Confidence | None = None,
        min_confidence: float | None = None,
        confidences: str = "best",
    ) -> None:
        if retrieve < 1 or top < 1:
            raise ConfigError(f"--retrieve and --top must be >= 1, got {retrieve} and {top}")
        _check_confidences(confidences)
        #: Which answers carry a confidence (``CONFIDENCES``); a call may ask otherwise.
        self.confidences = confidences
        #: The longest question taken (a server's ``--max-chars`` sets its own).
        self.max_question_chars = MAX_QUESTION_CHARS
        self.method, self.index = method, index
        self.retrieve, self.retriever, self.embedder, self.top = retrieve, retriever, embedder, top
        self.confidence = confidence
        if min_confidence is not None and confidence is None:
            raise ConfigError(
                f"--min-confidence: --method {method.name} has no confidence calibrated for its models "
                f"({_models(method)}); fit one with sieveqa calibrate-confidence"
            )
        _check_probability(min_confidence)
        #: Below this confidence the answer is a best guess ("no answer found"); 0 never abstains.
        self.min_confidence = (
            min_confidence if min_confidence is not None else confidence.min_confidence if confidence else 0.0
        )
        #: The setting ``--budget-ms`` chose (None: the settings were given).
        self.budget: Choice | None = None
        #: Whether ``min_confidence`` was given (a budget then keeps the confidence, or refuses).
        self.abstention_asked = min_confidence is not None

    def with_method(self, method: AnswerMethod, retrieve: int | None = None) -> Answerer:
        """This answerer with another method (a request's settings) or number of passages to
        retrieve, all else shared; its confidence too, where it applies to the method's models and
        signals (a method without its judge: none)."""
        calibrated = self.confidence if _applies(self.confidence, method) else None
        out = Answerer(
            method, self.index, retrieve or self.retrieve, self.retriever, self.embedder, self.top,
            calibrated, self.min_confidence if calibrated is not None else None, self.confidences,
        )  # fmt: skip
        out.budget, out.abstention_asked = self.budget, self.abstention_asked
        out.max_question_chars = self.max_question_chars
        return out

    def within(self, budget_ms: float, keep_confidence: bool | None = None) -> Answerer:
        """This answerer at the measured setting of its method and backend that answers best within
        ``budget_ms`` at p50 (``budget_choice``): passages retrieved, drop ratios and the method's
        ``budget_levers`` move, the judge or second look may be dropped; the models stay as loaded."""
        return self.at(self.budget_choice(budget_ms, keep_confidence))

    def at(self, choice: Choice, method: AnswerMethod | None = None) -> Answerer:
        """This answerer (with ``method``: a request's own settings) at a setting ``budget_choice``
        chose; one new Answerer, nothing measured or read. A setting the calibrated confidence was not
        fitted for (a stage dropped, the choice moved) answers without it, and says so."""
        lighter, choice, keeps = run_at(method or self.method, self.confidence, choice)
        out = self.with_method(lighter, choice.setting.retrieve)
        if not keeps:
            out.confidence, out.min_confidence = None, 0.0
        out.budget = choice
        return out

    def budget_choice(self, budget_ms: float, keep_confidence: bool | None = None) -> Choice:
        """The measured setting of this answerer's method, models and backend that answers best within
        ``budget_ms`` at p50, one that keeps its confidence first; with ``keep_confidence`` (default:
        where a ``min_confidence`` was given) only those (``budget.choose_for``)."""
        keep = self.abstention_asked if keep_confidence is None else keep_confidence
        return choose_for(self.method, self.confidence, budget_ms, keep)

    # -- over an index ---------------------------------------------------------------------------

    def refresh(self) -> CorpusIndex:
        """The index at its newest generation (a writer may have added one since the last question);
        the old one is let go, and its generation removed once no thread or process holds it."""
        if self.index is None:
            raise ConfigError("this Answerer has no corpus index; give passages to run() instead")
        index = self.index.latest()
        if index is not self.index:
            self.index = index
            index.sweep()
        return index

    def answer(self, question: str, top: int | None = None, confidences: str | None = None) -> Answer:
        """The ``top`` answers to ``question`` from the index, best first, with the best one's
        confidence (``confidences="all"``: every one's); ``answered`` is False when the confidence
        is below ``min_confidence`` or nothing was found (``best`` is then a guess, or None)."""
        return self.answer_many([question], top, confidences)[0]

    def answer_many(
        self, questions: Iterable[str], top: int | None = None, confidences: str | None = None
    ) -> list[Answer]:
        """Retrieve, then ``run``, for each question (retrieval is batched); ``top`` answers each and
        ``confidences`` (``CONFIDENCES``) which carry a confidence (defaults: this Answerer's)."""
        if isinstance(questions, str):
            raise ConfigError("questions must be a list of strings, not one string (answer() takes one)")
        questions = list(questions)
        for i, question in enumerate(questions):  # the CLI and HTTP refuse these too
            which = "the question" if len(questions) == 1 else f"question {i + 1}"
            if not isinstance(question, str) or not question.strip():
                raise ConfigError(
                    f"{which} is empty" if isinstance(question, str) else f"{which} is not a string"
                )
            check_question_length(question, which, self.max_question_chars)
        if top is not None and (not isinstance(top, int) or isinstance(top, bool) or top < 1):
            raise ConfigError(f"top must be an integer >= 1, got {top!r}")
        if confidences is not None:
            _check_confidences(confidences)
        started = time.perf_counter()
        index = self.refresh()
        with stage("retrieval"):
            hits = index.search_many(questions, self.retrieve, self.retriever, self.embedder)
        retrieval = (time.perf_counter() - started) / max(len(questions), 1)
        out = []
        for question, found in zip(questions, hits, strict=True):
            t0 = time.perf_counter()
            with stage("retrieval"):
                passages = index.passages([pid for pid, _ in found])
            run = self.run(question, passages, top, confidences)
            fields_ = {f.name: getattr(run, f.name) for f in dataclasses.fields(run)}
            fields_["retrieval_seconds"] = retrieval + time.perf_counter() - t0 - run.cost.seconds
            out.append(Answer(**fields_, question=question, passages=passages, budget=self.budget))
        return out

    # -- over given passages ---------------------------------------------------------------------

    def run(
        self,
        question: str,
        passages: Sequence[IndexedPassage],
        top: int | None = None,
        confidences: str | None = None,
    ) -> AnswerRun:
        """Choose the answer among ``passages`` (retrieval order) with this Answerer's method; the
        best answer carries a confidence, and with ``confidences="all"`` every one does."""
        started = time.perf_counter()
        if not passages:
            return AnswerRun([], None, None, Cost(seconds=time.perf_counter() - started), answered=False)
        wanted = top if top is not None else self.top
        if wanted < 1:
            raise ConfigError(f"top must be >= 1, got {wanted}")
        run = self.method.run(question, list(passages), wanted)
        if self.confidence is not None and (confidences or self.confidences) == "all":
            judge, signal = getattr(self.method, "judge", None), self.method.judge_signal
            run = judged(judge, question, run, signal, every=True) if signal is not None else run
        run.cost.seconds = time.perf_counter() - started
        if (calibrated := self.confidence) is not None:  # the best answer's always: it abstains
            run.answers = [
                replace(f, confidence=calibrated(f.score, f.signals))
                if i == 0 or calibrated.reads(f.signals)
                else f
                for i, f in enumerate(run.answers)
            ]
        run.answered = self.answers(run)
        return run

    def answers(self, run: AnswerRun, min_confidence: float | None = None) -> bool:
        """Whether ``run`` gives an answer rather than a best guess, at ``min_confidence`` (default:
        this answerer's)."""
        threshold = self.min_confidence if min_confidence is None else min_confidence
        return bool(run.answers) and (run.confidence is None or run.confidence >= threshold)


def load_answerer(
    method: str = "peasi",
    index: str | None = None,
    retrieve: int | None = None,
    retriever: str = "bm25",
    top: int = 1,
    device: str = "auto",
    precision: str = "auto",
    batch_size: int | None = None,
    confidence: str | None = None,
    min_confidence: float | None = None,
    backend: str | None = None,
    budget_ms: float | None = None,
    fitting: bool = False,
    local_confidence: bool = True,
    confidences: str = "best",
    **options: Any,
) -> Answerer:
    """An Answerer with the registered ``method``, its ``options`` (its options dataclass's fields:
    ``reranker``, ``fusion``, ``budget``, ...; an option it does not take is refused) and the models
    they name loaded by name or folder, over the corpus index folder ``index``. ``confidence`` is a
    confidence file (default: the shipped one); ``min_confidence`` where the answerer abstains
    (default: the calibration's dev-chosen threshold). ``retrieve`` defaults to 20 passages, ``backend``
    to torch. ``budget_ms`` chooses ``retrieve``, the backend and precision, the drop ratios and the
    stages it may drop from the settings measured on dev (``runtime.answer.budget``), among those with
    the ones given here; ``answerer.budget`` says what it chose, and its ``note`` what it could not
    keep (the budget, the confidence). The
    default judge loads only where the calibration was fitted with it, or with ``fitting`` (one is fitted).
    Without ``confidence``, a calibration fitted for the index (its ``confidence.json``, written by
    ``calibrate-confidence --index``) is read before the shipped one, unless ``local_confidence`` is off.
    ``confidences``: which answers carry a confidence (``CONFIDENCES``)."""
    _check_confidences(confidences)
    if budget_ms is not None:
        given = {
            "retrieve": retrieve,
            "backend": backend,
            "precision": None if precision == "auto" else precision,
        }
        within = load_within(
            load_answerer, budget_ms, method, index, retriever, top, device, batch_size, confidence,
            min_confidence, options,
            {name: value for name, value in given.items() if value is not None}, fitting,
        )  # fmt: skip
        within.confidences = confidences
        return within
    retrieve, backend = retrieve or 20, backend or "torch"
    if retriever not in RETRIEVERS:
        raise ConfigError(f"--retriever must be one of {', '.join(RETRIEVERS)}, got {retriever!r}")
    cls, checked = method_options(method, options)
    _check_probability(min_confidence)  # before any model loads
    calibration = load_confidence(confidence).get(method)
    if min_confidence is not None and calibration is None:
        where = confidence or "the shipped confidence file"
        raise ConfigError(
            f"--min-confidence: {where} has no calibration for --method {method} "
            "(fit one with sieveqa calibrate-confidence)"
        )
    corpus = CorpusIndex.open(index) if index is not None else None  # a bad index fails before models load
    if corpus is not None and confidence is None and local_confidence:
        local = load_confidence(corpus.path / LOCAL_CONFIDENCE, missing_ok=True).get(method)
        calibration = local or calibration
    if corpus is not None and retriever not in corpus.retrievers:
        raise ConfigError(
            f"--retriever {retriever}: {index} has {', '.join(corpus.retrievers)} only "
            "(build it with --retriever hybrid for dense vectors)"
        )
    settings = ModelSettings(device, precision, batch_size, backend)
    # The default judge costs a pass a question that only a confidence reads: it loads where the
    # calibration was fitted with it, or while one is fitted (fitting); a judge the user names always.
    deferred = cls.judge_signal is not None and options.get("judge") is None and not fitting
    chosen = cls.load(replace(checked, judge="none") if deferred else checked, settings)
    named = chosen.model_names  # with the judge held back, as it would have loaded
    if deferred:
        named = {**named, "judge": checked.judge}  # type: ignore[attr-defined]  # (judge_signal)
        if calibration is not None and calibration.models == named:
            attach_judge(chosen, named["judge"], settings)
    embedder = None
    if retriever != "bm25" and corpus is not None:
        from sieveqa.models.embedder import SentenceEmbedder

        embedder = SentenceEmbedder().configure(device=device)
    if calibration is not None and not calibration.applies_to(chosen.model_names, chosen.signals):
        if confidence is not None or min_confidence is not None:
            if calibration.models != chosen.model_names:
                shown = named if "judge" in calibration.models else chosen.model_names
                raise ConfigError(
                    f"--confidence: the calibration of --method {method} was fitted for "
                    f"{_models(calibration.models)}, not {_models(shown)}"
                )
            missing = ", ".join(sorted(set(calibration.signals) - set(chosen.signals)))
            raise ConfigError(
                f"--confidence: the calibration of --method {method} reads the {missing} signal, "
                "which these settings do not give"
            )
        calibration = None  # the shipped calibration is for the shipped models only
    return Answerer(
        chosen, corpus, retrieve, retriever, embedder, top, calibration, min_confidence, confidences
    )


def _applies(confidence: Confidence | None, method: AnswerMethod) -> bool:
    """Whether ``confidence`` applies to ``method``'s answers: its signals (and its models, where the
    method names them)."""
    if confidence is None or not confidence.reads(dict.fromkeys(method.signals)):
        return False
    names = getattr(method, "model_names", None)
    return names is None or confidence.models == dict(names)


def _check_confidences(confidences: object) -> None:
    if confidences not in CONFIDENCES:
        raise ConfigError(f"--confidences must be one of {', '.join(CONFIDENCES)}, got {confidences!r}")


def _check_probability(min_confidence: float | None) -> None:
    if min_confidence is not None and min_confidence != min_confidence:  # NaN: no bound is broken
        raise ConfigError("--min-confidence: nan is not a number; give a probability in [0, 1]")
    if min_confidence is not None and not 0 <= min_confidence <= 1:
        raise ConfigError(f"--min-confidence must be a probability in [0, 1], got {min_confidence}")


def _models(models: dict[str, str] | AnswerMethod) -> str:
    return models_text(getattr(models, "model_names", {}) if isinstance(models, AnswerMethod) else models)


#: ``load_answerer``'s own arguments (the rest are the method's options).
_LOAD_ARGS = frozenset(inspect.signature(load_answerer).parameters) - {"method", "index", "options"}
#: Answerers ``answer()`` keeps, by index, method and checked options (the last few used).
_LOADED: OrderedDict[tuple[str, str, str], Answerer] = OrderedDict()
_KEPT = 4
_ANSWERING = threading.Lock()


def answer(question: str, index: str | Path, method: str = "peasi", top: int = 1, **options: Any) -> Answer:
    """Answer ``question`` over the corpus index folder ``index`` (``sieveqa index corpus`` builds
    one) in one call: ``answer("Who discovered penicillin?", index="my-index").best.text``. The
    answerer (``method`` with ``options``, as ``load_answerer`` takes them) is loaded on the first
    call and kept for the next ones with the same arguments; it follows the index as it grows.
    Calls from several threads take turns (an answerer's models serve one question at a time)."""
    folder = str(Path(index).resolve())  # the cwd may change between calls
    model_options = {k: v for k, v in options.items() if k not in _LOAD_ARGS}
    _, checked = method_options(method, model_options)  # one key per meaning, not per spelling
    loading = {k: v for k, v in options.items() if k in _LOAD_ARGS and v is not None}
    named_judge = model_options.get("judge") is not None  # a default judge may be held back (load_answerer)
    key = (folder, method, repr((checked, named_judge, sorted(loading.items()))))
    with _ANSWERING:
        answerer = _LOADED.get(key)
        if answerer is None:
            answerer = _LOADED[key] = load_answerer(method, folder, **options)
            while len(_LOADED) > _KEPT:
                _LOADED.popitem(last=False)
        _LOADED.move_to_end(key)
        return answerer.answer(question, top)
