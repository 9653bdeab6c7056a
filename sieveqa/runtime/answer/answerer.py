"""Answering questions over a corpus index: retrieve passages, rerank them, pick the answer sentence.

Methods (how the sentence is chosen among the retrieved passages):

- ``peasi`` (the paper's "PEASI for top-1 passage"): the passage reranker scores every passage, EASI
  reads the best one and picks the sentence in place. Inferences: passages + 1. With ``top`` N, EASI
  reads the N best passages and their answers are ranked by P(passage) × P(sentence | passage).
- ``peasi-all`` ("PEASI for all passages → AS2"): EASI picks a sentence in every passage, then the
  point-wise ranker orders those sentences.
- ``pointwise``: the point-wise ranker (the shipped default) scores every sentence of every passage.
- ``cascade``: the same with the shipped cascade, which drops candidates at its exits.
- ``reader``, ``tower``, ``skyline``: the anytime extractive reader answers with a span: over every
  passage at full depth, by TowerBuilder, or by SkylineBuilder under a budget of layers per passage
  (the learned policy when a scheduler is given, else calibrated probabilities as priorities).

``run`` works on passages given by the caller (a labelled benchmark); ``answer`` retrieves them from
the index first. Nothing here keeps per-call state, so one Answerer can serve several threads.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sieveqa.data.corpus import CorpusIndex, Embedder, IndexedPassage
from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.models.base import Ranker
from sieveqa.models.easi import EasiModel
from sieveqa.models.pair_model import PairModel
from sieveqa.models.peasi import PeasiModel
from sieveqa.models.reader import ReaderModel
from sieveqa.models.skyline_policy import SkylinePolicy
from sieveqa.runtime.answer.fusion import Fusion, lexical_scores, with_fusion
from sieveqa.runtime.answer.schedulers import Schedule, run_schedule
from sieveqa.runtime.answer.towers import LiveTowers

__all__ = ["METHODS", "Answer", "AnswerRun", "Answerer", "Found", "load_answerer"]

METHODS = ("peasi", "peasi-all", "pointwise", "cascade", "reader", "tower", "skyline")
READER_METHODS = {"reader": "standard", "tower": "tower", "skyline": "skyline"}


@dataclass(frozen=True)
class Found:
    """One answer: a sentence (by index) of a passage, or a ``span`` of its text (a reader's
    extracted answer; ``sentence`` is then -1), with its scores."""

    passage: IndexedPassage
    sentence: int
    score: float
    passage_score: float | None = None
    span: tuple[int, int] | None = None

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
            "document": self.passage.doc_id,
            "title": self.passage.title,
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

    @property
    def inferences(self) -> int:
        """Transformer input sequences run (a passage window or a sentence pair each)."""
        return self.cost.sequences


@dataclass
class Answer(AnswerRun):
    """An ``AnswerRun`` for a question asked of an index."""

    question: str = ""
    passages: list[IndexedPassage] = field(default_factory=list)

    @property
    def best(self) -> Found | None:
        return self.answers[0] if self.answers else None


class Answerer:
    """Answers questions with one method over a corpus index (or over given passages)."""

    def __init__(
        self,
        method: str = "peasi",
        index: CorpusIndex | None = None,
        reranker: PairModel | PeasiModel | None = None,
        selector: EasiModel | PeasiModel | None = None,
        ranker: Ranker | None = None,
        retrieve: int = 20,
        retriever: str = "bm25",
        embedder: Embedder | None = None,
        top: int = 1,
        reader: ReaderModel | None = None,
        schedule: Schedule | None = None,
        policy: SkylinePolicy | None = None,
        fusion: Fusion | str | None = None,
    ) -> None:
        if method not in METHODS:
            raise ConfigError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
        needs = {
            "peasi": ("reranker", "selector"),
            "peasi-all": ("selector", "ranker"),
            "pointwise": ("ranker",),
            "cascade": ("ranker",),
        }.get(method, ("reader", "schedule"))
        given = {
            "reranker": reranker,
            "selector": selector,
            "ranker": ranker,
            "reader": reader,
            "schedule": schedule,
        }
        missing = [n for n in needs if given[n] is None]
        if missing:
            raise ConfigError(f"method {method!r} needs a {' and a '.join(missing)}")
        if retrieve < 1 or top < 1:
            raise ConfigError(f"--retrieve and --top must be >= 1, got {retrieve} and {top}")
        self.fusion = Fusion.parse(fusion)
        if self.fusion.active and method in READER_METHODS:
            raise ConfigError(f"--fusion {self.fusion} is for the sentence methods, not {method!r}")
        self.method, self.index = method, index
        self.reranker, self.selector = reranker, selector
        self.ranker = with_fusion(ranker, self.fusion) if ranker is not None else None
        self.retrieve, self.retriever, self.embedder, self.top = retrieve, retriever, embedder, top
        self.reader, self.schedule, self.policy = reader, schedule, policy
        #: The models' names or folders by role, where ``load_answerer`` loaded them (for reports).
        self.model_names: dict[str, str] = {}

    # -- over an index ---------------------------------------------------------------------------

    def answer(self, question: str) -> Answer:
        return self.answer_many([question])[0]

    def answer_many(self, questions: Sequence[str]) -> list[Answer]:
        """Retrieve, then ``run``, for each question (retrieval is batched)."""
        if self.index is None:
            raise ConfigError("this Answerer has no corpus index; give passages to run() instead")
        started = time.perf_counter()
        index = self.index = self.index.latest()  # a writer may have added a generation
        hits = index.search_many(questions, self.retrieve, self.retriever, self.embedder)
        retrieval = (time.perf_counter() - started) / max(len(questions), 1)
        out = []
        for question, found in zip(questions, hits, strict=True):
            t0 = time.perf_counter()
            passages = index.passages([pid for pid, _ in found])
            run = self.run(question, passages)
            out.append(
                Answer(
                    run.answers,
                    run.passage_scores,
                    run.ranking,
                    run.cost,
                    retrieval + time.perf_counter() - t0 - run.cost.seconds,
                    question,
                    passages,
                )
            )
        return out

    # -- over given passages ---------------------------------------------------------------------

    def run(self, question: str, passages: Sequence[IndexedPassage]) -> AnswerRun:
        """Choose the answer among ``passages`` (retrieval order) with this Answerer's method."""
        started = time.perf_counter()
        if not passages:
            return AnswerRun([], None, None, Cost(seconds=time.perf_counter() - started))
        name = "read" if self.method in READER_METHODS else self.method.replace("-", "_")
        run = getattr(self, "_" + name)(question, list(passages))
        run.cost.seconds = time.perf_counter() - started
        return run

    def _peasi(self, question: str, passages: list[IndexedPassage]) -> AnswerRun:
        assert self.reranker is not None and self.selector is not None
        cost = Cost()
        logits, pr_cost = self._passage_scores(question, passages)
        cost.add(pr_cost)
        scores = self.fusion.combine(logits, self._lexical(question, [p.text for p in passages]))
        order = sorted(range(len(passages)), key=lambda i: (-scores[i], i))[: self.top]
        top = [passages[i] for i in order]
        probs, easi_cost = self.selector.select([question] * len(top), [p.sentences for p in top])
        cost.add(easi_cost)
        answers = []
        for i, p, pr in zip(order, top, probs, strict=True):
            best = max(range(len(pr)), key=lambda s: (pr[s], -s))
            answers.append(Found(p, best, pr[best], logits[i]))
        if len(answers) == 1:
            return AnswerRun(answers, scores, None, cost)
        # P(sentence) = P(its passage holds the answer) × P(sentence | passage), stable in PR order.
        answers.sort(key=lambda f: -(1 / (1 + math.exp(-(f.passage_score or 0.0)))) * f.score)
        return AnswerRun(answers, scores, answers, cost)

    def _lexical(self, question: str, texts: list[str]) -> list[float]:
        return lexical_scores(question, texts) if self.fusion.active else [0.0] * len(texts)

    def _passage_scores(self, question: str, passages: list[IndexedPassage]) -> tuple[list[float], Cost]:
        # A multi-task model's PR may read the sentences too (PR ⊕ EASI); a ranker reads the text.
        if isinstance(self.reranker, PeasiModel):
            return self.reranker.score_passages([question] * len(passages), [p.sentences for p in passages])
        assert self.reranker is not None
        matrix, cost = self.reranker.score_matrix(
            [question] * len(passages), [p.text for p in passages], windows=True
        )
        return matrix[:, -1].tolist(), cost

    def _peasi_all(self, question: str, passages: list[IndexedPassage]) -> AnswerRun:
        assert self.selector is not None and self.ranker is not None
        cost = Cost()
        probs, easi_cost = self.selector.select([question] * len(passages), [p.sentences for p in passages])
        cost.add(easi_cost)
        picked = [
            Found(p, max(range(len(pr)), key=lambda s: (pr[s], -s)), 0.0)
            for p, pr in zip(passages, probs, strict=True)
        ]
        ranking, rank_cost = self._rank(question, picked)
        cost.add(rank_cost)
        return AnswerRun(ranking[: self.top], None, ranking, cost)

    def _pointwise(self, question: str, passages: list[IndexedPassage]) -> AnswerRun:
        every = [Found(p, s, 0.0) for p in passages for s in range(len(p.spans))]
        ranking, cost = self._rank(question, every)
        return AnswerRun(ranking[: self.top], None, ranking, cost)

    _cascade = _pointwise  # the ranker given is the cascade; what differs is what it computes

    def _read(self, question: str, passages: list[IndexedPassage]) -> AnswerRun:
        assert self.reader is not None and self.schedule is not None
        with self.reader.inference() as reader:
            towers = LiveTowers(reader, question, [p.text for p in passages])
            outcome = run_schedule(towers, self.schedule, self.policy)
        if outcome.tower < 0:
            return AnswerRun([], None, None, towers.cost)
        found = Found(passages[outcome.tower], -1, outcome.score, None, (outcome.start, outcome.end))
        return AnswerRun([found], None, None, towers.cost)

    def _rank(self, question: str, found: list[Found]) -> tuple[list[Found], Cost]:
        assert self.ranker is not None
        example = RankingExample(
            Question("q", question), [Candidate(str(i), f.text) for i, f in enumerate(found)]
        )
        result = self.ranker.run([example])
        scores = result.scores[0]
        order = result.orders()[0]
        ranked = [Found(found[i].passage, found[i].sentence, float(scores[i])) for i in order]
        return ranked, result.cost


