"""Ranking against an answer store: questions encoded at query time, answers read from the store.

``StoreRanker.open(store)`` loads the model that built the store (or the one given, which must match
it); ``rank_queries`` serves the queries of ``sieveqa rank --store`` (and of the HTTP service).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import torch
from torch import Tensor
from tqdm.auto import tqdm

from sieveqa.data.answers import StoreQuery
from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.models.base import Ranker, RankResult
from sieveqa.models.hashing import HashingModel
from sieveqa.models.zoo import load_model
from sieveqa.runtime.answer_store import AnswerStore


def store_model(name: str | Path) -> HashingModel:
    """A model that encodes or reads a store: a HAS, BERT-attention or BERT-pooling model."""
    model = load_model(name)
    if not isinstance(model, HashingModel):
        raise ConfigError(
            f"--model {name} is a {model.kind} model; answer stores need a HAS, bert-attention or "
            "bert-pooling model (sieveqa train --arch has)"
        )
    return model


class StoreRanker(Ranker):
    """Questions scored against stored answers: each question is encoded once and only the
    candidates asked for are read from the store (in chunks of ``chunk``)."""

    def __init__(self, model: HashingModel, store: AnswerStore, chunk: int = 1024) -> None:
        store.check_model(model)
        self.model, self.store, self.chunk = model.eval(), store, chunk

    @classmethod
    def open(cls, store: str | Path, model: str | Path | None = None, **settings: Any) -> Self:
        """A ranker over the store at ``store``, with the model recorded in it (or ``model``),
        configured with ``settings`` (``device``, ``precision``, ``batch_size``)."""
        opened = AnswerStore.open(store)
        return cls(store_model(model or opened.model_ref).configure(**settings), opened)

    def score_ids(self, question: str | Tensor, ids: Sequence[str]) -> Tensor:
        """cos(u_q, v_a) for stored answers ``ids`` (``question``: text, or its encoded vector)."""
        vector = self.model.encode_questions([question])[0] if isinstance(question, str) else question
        out = [
            self.model.score_stored(vector, *self.store.batch(ids[start : start + self.chunk]))
            for start in range(0, len(ids), self.chunk)
        ]
        return torch.cat(out) if out else torch.empty(0)

    def search(self, question: str, top: int = 10) -> list[tuple[str, float]]:
        """The ``top`` stored answers for ``question`` over the whole store, best first."""
        vector = self.model.encode_questions([question])[0]
        ids: list[str] = []
        scores = []
        for chunk_ids, reps in self.store.iter_chunks(self.chunk):
            ids += chunk_ids
            scores.append(self.model.score_encoded(vector, reps))
        if not ids:
            return []
        best = torch.topk(torch.cat(scores), min(top, len(ids)))
        return [(ids[i], float(v)) for v, i in zip(best.values.tolist(), best.indices.tolist(), strict=True)]

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        """Scores of each example's candidates, looked up in the store by candidate id."""
        started, cost = time.perf_counter(), Cost()
        vectors = self.model.encode_questions([ex.question.text for ex in examples], cost=cost)
        scores = [
            self.score_ids(vectors[i], [c.id for c in ex.candidates]).tolist()
            for i, ex in enumerate(tqdm(examples, desc="ranking", unit="question", disable=not progress))
        ]
        cost.seconds = time.perf_counter() - started
        return RankResult(scores, cost)

    def rank_queries(self, queries: Sequence[StoreQuery], top: int = 10) -> list[StoreRanking]:
        """Each query's candidate ids ranked, or, without candidates, the ``top`` of the whole store."""
        out = []
        for query in queries:
            if query.ids is None:
                ranked = self.search(query.question, top=max(top, 1))
            else:
                scores = self.score_ids(query.question, query.ids).tolist()
                ranked = sorted(zip(query.ids, scores, strict=True), key=lambda x: -x[1])
            out.append(StoreRanking(query, ranked))
        return out


@dataclass
class StoreRanking:
    """A query and its stored answers, best first, as ``(id, score)``."""

    query: StoreQuery
    ranked: list[tuple[str, float]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "qid": self.query.qid,
            "question": self.query.question,
            "ranked": [{"id": i, "score": s, "rank": r} for r, (i, s) in enumerate(self.ranked, start=1)],
        }
