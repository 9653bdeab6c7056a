"""The answer pipeline: each method's choice, its cost, and what an empty retrieval gives."""

import math
from collections.abc import Sequence

import pytest
import torch

from sieveqa.data.corpus import CorpusIndex, CorpusOptions
from sieveqa.data.documents import Document
from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.models.base import Ranker, RankResult
from sieveqa.runtime.answerer import Answerer

DOCS = [
    Document("a", "Cats sleep a lot. The answer is forty two. Dogs bark.", "Animals"),
    Document("b", "Rain falls. Snow is cold.", "Weather"),
]


class KeywordRanker(Ranker):
    """Scores a text by how often it says 'answer' (and counts one inference per text)."""

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        scores = [[float(c.text.count("answer")) for c in ex.candidates] for ex in examples]
        return RankResult(scores, Cost(sequences=sum(len(s) for s in scores)))

    def score_matrix(self, questions, texts, progress=False, last_only=False, windows=False):
        return torch.tensor([[float(t.count("answer"))] for t in texts]), Cost(sequences=len(texts))


class KeywordSelector:
    """EASI stand-in: all probability on the sentences that say 'answer' (one inference a passage)."""

    def select(self, questions, passages, progress=False):
        out = []
        for sents in passages:
            hits = [float("answer" in s) for s in sents]
            total = sum(hits) or len(sents)
            out.append([(h or (not any(hits))) / total for h in hits])
        return out, Cost(sequences=len(passages))


@pytest.fixture
def index(tmp_path):
    return CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))


@pytest.mark.parametrize(
    ("method", "inferences"),
    [("peasi", 4 + 1), ("peasi-all", 4 + 4), ("pointwise", 5), ("cascade", 5)],
)
def test_every_method_finds_the_answer_sentence(index, method: str, inferences: int) -> None:
    ranker = KeywordRanker()
    answerer = Answerer(
        method, index, reranker=ranker, selector=KeywordSelector(), ranker=ranker, retrieve=10
    )
    answer = answerer.answer("the answer about cats, dogs, rain and snow?")
    assert answer.best is not None and answer.best.text == "The answer is forty two."
    assert answer.best.passage.doc_id == "a" and answer.best.passage.title == "Animals"
    assert len(answer.passages) == 4 and answer.inferences == inferences
    assert (answer.ranking is None) == (method == "peasi")


def test_top_n_reads_that_many_passages(index) -> None:
    ranker = KeywordRanker()
    answerer = Answerer("peasi", index, reranker=ranker, selector=KeywordSelector(), top=3)
    answer = answerer.answer("answer rain snow cats")
    assert len(answer.answers) == 3 and answer.inferences == len(answer.passages) + 3
    # Ranked by P(passage) × P(sentence | passage): the passage saying "answer" comes first.
    combined = [f.score / (1 + math.exp(-f.passage_score)) for f in answer.answers]
    assert answer.ranking == answer.answers and combined == sorted(combined, reverse=True)
    assert answer.best.text == "The answer is forty two."


def test_a_question_that_retrieves_nothing_gets_no_answer(index) -> None:
    ranker = KeywordRanker()
    answerer = Answerer("peasi", index, reranker=ranker, selector=KeywordSelector())
    answer = answerer.answer("zzz qqq")
    assert answer.answers == [] and answer.best is None and answer.inferences == 0


def test_methods_name_the_models_they_miss(index) -> None:
    with pytest.raises(ConfigError, match="needs a reranker and a selector"):
        Answerer("peasi", index)
    with pytest.raises(ConfigError, match="--method must be one of"):
        Answerer("magic", index)
    with pytest.raises(ConfigError, match="no corpus index"):
        Answerer("pointwise", None, ranker=KeywordRanker()).answer("q")