def load_answerer(
    method: str = "peasi",
    index: str | None = None,
    reranker: str = "peasi-pr",
    selector: str | None = None,
    ranker: str | None = None,
    retrieve: int = 20,
    retriever: str = "bm25",
    top: int = 1,
    device: str = "auto",
    precision: str = "auto",
    batch_size: int | None = None,
    reader: str | None = None,
    schedule: Schedule | None = None,
    scheduler: str | None = None,
    fusion: Fusion | str | None = None,
) -> Answerer:
    """An Answerer with the models its method needs, loaded by name or folder, over the index folder
    ``index``. ``selector`` defaults to the reranker itself when that is a multi-task PEASI model,
    else ``peasi-easi``; ``ranker`` to ``default`` (``default-cascade`` for the cascade method).
    The reader methods need a ``reader``; ``skyline`` with a ``scheduler`` (a policy folder) uses the
    learned policy; ``schedule`` carries the budget and the other settings. ``fusion`` mixes BM25 into
    the sentence methods' scores (``sieveqa.runtime.answer.fusion``); None is the method's default."""
    from sieveqa.models.zoo import load_model
    from sieveqa.runtime.policy import load_ranker

    if method not in METHODS:
        raise ConfigError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    corpus = CorpusIndex.open(index) if index is not None else None  # a bad index fails before models load
    if corpus is not None and retriever not in corpus.retrievers:
        raise ConfigError(
            f"--retriever {retriever}: {index} has {', '.join(corpus.retrievers)} only "
            "(build it with --retriever hybrid for dense vectors)"
        )
    settings = {"device": device, "precision": precision, "batch_size": batch_size}

    def typed(name: str, classes: tuple[type, ...], option: str, what: str) -> Any:
        return load_model(name, classes, option, what).configure(**settings)

    fusion = default_fusion(method) if fusion is None else Fusion.parse(fusion)
    if method in READER_METHODS:
        if fusion.active:
            raise ConfigError(f"--fusion {fusion} is for the sentence methods, not {method!r}")
        return _reader_answerer(method, corpus, retrieve, retriever, reader, schedule, scheduler, typed)
    pr = typed(reranker, (PairModel, PeasiModel), "--reranker", "a ranker") if method == "peasi" else None
    easi = None
    if method in ("peasi", "peasi-all"):
        if selector is None and isinstance(pr, PeasiModel):
            easi = pr
        else:
            easi = typed(selector or "peasi-easi", (EasiModel, PeasiModel), "--selector", "an EASI model")
    rank = None
    names = {"reranker": reranker} if pr is not None else {}
    if easi is not None:
        names["selector"] = reranker if easi is pr else selector or "peasi-easi"
    if method != "peasi":
        names["ranker"] = ranker or ("default-cascade" if method == "cascade" else "default")
        rank = load_ranker(names["ranker"], **settings)
    embedder = None
    if retriever != "bm25" and corpus is not None:
        from sieveqa.models.embedder import SentenceEmbedder

        embedder = SentenceEmbedder().configure(device=device)
    answerer = Answerer(method, corpus, pr, easi, rank, retrieve, retriever, embedder, top, fusion=fusion)
    answerer.model_names = names
    return answerer


