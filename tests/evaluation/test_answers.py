"""Scoring an answer method on a labelled passage benchmark: exact numbers on a hand-made set."""

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.evaluation.answers import evaluate_answers, passages_of
from sieveqa.runtime.answer.answerer import Answerer
from sieveqa.runtime.answer.peasi import Peasi
from sieveqa.runtime.answer.sentence import Pointwise
from tests.fakes import TOP_PASSAGE, KeywordRanker, KeywordSelector


def _examples() -> list[RankingExample]:
    def cand(cid, text, label, pid):
        return Candidate(cid, text, label, pid, "doc")

    q1 = [  # the answer sits in the second passage; the first passage says "answer" twice, wrongly
        cand("1a", "an answer here, answer there", 0, "p1"),
        cand("1b", "nothing", 0, "p1"),
        cand("1c", "the answer", 1, "p2"),
    ]
    q2 = [cand("2a", "the answer", 1, "p3"), cand("2b", "other", 0, "p3")]
    return [RankingExample(Question("q1", "?"), q1), RankingExample(Question("q2", "?"), q2)]


def test_passages_are_rebuilt_with_spans() -> None:
    passages, members = passages_of(_examples()[0])
    assert [p.id for p in passages] == ["p1", "p2"]
    assert passages[0].sentences == ["an answer here, answer there", "nothing"]
    assert [c.id for c in members[1]] == ["1c"]


def test_pointwise_and_peasi_scores() -> None:
    ranker = KeywordRanker()
    pointwise = evaluate_answers(Answerer(Pointwise(ranker)), _examples(), progress=False)
    # q1: "1a" (2 mentions) outranks the correct "1c"; q2 is right at rank 1.
    assert pointwise.metrics == {"p@1": 0.5, "map": 0.75, "mrr": 0.75}
    assert pointwise.passage_metrics is None
    assert pointwise.cost["inferences_per_question"] == 2.5
    peasi = evaluate_answers(
        Answerer(Peasi(ranker, KeywordSelector(), options=TOP_PASSAGE)), _examples(), progress=False
    )
    assert peasi.metrics == {"p@1": 0.5}  # it only picks; no ranking to score
    assert peasi.passage_metrics == {"p@1": 0.5, "map": 0.75, "mrr": 0.75}
    assert peasi.cost["inferences_per_question"] == (3 + 2) / 2
