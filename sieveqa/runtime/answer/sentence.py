"""The sentence methods: the answer is a sentence of a retrieved passage.

- ``peasi`` (the paper's "PEASI for top-1 passage"): the passage reranker scores every passage, EASI
  reads the best one and picks the sentence in place. Inferences: passages + 1. With ``top`` N, EASI
  reads the N best passages and their answers are ranked by P(passage) × P(sentence | passage).
- ``peasi-all`` ("PEASI for all passages → AS2"): EASI picks a sentence in every passage, then the
  point-wise ranker orders those sentences.
- ``pointwise``: the point-wise ranker (the shipped default) scores every sentence of every passage.
- ``cascade``: the same with the shipped cascade, which drops candidates at its exits.

Each fuses BM25 into its scores as its ``fusion`` option says; the defaults are the dev choices
(``bench/fusion.py --split dev``; docs/RESULTS.md, "Never worse than BM25"): PEASI's pair retrained on
SQuAD train gains nothing from BM25 on dev (``bench/results/fusion/peasi-v2-dev.json``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from sieveqa.data.corpus import IndexedPassage
from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.models.base import Ranker
from sieveqa.models.easi import EasiModel
from sieveqa.models.pair_model import PairModel
from sieveqa.models.peasi import PeasiModel
from sieveqa.runtime.answer.fusion import Fusion, lexical_scores, with_fusion
from sieveqa.runtime.answer.method import AnswerMethod, AnswerRun, Found, MethodOptions, ModelSettings
from sieveqa.runtime.policy import ranker_of

_FUSION_HELP = "BM25 fused into the scores: none, interp:W or rrf:W"


def _fusion(default: str) -> Any:
    return field(default=default, metadata={"help": _FUSION_HELP})


def _ranker(default: str) -> Any:
    return field(default=default, metadata={"help": "the sentence ranker (shipped name or folder)"})


def _drop_ratios() -> Any:
    return field(
        default=None,
        metadata={
            "help": "when the ranker is a cascade: the share of candidates its exits drop, one α or one "
            "per exit but the last, e.g. 0.3 or 0.5,0.3,0,0 (default: its tuned ones)"
        },
    )


def parse_ratios(text: str | float | Sequence[float] | None) -> tuple[float, ...] | None:
    """``--drop-ratios``: ``0.3`` or ``0.5,0.3,0,0`` (numbers pass through; None: the saved ones)."""
    if text is None:
        return None
    if isinstance(text, int | float):
        return (float(text),)
    if not isinstance(text, str):
        return tuple(float(x) for x in text)
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"--drop-ratios must be numbers separated by commas, got {text!r}") from None


def _selector_option() -> Any:
    return field(
        default=None, metadata={"help": "the EASI selector (default: the reranker's own, else peasi-easi)"}
    )


@dataclass(frozen=True)
class PeasiOptions(MethodOptions):
    reranker: str = field(
        default="peasi-pr", metadata={"help": "the passage reranker (shipped name or folder)"}
    )
    selector: str | None = _selector_option()
    fusion: str = _fusion("none")
    drop_ratios: str | None = _drop_ratios()


@dataclass(frozen=True)
class PeasiAllOptions(MethodOptions):
    selector: str | None = _selector_option()
    ranker: str = _ranker("default")
    fusion: str = _fusion("none")


@dataclass(frozen=True)
class PointwiseOptions(MethodOptions):
    ranker: str = _ranker("default")
    fusion: str = _fusion("interp:0.1")


@dataclass(frozen=True)
class CascadeOptions(PointwiseOptions):
    ranker: str = _ranker("default-cascade")
    fusion: str = _fusion("rrf:0.05")
    drop_ratios: str | None = _drop_ratios()


def _selector(name: str | None, reranker: Any, settings: ModelSettings) -> tuple[Any, str]:
    if name is None and isinstance(reranker, PeasiModel):
        return reranker, "(the reranker's own)"
    name = name or "peasi-easi"
    return settings.model(name, (EasiModel, PeasiModel), "--selector", "an EASI model"), name


def _with_alpha(ranker: Any, alpha: float, role: str = "ranker") -> Ranker:
    if "alpha" not in getattr(ranker, "request_settings", ()):
        raise ConfigError(f"alpha: the {role} is not a cascade (it has no exits to drop candidates at)")
    return ranker.with_settings(alpha=alpha)


def _best(probs: Sequence[float]) -> int:
    return max(range(len(probs)), key=lambda s: (probs[s], -s))


def rank_found(ranker: Ranker, question: str, found: list[Found]) -> tuple[list[Found], Cost]:
    """``found`` re-scored by ``ranker`` and put in its order."""
    example = RankingExample(
        Question("q", question), [Candidate(str(i), f.text) for i, f in enumerate(found)]
    )
    result = ranker.run([example])
    scores, order = result.own_scores()[0], result.orders()[0]
    return [Found(found[i].passage, found[i].sentence, float(scores[i])) for i in order], result.cost


class Peasi(AnswerMethod):
    name = "peasi"
    options_class = PeasiOptions

    def __init__(
        self,
        reranker: PairModel | PeasiModel | Ranker,
        selector: EasiModel | PeasiModel,
        fusion: Fusion | str = "none",
    ) -> None:
        self.reranker, self.selector, self.fusion = reranker, selector, Fusion.parse(fusion)

    @classmethod
    def load(cls, options: PeasiOptions, settings: ModelSettings) -> Self:
        reranker = settings.model(options.reranker, (PairModel, PeasiModel), "--reranker", "a ranker")
        selector, selector_name = _selector(options.selector, reranker, settings)
        ratios = parse_ratios(options.drop_ratios)
        if isinstance(reranker, PairModel):  # a cascade's exits drop passages as its policy says
            reranker = ranker_of(reranker, name=options.reranker, drop_ratios=ratios)
        elif ratios is not None:
            raise ConfigError(f"--drop-ratios: the reranker {options.reranker} is not a cascade")
        method = cls(reranker, selector, options.fusion)
        method.model_names = {"reranker": options.reranker, "selector": selector_name}
        return method

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "fusion": str(self.fusion)}

    def with_settings(self, alpha: float | None = None, **other: Any) -> Peasi:
        """This method with its cascade reranker dropping ``alpha`` of the passages at each exit."""
        super().with_settings(**other)
        if alpha is None:
            return self
        method = type(self)(_with_alpha(self.reranker, alpha, "reranker"), self.selector, self.fusion)
        method.model_names = getattr(self, "model_names", {})
        return method

    def run(self, question: str, passages: Sequence[IndexedPassage], top: int) -> AnswerRun:
        cost = Cost()
        logits, sorting, pr_cost = self._passage_scores(question, passages)
        cost.add(pr_cost)
        lexical = lexical_scores(question, [p.text for p in passages]) if self.fusion.active else []
        scores = self.fusion.combine(sorting, lexical or [0.0] * len(passages))
        order = sorted(range(len(passages)), key=lambda i: (-scores[i], i))[:top]
        chosen = [passages[i] for i in order]
        probs, easi_cost = self.selector.select([question] * len(chosen), [p.sentences for p in chosen])
        cost.add(easi_cost)
        answers = []
        for i, p, pr in zip(order, chosen, probs, strict=True):
            best = _best(pr)
            answers.append(Found(p, best, pr[best], logits[i]))
        if len(answers) == 1:
            return AnswerRun(answers, scores, None, cost)
        # P(sentence) = P(its passage holds the answer) × P(sentence | passage), stable in PR order.
        answers.sort(key=lambda f: -(1 / (1 + math.exp(-(f.passage_score or 0.0)))) * f.score)
        return AnswerRun(answers, scores, answers, cost)

    def _passage_scores(
        self, question: str, passages: Sequence[IndexedPassage]
    ) -> tuple[list[float], list[float], Cost]:
        """Each passage's score on the reranker's own scale (a logit), the scores that sort them, and
        the cost."""
        # A multi-task model's PR may read the sentences too (PR ⊕ EASI); a ranker reads the text.
        if isinstance(self.reranker, PeasiModel):
            logits, cost = self.reranker.score_passages(
                [question] * len(passages), [p.sentences for p in passages]
            )
            return logits, logits, cost
        if isinstance(self.reranker, PairModel):
            matrix, cost = self.reranker.score_matrix(
                [question] * len(passages), [p.text for p in passages], windows=True
            )
            last = matrix[:, -1].tolist()
            return last, last, cost
        # A cascade: passages dropped at an exit sort below those that went on (no windows: a
        # passage longer than the model reads is cut).
        example = RankingExample(
            Question("q", question), [Candidate(str(i), p.text) for i, p in enumerate(passages)]
        )
        result = self.reranker.run([example])
        return result.own_scores()[0], result.scores[0], result.cost


class Pointwise(AnswerMethod):
    name = "pointwise"
    options_class: type[MethodOptions] = PointwiseOptions

    def __init__(self, ranker: Ranker, fusion: Fusion | str = "none") -> None:
        self.fusion = Fusion.parse(fusion)
        self.ranker = with_fusion(ranker, self.fusion)

    @classmethod
    def load(cls, options: PointwiseOptions, settings: ModelSettings) -> Self:
        ratios = parse_ratios(getattr(options, "drop_ratios", None))
        method = cls(settings.ranker(options.ranker, drop_ratios=ratios), options.fusion)
        method.model_names = {"ranker": options.ranker}
        return method

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "fusion": str(self.fusion)}

    def with_settings(self, alpha: float | None = None, **other: Any) -> Pointwise:
        """This method with its cascade ranker dropping ``alpha`` of the sentences at each exit."""
        super().with_settings(**other)
        if alpha is None:
            return self
        method = copy.copy(self)
        inner = getattr(self.ranker, "ranker", self.ranker)  # under its BM25 fusion
        method.ranker = with_fusion(_with_alpha(inner, alpha), self.fusion)
        return method

    def run(self, question: str, passages: Sequence[IndexedPassage], top: int) -> AnswerRun:
        every = [Found(p, s, 0.0) for p in passages for s in range(len(p.spans))]
        ranking, cost = rank_found(self.ranker, question, every)
        return AnswerRun(ranking[:top], None, ranking, cost)


class Cascade(Pointwise):
    """The point-wise method with the shipped cascade: what differs is what its ranker computes."""

    name = "cascade"
    options_class = CascadeOptions


class PeasiAll(Pointwise):
    name = "peasi-all"
    options_class = PeasiAllOptions

    def __init__(
        self, selector: EasiModel | PeasiModel, ranker: Ranker, fusion: Fusion | str = "none"
    ) -> None:
        super().__init__(ranker, fusion)
        self.selector = selector

    @classmethod
    def load(cls, options: PeasiAllOptions, settings: ModelSettings) -> Self:  # type: ignore[override]
        selector, selector_name = _selector(options.selector, None, settings)
        method = cls(selector, settings.ranker(options.ranker), options.fusion)
        method.model_names = {"selector": selector_name, "ranker": options.ranker}
        return method

    def run(self, question: str, passages: Sequence[IndexedPassage], top: int) -> AnswerRun:
        cost = Cost()
        probs, easi_cost = self.selector.select([question] * len(passages), [p.sentences for p in passages])
        cost.add(easi_cost)
        picked = [Found(p, _best(pr), 0.0) for p, pr in zip(passages, probs, strict=True)]
        ranking, rank_cost = rank_found(self.ranker, question, picked)
        cost.add(rank_cost)
        return AnswerRun(ranking[:top], None, ranking, cost)
