"""What an answering method is: a class with a frozen options dataclass, ``load`` and ``run``.

A method chooses the answer among a question's retrieved passages. Its options dataclass is the one
place its settings are declared: each field (with its ``help``) becomes a flag of ``sieveqa answer``,
``eval-answers`` and ``serve``, and a key ``load_answerer`` accepts, so defaults cannot drift between
them. ``load`` builds the method from options (loading models by name); ``run`` answers one question;
``with_settings`` is the one hook for per-request settings (a reader's budget). Methods are found by
name through ``sieveqa.registry`` (``register_method``): adding one is its own file plus one
registration.
"""

from __future__ import annotations

import copy
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from sieveqa import registry
from sieveqa.data.corpus import IndexedPassage
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.fields import typed
from sieveqa.runtime.answer.options import MethodOptions

__all__ = ["AnswerMethod", "AnswerRun", "Found", "MethodOptions", "ModelSettings", "method_options"]


@dataclass(frozen=True)
class Found:
    """One answer: a sentence (by index) of a passage, or a ``span`` of its text (a reader's
    extracted answer; ``sentence`` is then -1), with its scores."""

    passage: IndexedPassage
    sentence: int
    score: float
    passage_score: float | None = None
    span: tuple[int, int] | None = None
    #: P(the answer is right), where the method's confidence is calibrated for its models.
    confidence: float | None = None
    #: What each stage said of this answer, by name (a passage reranker's logit of its passage, ...):
    #: what the confidence reads beside ``score`` (see each method's ``signals``).
    signals: dict[str, float] | None = None

    @property
    def bounds(self) -> tuple[int, int]:
        """Characters of the answer in the passage's text."""
        return self.span if self.span is not None else self.passage.spans[self.sentence]

    @property
    def text(self) -> str:
        a, b = self.bounds
        return self.passage.text[a:b]

    def as_dict(self) -> dict[str, Any]:
        """The answer as JSON (the CLI's ``--json`` and the HTTP service's ``/answer``)."""
        a, b = self.bounds
        return {
            "answer": self.text,
            "score": round(self.score, 6),
            "passage_score": None if self.passage_score is None else round(self.passage_score, 6),
            "confidence": None if self.confidence is None else round(self.confidence, 6),
            "signals": {k: round(v, 6) for k, v in (self.signals or {}).items()},
            "document": self.passage.doc_id,
            "title": self.passage.title,
            "location": self.passage.location(a),
            "passage_id": self.passage.id,
            "passage": self.passage.text,
            "answer_span": [a, b],
        }


@dataclass
class AnswerRun:
    """What a method made of one question's passages: answers best first (``ranking`` is the full
    sentence ranking where the method has one), the passages' scores, and the cost."""

    answers: list[Found]
    passage_scores: list[float] | None
    ranking: list[Found] | None
    cost: Cost = field(default_factory=Cost)
    retrieval_seconds: float = 0.0
    #: False when the best answer's confidence is below the answerer's ``min_confidence`` (the
    #: answers are then best guesses, shown as such) or there is no answer.
    answered: bool = True

    @property
    def confidence(self) -> float | None:
        """The best answer's calibrated confidence (None: uncalibrated, or no answer)."""
        return self.answers[0].confidence if self.answers else None

    @property
    def inferences(self) -> int:
        """Transformer input sequences run (a passage window or a sentence pair each)."""
        return self.cost.sequences


@dataclass(frozen=True)
class ModelSettings:
    """Where and how a method's models run (the same for every method)."""

    device: str = "auto"
    precision: str = "auto"
    batch_size: int | None = None
    backend: str = "torch"

    def model(self, name: str, expect: type | tuple[type, ...], option: str, want: str) -> Any:
        """The model ``name`` (shipped name or folder), of a kind in ``expect``, configured."""
        from sieveqa.models.zoo import load_model

        return load_model(name, expect, option, want).configure(**dataclasses.asdict(self))

    def ranker(self, name: str, **overrides: Any) -> Any:
        """The ranker ``name`` with its saved policy (a cascade's drop ratios) or ``overrides`` of
        it, configured."""
        from sieveqa.runtime.policy import load_ranker

        return load_ranker(name, **dataclasses.asdict(self), **overrides)


