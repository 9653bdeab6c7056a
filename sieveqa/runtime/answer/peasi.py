"""``peasi``: rerank passages, then pick the answer sentence in place (PEASI's "top-1 passage").

The passage reranker scores every retrieved passage (a logit: does this passage answer?). EASI reads
the ``read`` best passages, ``question [SEP] s1 [SEP] s2 ...``, and scores each of their sentences. The
answer is chosen jointly over both stages rather than best passage first: a sentence's score is

    passage logit + ``sentence_weight`` x log P(sentence | passage) + ``bm25_weight`` x BM25
                  + ``sentence_bm25_weight`` x the sentence's BM25
                  + ``look_weight`` x the point-wise ranker's logit (``second_look``)

where ``second_look`` > 0 has the point-wise ranker read the best ``second_look`` sentences so far,
alone, and re-order them (they stay above the others); BM25 is the passage's, min-max normalised over
the retrieved passages, and the sentence's among the sentences read (min-max too). With ``read`` 1
and no second look this is the paper's top-1 passage. The defaults were chosen on dev
(``bench/peasi_choice.py``; docs/RESULTS.md, "The right sentence in the right passage").

Every answer carries the signals its confidence reads (``Found.signals``): ``passage`` (the reranker's
logit of its passage: whether the passage answers), ``sentence`` (EASI's logit of it: how well it
answers, comparable across passages), ``in_passage`` (its log-probability within its passage),
``margin`` (its passage's logit over the best other passage's), when looked at, ``pointwise``, and
with a ``judge`` (a reranker trained on on-topic unanswerable questions), ``judge``: its logit of the
answer's passage, whether the passage says the answer rather than whether it is on the topic; with a
``null`` selector, ``null``: the log-probability EASI gives "no sentence of this passage answers".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Self

from sieveqa.data.corpus import IndexedPassage
from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.models.base import Ranker
from sieveqa.models.easi import EasiModel
from sieveqa.models.pair_model import PairModel
from sieveqa.models.peasi import PeasiModel
from sieveqa.profiling import stage
from sieveqa.runtime.answer.fusion import Fusion, lexical_scores
from sieveqa.runtime.answer.judge import judge_name, judged, load_judge
from sieveqa.runtime.answer.method import AnswerMethod, AnswerRun, Found, ModelSettings
from sieveqa.runtime.answer.options import PeasiOptions, parse_ratios
from sieveqa.runtime.answer.sentence import questions_last, rank_found, with_alpha
from sieveqa.runtime.policy import ranker_of

__all__ = ["Peasi", "PeasiOptions"]

#: The signals every PEASI answer carries (``pointwise`` too when the second look is on).
SIGNALS = ("passage", "sentence", "in_passage", "margin")


class Peasi(AnswerMethod):
    name = "peasi"
    options_class = PeasiOptions
    judge_signal = "judge"
    budget_levers = ("read", "second_look", "bm25_weight", "sentence_bm25_weight")

    def __init__(
        self,
        reranker: PairModel | PeasiModel | Ranker,
        selector: EasiModel | PeasiModel,
        fusion: Fusion | str = "none",
        options: PeasiOptions | None = None,
        look: Ranker | None = None,
        judge: PairModel | None = None,
    ) -> None:
        self.reranker, self.selector, self.fusion = reranker, selector, Fusion.parse(fusion)
        if options is None:  # built by hand without a point-wise ranker: no second look
            options = PeasiOptions() if look is not None else PeasiOptions(second_look=0)
        self.options = options
        if self.options.second_look and look is None:
            raise ConfigError("--second-look needs a point-wise ranker (--look-ranker)")
        self.look, self.judge = look, judge

    @classmethod
    def load(cls, options: PeasiOptions, settings: ModelSettings) -> Self:
        reranker = settings.model(options.reranker, (PairModel, PeasiModel), "--reranker", "a ranker")
        if options.selector is None and isinstance(reranker, PeasiModel):
            selector, selector_name = reranker, "(the reranker's own)"
        else:
            selector_name = options.selector or "peasi-easi"
            selector = settings.model(selector_name, (EasiModel, PeasiModel), "--selector", "an EASI model")
        ratios = parse_ratios(options.drop_ratios)
        if isinstance(reranker, PairModel):  # a cascade's exits drop passages as its policy says
            reranker = ranker_of(reranker, name=options.reranker, drop_ratios=ratios)
        elif ratios is not None:
            raise ConfigError(f"--drop-ratios: the reranker {options.reranker} is not a cascade")
        look = settings.ranker(options.look_ranker) if options.second_look else None
        judge = load_judge(options.judge, settings)
        method = cls(reranker, selector, options.fusion, options, look, judge)
        method.model_names = {"reranker": options.reranker, "selector": selector_name}
        if look is not None:
            method.model_names["second_look"] = options.look_ranker
        method.model_names |= judge_name(options.judge, judge)
        return method

    @property
    def signals(self) -> tuple[str, ...]:
        looked = ("pointwise",) if self.look is not None else ()
        null = ("null",) if self.selector.has_null else ()
        return SIGNALS + null + looked + ((self.judge_signal,) if self.judge is not None else ())

    def describe(self) -> dict[str, Any]:
        o = self.options
        choice = {"read": o.read, "sentence_weight": o.sentence_weight, "second_look": o.second_look}
        if o.second_look:
            choice["look_weight"] = o.look_weight
        if o.bm25_weight:
            choice["bm25_weight"] = o.bm25_weight
        if o.sentence_bm25_weight:
            choice["sentence_bm25_weight"] = o.sentence_bm25_weight
        return {**super().describe(), "fusion": str(self.fusion), "choice": choice}

    def with_settings(self, alpha: float | None = None, **other: Any) -> Peasi:
        """This method with its cascade reranker dropping ``alpha`` of the passages at each exit."""
        super().with_settings(**other)
        if alpha is None:
            return self
        reranker = with_alpha(self.reranker, alpha, "reranker")
        method = type(self)(reranker, self.selector, self.fusion, self.options, self.look, self.judge)
        method.model_names = getattr(self, "model_names", {})
        return method

    def lightened(self, judge: str | None = None, **levers: Any) -> Peasi:
        """This method with EASI reading fewer passages, the second look shortened or dropped, the
        choice's BM25 weights moved, or the judge dropped (a budget's levers; the models stay)."""
        method = super().lightened(judge, **levers)
        moved = {k: v for k, v in levers.items() if v is not None and v != getattr(self.options, k)}
        if not moved:
            return method  # type: ignore[return-value]  # super() returns a copy of this class
        options = replace(self.options, **moved)
        look = self.look if options.second_look else None
        if options.second_look and look is None:
            raise ConfigError("--second-look: the point-wise ranker of the second look was not loaded")
        out = type(self)(self.reranker, self.selector, self.fusion, options, look, method.judge)  # type: ignore[attr-defined]
        names = dict(getattr(method, "model_names", {}))
        out.model_names = {k: v for k, v in names.items() if k != "second_look" or look is not None}
        return out

    def run(self, question: str, passages: Sequence[IndexedPassage], top: int) -> AnswerRun:
        candidates, scores, cost = self.candidates(question, passages, max(self.options.read, top))
        best: dict[str, Found] = {}  # one answer per passage, the passage's best sentence
        for found in candidates:
            best.setdefault(found.passage.id, found)
        run = AnswerRun(list(best.values())[:top], scores, None, cost)
        return judged(self.judge, question, run, self.judge_signal)

    def candidates(
        self, question: str, passages: Sequence[IndexedPassage], read: int | None = None
    ) -> tuple[list[Found], list[float], Cost]:
        """Every sentence of the ``read`` best passages, best first by the joint score, with its
        signals; the passages' scores (what orders them); the cost."""
        cost = Cost()
        with stage("passage rerank"):
            logits, sorting, pr_cost = self._passage_scores(question, passages)
        cost.add(pr_cost)
        wants = self.fusion.active or self.options.bm25_weight > 0
        lexical = lexical_scores(question, self._texts(passages)) if wants else []
        scores = self.fusion.combine(sorting, lexical or [0.0] * len(passages))
        bm25 = _minmax(lexical) if lexical else [0.0] * len(passages)
        order = sorted(range(len(passages)), key=lambda i: (-scores[i], i))[: read or self.options.read]
        chosen = [passages[i] for i in order]
        with stage("sentence selection"):
            reading = self.selector.read([question] * len(chosen), [p.sentences for p in chosen])
        cost.add(reading.cost)
        nulls = reading.nulls
        found = []
        for k, (i, p, z) in enumerate(zip(order, chosen, reading.logits, strict=True)):
            others = [logits[j] for j in range(len(passages)) if j != i]
            margin = logits[i] - max(others) if others else 0.0
            norm = _logsumexp(z)
            # log P(no sentence answers) in the passage's softmax with the null option
            null = {} if nulls is None else {"null": nulls[k] - _logsumexp([*z, nulls[k]])}
            for s, zs in enumerate(z):
                signals = {"passage": logits[i], "sentence": zs, "in_passage": zs - norm, "margin": margin}
                signals |= null
                joint = logits[i] + self.options.sentence_weight * signals["in_passage"]
                joint += self.options.bm25_weight * bm25[i]
                found.append(Found(p, s, joint, logits[i], signals=signals))
        if self.options.sentence_bm25_weight and found:
            words = _minmax(lexical_scores(question, [f.text for f in found]))
            w = self.options.sentence_bm25_weight
            found = [replace(f, score=f.score + w * b) for f, b in zip(found, words, strict=True)]
        found.sort(key=lambda f: -f.score)  # stable: ties keep passage, then sentence order
        found = questions_last(found)
        if self.look is not None and found:
            with stage("second look"):
                found, look_cost = self._second_look(question, found)
            cost.add(look_cost)
        return found, scores, cost

    def _second_look(self, question: str, found: list[Found]) -> tuple[list[Found], Cost]:
        k = self.options.second_look
        looked, look_cost = rank_found(self.look, question, found[:k])
        again = []
        for f in looked:
            original = next(o for o in found[:k] if (o.passage.id, o.sentence) == (f.passage.id, f.sentence))
            signals = {**(original.signals or {}), "pointwise": f.score}
            joint = original.score + self.options.look_weight * f.score
            again.append(replace(original, score=joint, signals=signals))
        again.sort(key=lambda f: -f.score)
        return questions_last(again + found[k:]), look_cost

    def _texts(self, passages: Sequence[IndexedPassage]) -> list[str]:
        """What the passage reranker reads of each passage: its text, under its heading if asked."""
        if not self.options.heading:
            return [p.text for p in passages]
        return [f"{p.heading}\n{p.text}" if p.heading else p.text for p in passages]

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
                [question] * len(passages), self._texts(passages), windows=True
            )
            last = matrix[:, -1].tolist()
            return last, last, cost
        # A cascade: passages dropped at an exit sort below those that went on (no windows: a
        # passage longer than the model reads is cut).
        example = RankingExample(
            Question("q", question), [Candidate(str(i), t) for i, t in enumerate(self._texts(passages))]
        )
        result = self.reranker.run([example])
        return result.own_scores()[0], result.scores[0], result.cost


def _minmax(values: Sequence[float]) -> list[float]:
    low, high = min(values), max(values)
    return [(v - low) / (high - low) if high > low else 0.0 for v in values]


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values, default=0.0)
    return top + math.log(sum(math.exp(v - top) for v in values)) if values else 0.0
