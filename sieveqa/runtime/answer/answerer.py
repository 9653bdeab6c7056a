"""Answering questions over a corpus index: retrieve passages, then let an answering method choose.

The methods (``sieveqa.runtime.answer.sentence``: peasi, peasi-all, pointwise, cascade;
``sieveqa.runtime.answer.reading``: reader, tower, skyline) are registered by name in
``sieveqa.registry``; ``load_answerer`` builds one from its options. ``run`` works on passages given by
the caller (a labelled benchmark); ``answer`` retrieves them from the index first. Nothing here keeps
per-call state, so one Answerer can serve several threads.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sieveqa import registry
from sieveqa.data.corpus import RETRIEVERS, CorpusIndex, Embedder, IndexedPassage
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.runtime.answer.fusion import Fusion
from sieveqa.runtime.answer.method import AnswerMethod, AnswerRun, Found, ModelSettings, method_options

__all__ = ["Answer", "AnswerRun", "Answerer", "Found", "default_fusion", "load_answerer", "method_names"]


def method_names() -> list[str]:
    """The registered answering methods' names."""
    return [spec.name for spec in registry.answer_methods()]


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
        method: AnswerMethod,
        index: CorpusIndex | None = None,
        retrieve: int = 20,
        retriever: str = "bm25",
        embedder: Embedder | None = None,
        top: int = 1,
    ) -> None:
        if retrieve < 1 or top < 1:
            raise ConfigError(f"--retrieve and --top must be >= 1, got {retrieve} and {top}")
        self.method, self.index = method, index
        self.retrieve, self.retriever, self.embedder, self.top = retrieve, retriever, embedder, top

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

    def answer(self, question: str, top: int | None = None) -> Answer:
        return self.answer_many([question], top)[0]

    def answer_many(self, questions: Sequence[str], top: int | None = None) -> list[Answer]:
        """Retrieve, then ``run``, for each question (retrieval is batched); ``top`` answers each
        (default: this Answerer's)."""
        started = time.perf_counter()
        index = self.refresh()
        hits = index.search_many(questions, self.retrieve, self.retriever, self.embedder)
        retrieval = (time.perf_counter() - started) / max(len(questions), 1)
        out = []
        for question, found in zip(questions, hits, strict=True):
            t0 = time.perf_counter()
            passages = index.passages([pid for pid, _ in found])
            run = self.run(question, passages, top)
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

    def run(self, question: str, passages: Sequence[IndexedPassage], top: int | None = None) -> AnswerRun:
        """Choose the answer among ``passages`` (retrieval order) with this Answerer's method."""
        started = time.perf_counter()
        if not passages:
            return AnswerRun([], None, None, Cost(seconds=time.perf_counter() - started))
        wanted = top if top is not None else self.top
        if wanted < 1:
            raise ConfigError(f"top must be >= 1, got {wanted}")
        run = self.method.run(question, list(passages), wanted)
        run.cost.seconds = time.perf_counter() - started
        return run


def load_answerer(
    method: str = "peasi",
    index: str | None = None,
    retrieve: int = 20,
    retriever: str = "bm25",
    top: int = 1,
    device: str = "auto",
    precision: str = "auto",
    batch_size: int | None = None,
    **options: Any,
) -> Answerer:
    """An Answerer with the registered ``method``, its ``options`` (its options dataclass's fields:
    ``reranker``, ``fusion``, ``budget``, ...; an option it does not take is refused) and the models
    they name loaded by name or folder, over the corpus index folder ``index``."""
    if retriever not in RETRIEVERS:
        raise ConfigError(f"--retriever must be one of {', '.join(RETRIEVERS)}, got {retriever!r}")
    cls, checked = method_options(method, options)
    corpus = CorpusIndex.open(index) if index is not None else None  # a bad index fails before models load
    if corpus is not None and retriever not in corpus.retrievers:
        raise ConfigError(
            f"--retriever {retriever}: {index} has {', '.join(corpus.retrievers)} only "
            "(build it with --retriever hybrid for dense vectors)"
        )
    chosen = cls.load(checked, ModelSettings(device, precision, batch_size))
    embedder = None
    if retriever != "bm25" and corpus is not None:
        from sieveqa.models.embedder import SentenceEmbedder

        embedder = SentenceEmbedder().configure(device=device)
    return Answerer(chosen, corpus, retrieve, retriever, embedder, top)


def default_fusion(method: str) -> Fusion:
    """The fusion ``method`` uses unless told otherwise: its options' default (none where it has no
    ``fusion`` option, as the reader methods)."""
    options = registry.answer_method(method).method_class().options_class
    default = {f.name: f.default for f in dataclasses.fields(options)}.get("fusion", "none")
    return Fusion.parse(default)
