"""The sentence methods that rank sentences: the answer is a sentence of a retrieved passage.

- ``peasi-all`` ("PEASI for all passages → AS2"): EASI picks a sentence in every passage, then the
  point-wise ranker orders those sentences.
- ``pointwise``: the point-wise ranker (the shipped default) scores every sentence of every passage.
- ``cascade``: the same with the shipped cascade, which drops candidates at its exits.

(``peasi``, which picks the sentence inside the passages its reranker puts first, is in
``sieveqa.runtime.answer.peasi``.) Each fuses BM25 into its scores as its ``fusion`` option says; the
defaults are the dev choices (``bench/fusion.py --split dev``; docs/RESULTS.md, "Never worse than
BM25"). Whether the documents answer at all, a sentence's own score cannot say: a ``judge``
(``sieveqa.runtime.answer.judge``) scores the passage of each answer, and that logit is the
``passage`` signal the confidence reads.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, ClassVar, Self

from sieveqa.data.corpus import IndexedPassage
from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.models.base import Ranker
from sieveqa.models.easi import EasiModel
from sieveqa.models.pair_model import PairModel
from sieveqa.models.peasi import PeasiModel
from sieveqa.profiling import stage
from sieveqa.runtime.answer.fusion import Fusion, with_fusion
from sieveqa.runtime.answer.judge import judge_name, judged, load_judge
from sieveqa.runtime.answer.method import AnswerMethod, AnswerRun, Found, ModelSettings
from sieveqa.runtime.answer.options import (
    CascadeOptions,
    MethodOptions,
    PeasiAllOptions,
    PointwiseOptions,
    parse_ratios,
)


def with_alpha(ranker: Any, alpha: float, role: str = "ranker") -> Ranker:
    if "alpha" not in getattr(ranker, "request_settings", ()):
        raise ConfigError(f"alpha: the {role} is not a cascade (it has no exits to drop candidates at)")
    return ranker.with_settings(alpha=alpha)


def rank_found(ranker: Ranker, question: str, found: list[Found]) -> tuple[list[Found], Cost]:
    """``found`` re-scored by ``ranker`` and put in its order."""
    example = RankingExample(
        Question("q", question), [Candidate(str(i), f.text) for i, f in enumerate(found)]
    )
    result = ranker.run([example])
    scores, order = result.own_scores()[0], result.orders()[0]
    ranked = [Found(found[i].passage, found[i].sentence, float(scores[i])) for i in order]
    return questions_last(ranked), result.cost


def questions_last(found: list[Found]) -> list[Found]:
    """``found`` with the sentences that are questions after the others, each part in its order: a
    question is not its own answer (an FAQ's "Is there C++ bindings ?" was chosen over the answer below
    it)."""
    return sorted(found, key=lambda f: f.text.rstrip().endswith(("?", "\uff1f")))


class Pointwise(AnswerMethod):
    name = "pointwise"
    judge_signal: ClassVar[str] = "passage"
    options_class: type[MethodOptions] = PointwiseOptions

    def __init__(self, ranker: Ranker, fusion: Fusion | str = "none", judge: PairModel | None = None) -> None:
        self.fusion = Fusion.parse(fusion)
        self.ranker = with_fusion(ranker, self.fusion)
        self.judge = judge

    @classmethod
    def load(cls, options: PointwiseOptions, settings: ModelSettings) -> Self:
        ratios = parse_ratios(getattr(options, "drop_ratios", None))
        judge = load_judge(options.judge, settings)
        method = cls(settings.ranker(options.ranker, drop_ratios=ratios), options.fusion, judge)
        method.model_names = {"ranker": options.ranker} | judge_name(options.judge, judge)
        return method

    @property
    def signals(self) -> tuple[str, ...]:
        return (self.judge_signal,) if self.judge is not None else ()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "fusion": str(self.fusion)}

    def with_settings(self, alpha: float | None = None, **other: Any) -> Pointwise:
        """This method with its cascade ranker dropping ``alpha`` of the sentences at each exit."""
        super().with_settings(**other)
        if alpha is None:
            return self
        method = copy.copy(self)
        inner = getattr(self.ranker, "ranker", self.ranker)  # under its BM25 fusion
        method.ranker = with_fusion(with_alpha(inner, alpha), self.fusion)
        return method

    def run(self, question: str, passages: Sequence[IndexedPassage], top: int) -> AnswerRun:
        every = [Found(p, s, 0.0) for p in passages for s in range(len(p.spans))]
        with stage("sentence ranking"):
            ranking, cost = rank_found(self.ranker, question, every)
        return judged(self.judge, question, AnswerRun(ranking[:top], None, ranking, cost), self.judge_signal)


class Cascade(Pointwise):
    """The point-wise method with the shipped cascade: what differs is what its ranker computes."""

    name = "cascade"
    options_class = CascadeOptions


class PeasiAll(Pointwise):
    name = "peasi-all"
    options_class = PeasiAllOptions

    def __init__(
        self,
        selector: EasiModel | PeasiModel,
        ranker: Ranker,
        fusion: Fusion | str = "none",
        judge: PairModel | None = None,
    ) -> None:
        super().__init__(ranker, fusion, judge)
        self.selector = selector

    @classmethod
    def load(cls, options: PeasiAllOptions, settings: ModelSettings) -> Self:  # type: ignore[override]
        selector_name = options.selector or "peasi-easi"
        selector = settings.model(selector_name, (EasiModel, PeasiModel), "--selector", "an EASI model")
        judge = load_judge(options.judge, settings)
        method = cls(selector, settings.ranker(options.ranker), options.fusion, judge)
        method.model_names = {"selector": selector_name, "ranker": options.ranker}
        method.model_names |= judge_name(options.judge, judge)
        return method

    def run(self, question: str, passages: Sequence[IndexedPassage], top: int) -> AnswerRun:
        cost = Cost()
        probs, easi_cost = self.selector.select([question] * len(passages), [p.sentences for p in passages])
        cost.add(easi_cost)
        picked = [Found(p, _best(pr), 0.0) for p, pr in zip(passages, probs, strict=True)]
        ranking, rank_cost = rank_found(self.ranker, question, picked)
        cost.add(rank_cost)
        return judged(self.judge, question, AnswerRun(ranking[:top], None, ranking, cost), self.judge_signal)


def _best(probs: Sequence[float]) -> int:
    return max(range(len(probs)), key=lambda s: (probs[s], -s))
