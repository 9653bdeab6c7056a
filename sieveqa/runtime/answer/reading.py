"""The reader methods: the anytime extractive reader answers with a span of a retrieved passage.

- ``reader``: every passage read at full depth (the standard baseline).
- ``tower`` (TowerBuilder): each passage read until its calibrated P(no answer) reaches ``threshold``.
- ``skyline`` (SkylineBuilder): ``budget`` layers per passage spent where the has-answer probability
  is highest (the learned policy when ``scheduler`` is given, else calibrated probabilities); a
  request may change the budget.

The answer carries the ``judge`` signal the confidence reads: a judge's logit of its passage
(``sieveqa.runtime.answer.judge``; ``peasi-judge`` by default, as for the sentence methods). On SQuAD
2.0's on-topic unanswerable questions it lifts every reader's held-out overall score (skyline 50.9 to
56.5) for one MPNet pass per answer, which triples skyline's latency; ``judge="none"`` keeps a reader's
cost its own, without a shipped confidence (docs/RESULTS.md, issue 43).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Self

from sieveqa.data.corpus import IndexedPassage
from sieveqa.models.pair_model import PairModel
from sieveqa.models.reader import ReaderModel
from sieveqa.models.skyline_policy import SkylinePolicy, load_scheduler
from sieveqa.profiling import stage
from sieveqa.runtime.answer.judge import judge_name, judged, load_judge
from sieveqa.runtime.answer.method import AnswerMethod, AnswerRun, Found, ModelSettings
from sieveqa.runtime.answer.options import (
    MethodOptions,
    ReaderOptions,
    SkylineOptions,
    TowerOptions,
    given_or,
)
from sieveqa.runtime.answer.reader_policy import OWN_SCHEDULER, ReaderPolicy
from sieveqa.runtime.answer.schedulers import Schedule, run_schedule
from sieveqa.runtime.answer.towers import LiveTowers


class Reader(AnswerMethod):
    name = "reader"
    judge_signal: ClassVar[str] = "judge"
    most_answers: ClassVar[int | None] = 1  # the schedule's one span
    options_class: type[MethodOptions] = ReaderOptions

    def __init__(
        self,
        reader: ReaderModel,
        schedule: Schedule,
        policy: SkylinePolicy | None = None,
        judge: PairModel | None = None,
    ) -> None:
        self.reader, self.schedule, self.policy, self.judge = reader, schedule, policy, judge

    @classmethod
    def schedule_of(cls, options: Any, saved: ReaderPolicy, scheduler: str | None) -> Schedule:
        """The schedule ``options`` ask for over the reader's ``saved`` settings (``scheduler``: the
        learned scheduler ``policy_of`` resolved, if any)."""
        return Schedule("standard", has_weight=given_or(options.has_weight, saved.has_weight))

    @classmethod
    def policy_of(cls, options: Any, saved: ReaderPolicy, folder: Path | None) -> str | None:
        """The learned scheduler's folder, where the method takes one."""
        return None

    @classmethod
    def load(cls, options: ReaderOptions, settings: ModelSettings) -> Self:
        model = settings.model(
            options.reader, ReaderModel, "--reader", "a reader model (sieveqa train --arch reader)"
        )
        saved = ReaderPolicy.saved(model) or ReaderPolicy()
        scheduler = cls.policy_of(options, saved, model.path)
        schedule = cls.schedule_of(options, saved, scheduler)
        policy = load_scheduler(scheduler) if scheduler is not None else None
        judge = load_judge(options.judge, settings)
        method = cls(model, schedule, policy, judge)
        method.model_names = {"reader": options.reader} | judge_name(options.judge, judge)
        if scheduler is not None:  # the reader's own is named after it, so a record travels between machines
            given = getattr(options, "scheduler", None)
            own = given in (None, OWN_SCHEDULER)
            method.model_names["scheduler"] = f"{options.reader}/{saved.scheduler}" if own else scheduler
        return method

    @property
    def signals(self) -> tuple[str, ...]:
        return (self.judge_signal,) if self.judge is not None else ()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "schedule": self.schedule.method, "budget": self.schedule.budget}

    def run(self, question: str, passages: Sequence[IndexedPassage], top: int) -> AnswerRun:
        with stage("reader"), self.reader.inference() as reader:
            towers = LiveTowers(reader, question, [p.text for p in passages])
            outcome = run_schedule(towers, self.schedule, self.policy)
        if outcome.tower < 0:
            return AnswerRun([], None, None, towers.cost)
        found = Found(passages[outcome.tower], -1, outcome.score, None, (outcome.start, outcome.end))
        return judged(self.judge, question, AnswerRun([found], None, None, towers.cost), self.judge_signal)


class Tower(Reader):
    name = "tower"
    options_class = TowerOptions

    @classmethod
    def schedule_of(cls, options: TowerOptions, saved: ReaderPolicy, scheduler: str | None) -> Schedule:
        return Schedule(
            "tower",
            threshold=given_or(options.threshold, saved.threshold),
            m=given_or(options.m, saved.tower_m),
            has_weight=given_or(options.has_weight, saved.has_weight),
        )


class Skyline(Reader):
    name = "skyline"
    options_class = SkylineOptions
    request_settings = ("budget",)

    @classmethod
    def schedule_of(cls, options: SkylineOptions, saved: ReaderPolicy, scheduler: str | None) -> Schedule:
        kind = "learned" if scheduler is not None else "skyline"
        return Schedule(
            kind,
            budget=given_or(options.budget, saved.budget),
            m=given_or(options.m, saved.keep(kind)),
            has_weight=given_or(options.has_weight, saved.has_weight),
        )

    @classmethod
    def policy_of(cls, options: SkylineOptions, saved: ReaderPolicy, folder: Path | None) -> str | None:
        return saved.resolve_scheduler(options.scheduler, folder)

    def with_settings(self, budget: float | None = None, **other: Any) -> Skyline:
        """This method spending ``budget`` layers per passage (one request's)."""
        super().with_settings(**other)
        if budget is None:
            return self
        method = type(self)(self.reader, replace(self.schedule, budget=budget), self.policy, self.judge)
        method.model_names = self.model_names
        return method