class AnswerMethod(ABC):
    """One way of choosing the answer among retrieved passages."""

    #: The name ``--method`` takes (set by each registered method).
    name: ClassVar[str] = ""
    options_class: ClassVar[type[MethodOptions]] = MethodOptions
    #: What a request may change per question (see ``with_settings``).
    request_settings: ClassVar[tuple[str, ...]] = ()
    #: The signal a judge's logit gives its answers (None: it takes no ``judge`` option).
    judge_signal: ClassVar[str | None] = None
    #: Its options a budget may move on the loaded method (they load no model; see ``lightened``).
    budget_levers: ClassVar[tuple[str, ...]] = ()
    #: The most answers it gives a question, whatever ``top`` asks (None: up to ``top``).
    most_answers: ClassVar[int | None] = None

    #: The models' names or folders by role, where ``load`` loaded them (for reports).
    model_names: dict[str, str]

    @classmethod
    @abstractmethod
    def load(cls, options: Any, settings: ModelSettings) -> Self:
        """The method with the models its ``options`` name, loaded with ``settings``."""

    @abstractmethod
    def run(self, question: str, passages: Sequence[IndexedPassage], top: int) -> AnswerRun:
        """The ``top`` answers among ``passages`` (retrieval order, at least one)."""

    @property
    def signals(self) -> tuple[str, ...]:
        """The names of the signals its answers carry beside their score (``Found.signals``)."""
        return ()

    def with_settings(self, **settings: Any) -> AnswerMethod:
        """This method with one request's settings (names from ``request_settings``; None leaves
        one as it is); the one hook a server uses, so it knows no method class."""
        given = sorted(k for k, v in settings.items() if v is not None)
        if given:
            raise ConfigError(f"{', '.join(given)}: --method {self.name} takes no per-request settings")
        return self

    def lightened(self, judge: str | None = None, **levers: Any) -> AnswerMethod:
        """This method with stages a budget shortens or drops (options named in ``budget_levers``;
        None leaves one as it is): ``judge="none"`` drops the judge of a method that has one. The
        loaded method is unchanged; a lever needing a model it did not load is refused."""
        given = sorted(k for k, v in levers.items() if v is not None and k not in self.budget_levers)
        if given:
            raise ConfigError(f"{', '.join(given)}: a budget cannot move these on --method {self.name}")
        names = dict(getattr(self, "model_names", {}))
        dropped = judge is not None and judge.lower() == "none"
        if judge is None or judge == names.get("judge") or (dropped and getattr(self, "judge", None) is None):
            return self
        if not dropped:
            raise ConfigError(f"--judge {judge}: a budget only drops the loaded judge (none), it loads none")
        method = copy.copy(self)
        method.judge = None  # type: ignore[attr-defined]  # every method with a judge_signal has one
        method.model_names = {role: name for role, name in names.items() if role != "judge"}
        return method

    @property
    def system(self) -> str:
        """``BACKEND:PRECISION`` its (first) model's layers run at, as configured."""
        from sieveqa.models.encoder_model import EncoderModel

        for value in vars(self).values():
            inner = getattr(value, "ranker", None)  # under a BM25 fusion
            for found in (value, getattr(value, "model", None), inner, getattr(inner, "model", None)):
                if isinstance(found, EncoderModel):
                    return f"{found.backend}:{found.precision}"
        return "none:none"

    def describe(self) -> dict[str, Any]:
        """What a report records about the method beyond its name (models, fusion, ...)."""
        return {"models": dict(getattr(self, "model_names", {}))}


def method_options(name: str, given: Mapping[str, Any]) -> tuple[type[AnswerMethod], MethodOptions]:
    """The method class registered as ``name`` and its options from ``given`` (None values left
    out); a key the method does not take is refused, naming the methods that do."""
    cls: type[AnswerMethod] = registry.answer_method(name).method_class()
    fields = {f.name for f in dataclasses.fields(cls.options_class)}
    values = {k: v for k, v in given.items() if v is not None}
    for key in values:
        if key not in fields:
            takers = [
                spec.name
                for spec in registry.answer_methods()
                if key in {f.name for f in dataclasses.fields(spec.options_class())}
            ]
            flag = "--" + key.replace("_", "-")
            where = f"it is for {', '.join(takers)}" if takers else "no method takes it"
            raise ConfigError(f"{flag} is not an option of --method {name} ({where})")
    checked = typed(cls.options_class, values, f"--method {name}")
    for f in dataclasses.fields(cls.options_class):  # values with a parser are parsed before any model loads
        if f.name in checked and "parse" in f.metadata:
            f.metadata["parse"](checked[f.name])
    return cls, cls.options_class(**checked)