#: BM25 fused into each method's scores when no fusion is asked for: the best mean dev P@1 over WikiQA,
#: TrecQA, SQuAD-AS2 and squad-passages dev (``bench/fusion.py --split dev``; docs/RESULTS.md, "Never
#: worse than BM25"). PEASI's pair retrained on SQuAD train gains nothing from BM25 on dev
#: (``bench/results/fusion/peasi-v2-dev.json``), so it fuses nothing now, like peasi-all and the readers.
DEFAULT_FUSION: dict[str, Fusion] = {
    "pointwise": Fusion("interp", 0.1),
    "cascade": Fusion("rrf", 0.05),
}


def default_fusion(method: str) -> Fusion:
    """The fusion ``method`` uses unless told otherwise (none for the reader methods)."""
    return DEFAULT_FUSION.get(method, Fusion())


def _reader_answerer(
    method: str,
    corpus: CorpusIndex | None,
    retrieve: int,
    retriever: str,
    reader: str | None,
    schedule: Schedule | None,
    scheduler: str | None,
    typed: Any,
) -> Answerer:
    if reader is None:
        raise ConfigError(f"--method {method} needs --reader (a reader model: sieveqa train --arch reader)")
    if scheduler is not None and method != "skyline":
        raise ConfigError(f"--scheduler is for --method skyline, not {method!r}")
    wanted = "learned" if scheduler is not None else READER_METHODS[method]
    schedule = replace(
        schedule or Schedule(wanted, budget=None if wanted == "standard" else 2.0), method=wanted
    )
    policy = SkylinePolicy.from_pretrained(scheduler) if scheduler is not None else None
    model = typed(reader, (ReaderModel,), "--reader", "a reader model (sieveqa train --arch reader)")
    return Answerer(
        method, corpus, retrieve=retrieve, retriever=retriever, reader=model, schedule=schedule, policy=policy
    )
