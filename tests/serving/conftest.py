"""Fixtures of the service tests: apps over the tiny random models and a keyword answerer."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import pytest
from fastapi.testclient import TestClient

from sieveqa.data.corpus import CorpusIndex, CorpusOptions
from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost
from sieveqa.models.base import Ranker, RankResult
from sieveqa.runtime.answer.answerer import Answerer
from sieveqa.runtime.answer.peasi import Peasi
from sieveqa.serving import Limits, Service, create_app
from tests.fakes import DOCS, TOP_PASSAGE, KeywordRanker, KeywordSelector


class RecordingRanker(Ranker):
    """Scores a text by its length; records the questions of every call; can be held at a gate."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        self.entered.set()
        self.gate.wait(10)
        self.calls.append([ex.question.text for ex in examples])
        scores = [[float(len(c.text)) for c in ex.candidates] for ex in examples]
        pairs = sum(map(len, scores))
        return RankResult(scores, Cost(layer_units=pairs * 2, sequences=pairs))


@pytest.fixture
def client(tiny_model) -> Iterator[TestClient]:
    """The tiny cross-encoder served with small limits (5 texts, 200 characters, 4 KB bodies)."""
    service = Service(tiny_model, limits=Limits(max_texts=5, max_chars=200, max_body_bytes=4096))
    with TestClient(create_app(service)) as c:
        yield c


@pytest.fixture
def keyword_answerer(tmp_path) -> Answerer:
    index = CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))
    return Answerer(Peasi(KeywordRanker(), KeywordSelector(), options=TOP_PASSAGE), index, retrieve=10)
