"""The reader methods: the anytime extractive reader answers with a span of a retrieved passage.

- ``reader``: every passage read at full depth (the standard baseline).
- ``tower`` (TowerBuilder): each passage read until its calibrated P(no answer) reaches ``threshold``.
- ``skyline`` (SkylineBuilder): ``budget`` layers per passage spent where the has-answer probability
  is highest (the learned policy when ``scheduler`` is given, else calibrated probabilities); a
  request may change the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Self

from sieveqa.data.corpus import IndexedPassage
from sieveqa.errors import ConfigError
from sieveqa.models.reader import ReaderModel
from sieveqa.models.skyline_policy import SkylinePolicy
from sieveqa.runtime.answer.method import AnswerMethod, AnswerRun, Found, MethodOptions, ModelSettings
from sieveqa.runtime.answer.schedulers import Schedule, run_schedule
from sieveqa.runtime.answer.towers import LiveTowers


@dataclass(frozen=True)
class ReaderOptions(MethodOptions):
    reader: str | None = field(
        default=None, metadata={"help": "the reader model (a folder: sieveqa train --arch reader)"}
    )


@dataclass(frozen=True)
class AdaptiveOptions(ReaderOptions):
    m: int | None = field(
        default=None,
        metadata={"help": "passages kept for the answer (default: tower 5, skyline 1, learned 3)"},
    )


@dataclass(frozen=True)
class TowerOptions(AdaptiveOptions):
    threshold: float = field(default=0.9, metadata={"help": "stop reading a passage at this P(no answer)"})


@dataclass(frozen=True)
class SkylineOptions(AdaptiveOptions):
    budget: float = field(default=2.0, metadata={"help": "layers per passage to spend"})
    scheduler: str | None = field(
        default=None, metadata={"help": "a learned policy (sieveqa train-scheduler); else probabilities"}
    )


class Reader(AnswerMethod):
    name = "reader"
    options_class: type[MethodOptions] = ReaderOptions

    def __init__(self, reader: ReaderModel, schedule: Schedule, policy: SkylinePolicy | None = None) -> None:
        self.reader, self.schedule, self.policy = reader, schedule, policy

    @classmethod
    def schedule_of(cls, options: Any) -> Schedule:
        return Schedule("standard")

    @classmethod
    def policy_of(cls, options: Any) -> str | None:
        """The learned scheduler's folder, where the method takes one."""
        return None

    @classmethod
    def load(cls, options: ReaderOptions, settings: ModelSettings) -> Self:
        if options.reader is None:
            raise ConfigError(
                f"--method {cls.name} needs --reader (a reader model: sieveqa train --arch reader)"
            )
        schedule, scheduler = cls.schedule_of(options), cls.policy_of(options)
        policy = SkylinePolicy.from_pretrained(scheduler) if scheduler is not None else None
        model = settings.model(
            options.reader, ReaderModel, "--reader", "a reader model (sieveqa train --arch reader)"
        )
        method = cls(model, schedule, policy)
        method.model_names = {"reader": options.reader}
        if scheduler is not None:
            method.model_names["scheduler"] = scheduler
        return method

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "schedule": self.schedule.method, "budget": self.schedule.budget}

    def run(self, question: str, passages: Sequence[IndexedPassage], top: int) -> AnswerRun:
        with self.reader.inference() as reader:
            towers = LiveTowers(reader, question, [p.text for p in passages])
            outcome = run_schedule(towers, self.schedule, self.policy)
        if outcome.tower < 0:
            return AnswerRun([], None, None, towers.cost)
        found = Found(passages[outcome.tower], -1, outcome.score, None, (outcome.start, outcome.end))
        return AnswerRun([found], None, None, towers.cost)


class Tower(Reader):
    name = "tower"
    options_class = TowerOptions

    @classmethod
    def schedule_of(cls, options: TowerOptions) -> Schedule:
        return Schedule("tower", threshold=options.threshold, m=options.m)


class Skyline(Reader):
    name = "skyline"
    options_class = SkylineOptions
    request_settings = ("budget",)

    @classmethod
    def schedule_of(cls, options: SkylineOptions) -> Schedule:
        kind = "learned" if options.scheduler is not None else "skyline"
        return Schedule(kind, budget=options.budget, m=options.m)

    @classmethod
    def policy_of(cls, options: SkylineOptions) -> str | None:
        return options.scheduler

    def with_settings(self, budget: float | None = None, **other: Any) -> Skyline:
        """This method spending ``budget`` layers per passage (one request's)."""
        super().with_settings(**other)
        if budget is None:
            return self
        method = type(self)(self.reader, replace(self.schedule, budget=budget), self.policy)
        method.model_names = self.model_names
        return method
