"""Ranking against an answer store: questions encoded at query time, answers read from the store.

A search without candidates runs in two stages: the store's first stage (``first_stage``) keeps the
``k`` most promising answers of the whole store, and HAS's attention ranks only those. ``first_stage
="none"`` is the full scan: every answer through the attention, a bounded block at a time, with many
questions sharing each block (``search_many``). ``StoreRanker.open(store)`` finds the model the store
records (or takes the one given, which must match it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Self

import numpy as np
import torch
from torch import Tensor
from tqdm.auto import tqdm

from sieveqa.data.answers import StoreQuery
from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.models.base import Ranker, RankResult, SimilarityResult
from sieveqa.models.hashing import HashingModel
from sieveqa.runtime.store.answer_store import AnswerStore
from sieveqa.runtime.store.first_stage import fuse
from sieveqa.runtime.store.format import find_model, store_model
from sieveqa.runtime.store.settings import SIGNALS, SearchSettings

#: The first stages, and the signals of the store each one searches.
#: Answers unpacked and scored at once for a list of candidates (bounds the floats held).
ROWS_AT_ONCE = 1024

_NO_TEXTS = (
    "a store ranker scores the answers of its store by id: search it with run() on candidates that "
    "carry store ids (sieveqa rank --store), not predict() or rank() on texts"
)


class StoreHit(NamedTuple):
    """One stored answer found for a question."""

    id: str
    score: float
    text: str


class StoreRanker(Ranker):
    """Questions scored against stored answers: each question is encoded once, and only the answers
    asked for (candidates, or a first stage's hits) are read from the store."""

    def __init__(
        self, model: HashingModel, store: AnswerStore, settings: SearchSettings | None = None
    ) -> None:
        store.check_model(model)
        self.model, self.store = model.eval(), store
        self.settings = settings or SearchSettings()

    def check_search(self) -> None:
        """Raise ConfigError if the store lacks what the chosen first stage searches."""
        stage, first = self.settings.first_stage, self.store.first_stage
        missing = [s for s in SIGNALS.get(stage, ()) if first is None or s not in first.signals]
        if missing:
            raise ConfigError(
                f"--first-stage {stage} needs {' and '.join(missing)}, which {self.store.path} was built "
                "without (index build --vector-index / --bm25); use --first-stage none for a full scan"
            )

    @classmethod
    def open(
        cls,
        store: str | Path,
        model: str | Path | None = None,
        settings: SearchSettings | None = None,
        **config: Any,
    ) -> Self:
        """A ranker over the store at ``store``, with the model it records (or ``model``), set up
        with ``config`` (``device``, ``precision``, ``batch_size``)."""
        opened = AnswerStore.open(store)
        found = (
            store_model(model) if model is not None else find_model(opened.path, opened.manifest["model_ref"])
        )
        return cls(found.configure(**config), opened, settings)

    def _score_rows(self, vectors: Tensor, rows: np.ndarray) -> Tensor:
        """Q × len(rows) scores of question vectors against the stored answers at ``rows``, unpacked
        ``ROWS_AT_ONCE`` answers at a time."""
        if len(rows) == 0:
            return torch.empty((len(vectors), 0))
        parts = [
            self.model.score_ragged(vectors, *self.store.gather(rows[start : start + ROWS_AT_ONCE]))
            for start in range(0, len(rows), ROWS_AT_ONCE)
        ]
        return torch.cat(parts, dim=1)

    def score_ids(self, question: str | Tensor, ids: Sequence[str]) -> Tensor:
        """cos(u_q, v_a) for stored answers ``ids`` (``question``: text, or its encoded vector)."""
        vector = self.model.encode_questions([question])[0] if isinstance(question, str) else question
        return self._score_rows(vector.unsqueeze(0), self.store.rows_of(ids))[0]

    def candidates(self, questions: Sequence[str], vectors: Tensor) -> list[np.ndarray]:
        """The rows the first stage keeps for each question (at most ``k``)."""
        s, first = self.settings, self.store.first_stage
        assert first is not None  # check_search ran before
        lists = []
        if "vector" in SIGNALS[s.first_stage]:
            lists.append(first.search_vectors(vectors.numpy(), s.k, s.nprobe))
        if "bm25" in SIGNALS[s.first_stage]:
            lists.append(first.search_bm25(questions, s.k))
        if len(lists) == 1:
            return [rows for rows, _ in lists[0]]
        return [fuse(s.first_stage, pair, s.k, s.mix_weight) for pair in zip(*lists, strict=True)]

    def search_many(
        self, questions: Sequence[str], top: int = 10, progress: bool = False
    ) -> list[list[StoreHit]]:
        """The ``top`` stored answers for each question, best first: the first stage's ``k`` ranked
        by HAS, or (``first_stage="none"``) every answer scored, the questions sharing each block."""
        if not len(self.store) or not questions:
            return [[] for _ in questions]
        self.check_search()
        vectors = self.model.encode_questions(list(questions))
        if self.settings.first_stage == "none":
            return self._scan(vectors, top, progress)
        out = []
        for i, rows in enumerate(self.candidates(questions, vectors)):
            scores = self._score_rows(vectors[i : i + 1], rows)[0]
            best = torch.topk(scores, min(top, len(rows)))
            out.append(self._hits(rows[best.indices.numpy()], best.values))
        return out

    def search(self, question: str, top: int = 10) -> list[StoreHit]:
        """The ``top`` stored answers for ``question``, best first (see ``search_many``)."""
        return self.search_many([question], top)[0]

    def _scan(self, vectors: Tensor, top: int, progress: bool) -> list[list[StoreHit]]:
        """Every answer scored, one bounded block at a time, keeping a running top per question."""
        top = min(top, len(self.store))
        best_scores = torch.full((len(vectors), top), float("-inf"))
        best_rows = torch.zeros((len(vectors), top), dtype=torch.long)
        with tqdm(total=len(self.store), desc="full scan", unit="answer", disable=not progress) as bar:
            for first, values, lengths in self.store.scan():
                scores = self.model.score_ragged(vectors, values, lengths)
                rows = torch.arange(first, first + scores.shape[1]).expand_as(scores)
                merged = torch.topk(torch.cat([best_scores, scores], 1), top, dim=1)
                best_rows = torch.cat([best_rows, rows], 1).gather(1, merged.indices)
                best_scores = merged.values
                bar.update(scores.shape[1])
        return [self._hits(r.numpy(), s) for r, s in zip(best_rows, best_scores, strict=True)]

    def _hits(self, rows: np.ndarray, scores: Tensor) -> list[StoreHit]:
        out = []
        for row, score in zip(rows.tolist(), scores.tolist(), strict=True):
            answer_id, text = self.store.record(int(row))
            out.append(StoreHit(answer_id, float(score), text))
        return out

    def predict(self, pairs: Any, *args: Any, **kwargs: Any) -> Any:
        """Refused: a store ranker scores the store's answers by id, not texts given with a query."""
        raise ConfigError(_NO_TEXTS)

    def rank(self, query: Any, documents: Any, *args: Any, **kwargs: Any) -> Any:
        """Refused, as ``predict`` is."""
        raise ConfigError(_NO_TEXTS)

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        """Scores of each example's candidates, looked up in the store by candidate id."""
        started, cost = time.perf_counter(), Cost()
        vectors = self.model.encode_questions([ex.question.text for ex in examples], cost=cost)
        scores = [
            self.score_ids(vectors[i], [c.id for c in ex.candidates]).tolist()
            for i, ex in enumerate(tqdm(examples, desc="ranking", unit="question", disable=not progress))
        ]
        cost.seconds = time.perf_counter() - started
        return SimilarityResult(scores, cost)

    def rank_queries(self, queries: Sequence[StoreQuery], top: int = 10) -> list[StoreRanking]:
        """Each query's candidate ids ranked, or, without candidates, the ``top`` of the whole store."""
        searched = [query.question for query in queries if query.ids is None]
        # Whole-store searches run first (their first stage is checked before any other work) and
        # together (a full scan reads each block once for all of them).
        found = iter(self.search_many(searched, top=max(top, 1)))
        out = []
        for query in queries:
            if query.ids is None:
                ranked = next(found)
            else:
                scores = self.score_ids(query.question, query.ids).tolist()
                order = sorted(range(len(scores)), key=lambda j: -scores[j])
                ranked = [StoreHit(query.ids[j], scores[j], self.store.text(query.ids[j])) for j in order]
            out.append(StoreRanking(query, ranked))
        return out


@dataclass
class StoreRanking:
    """A query and its stored answers, best first."""

    query: StoreQuery
    ranked: list[StoreHit]

    def as_dict(self) -> dict[str, Any]:
        """The JSON line ``rank --store --output`` writes, in ``rank --output``'s shape: the candidates
        (each hit's id, text, score and rank) best first."""
        return {
            "qid": self.query.qid,
            "question": self.query.question,
            "candidates": [{**hit._asdict(), "rank": r} for r, hit in enumerate(self.ranked, start=1)],
        }
