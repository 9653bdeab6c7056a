"""BM25 fusion: parsing, the two formulas, BM25 over a candidate list, a fused ranker, the answerer."""

import numpy as np
import pytest

from sieveqa.data.corpus import CorpusIndex, CorpusOptions
from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import ConfigError
from sieveqa.runtime.answer.answerer import Answerer
from sieveqa.runtime.answer.fusion import (
    FusedRanker,
    Fusion,
    default_fusion,
    first_stage_scores,
    lexical_scores,
    with_fusion,
)
from sieveqa.runtime.answer.peasi import Peasi
from sieveqa.runtime.answer.sentence import Pointwise
from tests.fakes import DOCS, TOP_PASSAGE, KeywordRanker, KeywordSelector


@pytest.mark.parametrize(
    ("text", "method", "weight"),
    [("none", "none", 0.0), (None, "none", 0.0), ("interp:0.3", "interp", 0.3), ("rrf:1", "rrf", 1.0)],
)
def test_parse(text, method: str, weight: float) -> None:
    fusion = Fusion.parse(text)
    assert (fusion.method, fusion.weight) == (method, weight)
    assert Fusion.parse(str(fusion)) == fusion


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bm25", "--fusion must be none, auto, interp:W or rrf:W"),
        ("interp", "--fusion must be none, auto, interp:W or rrf:W"),
        ("interp:x", "the weight 'x' is not a number"),
        ("rrf:1.5", "fusion weight must be within"),
        ("interp:nan", "fusion weight must be within"),
    ],
)
def test_bad_fusions_name_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Fusion.parse(text)


def test_interpolation_of_normalised_scores() -> None:
    fusion = Fusion("interp", 0.25)
    # model [0, 1, 0.5] after min-max; BM25 [1, 0, 0.5]
    assert fusion.combine([-2.0, 2.0, 0.0], [4.0, 0.0, 2.0]) == pytest.approx([0.25, 0.75, 0.5])
    assert Fusion("interp", 0.0).combine([3.0, 1.0], [0.0, 9.0]) == [3.0, 1.0]
    assert Fusion("interp", 0.5).combine([5.0, 5.0], [1.0, 1.0]) == [1.0, 1.0]  # flat: at the top


def test_reciprocal_rank_fusion() -> None:
    fused = Fusion("rrf", 0.5).combine([3.0, 1.0, 2.0], [0.0, 5.0, 1.0])
    assert fused == pytest.approx([0.5 / 61 + 0.5 / 63, 0.5 / 63 + 0.5 / 61, 0.5 / 62 + 0.5 / 62])
    assert Fusion("rrf", 1.0).combine([3.0, 1.0, 2.0], [0.0, 5.0, 1.0]) == pytest.approx(
        [1 / 63, 1 / 61, 1 / 62]
    )


def test_rrf_ignores_bm25_when_it_matches_nothing() -> None:
    # Every candidate ties at 0: the tie must not favour the first ones (the model ranks them last).
    fused = Fusion("rrf", 0.6).combine([float(i) for i in range(10)], [0.0] * 10)
    assert sorted(range(10), key=lambda i: -fused[i]) == list(range(9, -1, -1))


def test_non_finite_scores_are_refused_naming_whose() -> None:
    with pytest.raises(ValueError, match="the model's are \\[-inf\\]") as raised:  # a bug, not the caller's
        Fusion("interp", 0.5).combine([float("-inf"), 1.0], [0.0, 1.0])
    assert not isinstance(raised.value, ConfigError)
    with pytest.raises(ConfigError, match="the first stage's are \\[nan\\]"):
        Fusion("interp", 0.5).combine([0.0, 1.0], [1.0, float("nan")])


def test_huge_finite_first_stage_scores_fuse_to_finite_scores() -> None:
    # min-max of [1e308, -1e308] overflowed (their difference is inf): the scores came back NaN
    fused = Fusion("interp", 0.2).combine([0.0, 1.0], [1e308, -1e308])
    assert np.isfinite(fused).all()
    assert fused == pytest.approx([0.2, 0.8])


def test_lengths_must_match() -> None:
    with pytest.raises(ValueError, match="2 model scores but 1 BM25 scores"):
        Fusion("rrf", 0.5).combine([1.0, 2.0], [1.0])


def test_bm25_over_the_candidates_themselves() -> None:
    texts = ["Fleming discovered penicillin in 1928.", "Penicillin is an antibiotic.", "The sky is blue.", ""]
    scores = lexical_scores("Who discovered penicillin?", texts)
    assert scores[0] > scores[1] > 0 and scores[2] == scores[3] == 0
    assert lexical_scores("the of and", ["a b c", "the of"]) == [0.0, 0.0]  # stopwords only
    assert lexical_scores("anything", []) == []


def _example() -> RankingExample:
    texts = ["the answer", "penguins live in Antarctica", "nothing here"]
    return RankingExample(
        Question("q", "where do penguins live"), [Candidate(str(i), t) for i, t in enumerate(texts)]
    )


def test_fused_ranker_moves_the_lexical_match_up() -> None:
    ex = _example()
    assert KeywordRanker().run([ex]).orders()[0][0] == 0
    fused = with_fusion(KeywordRanker(), "interp:0.6")
    assert isinstance(fused, FusedRanker)
    result = fused.run([ex])
    assert result.orders()[0][0] == 1 and result.logits is False
    assert with_fusion(KeywordRanker(), "interp:0").__class__ is KeywordRanker  # inactive: unwrapped


def test_the_first_stages_own_scores_are_fused_where_the_candidates_carry_them() -> None:
    """A BEIR set's BM25 over its whole corpus (or a file's retrieval_score), not BM25 over the list."""
    ex = _example()
    given = [
        Candidate(c.id, c.text, retrieval_score=s)
        for c, s in zip(ex.candidates, (1.0, 0.0, 5.0), strict=True)
    ]
    carried = RankingExample(ex.question, given)
    assert first_stage_scores(carried) == [1.0, 0.0, 5.0]
    assert first_stage_scores(ex) == lexical_scores(ex.question.text, [c.text for c in ex.candidates])
    assert with_fusion(KeywordRanker(), "interp:1").run([carried]).orders()[0] == [2, 0, 1]


def test_auto_fuses_only_where_the_first_stages_scores_are_given() -> None:
    auto = Fusion.parse("auto")
    assert str(auto) == "auto" and auto.active and auto.method == "interp"
    ex = _example()
    plain = KeywordRanker().run([ex])
    unchanged = with_fusion(KeywordRanker(), auto).run([ex])
    assert unchanged.scores == plain.scores and unchanged.logits == plain.logits  # nothing given: the model's
    given = [
        Candidate(c.id, c.text, retrieval_score=s)
        for c, s in zip(ex.candidates, (0.0, 0.0, 9.0), strict=True)
    ]
    fused = with_fusion(KeywordRanker(), auto).run([RankingExample(ex.question, given)])
    expected = auto.combine(plain.scores[0], [0.0, 0.0, 9.0])
    assert fused.scores[0] == pytest.approx(expected) and fused.logits is False


def test_a_fused_answer_keeps_the_models_own_score(tmp_path) -> None:
    # The confidence calibrates the model's score of the answer it chose: under RRF the fused score of
    # every question's top answer is about the same (~1/61) and carries no level at all.
    index = CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))
    fused = Answerer(Pointwise(KeywordRanker(), "rrf:0.9"), index, retrieve=10)
    best = fused.answer("the answer about rain?").best
    assert best.text == "Rain falls."  # ordered by the fusion
    assert best.score == 0.0  # but scored by the model: 'Rain falls.' says 'answer' no times
    ranked = fused.answer("is the answer here?").answers
    assert all(f.score == float(f.text.count("answer")) for f in ranked)
    result = with_fusion(KeywordRanker(), "rrf:0.5").run([_example()])
    assert result.own_scores() == [[1.0, 0.0, 0.0]] and result.scores != result.own_scores()


def test_answerer_fuses_passages_and_sentences(tmp_path) -> None:
    index = CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))
    question = "the answer about rain?"
    plain = Answerer(Pointwise(KeywordRanker()), index, retrieve=10).answer(question)
    assert plain.best.text == "The answer is forty two."
    fused = Answerer(Pointwise(KeywordRanker(), "interp:0.9"), index, retrieve=10)
    assert fused.answer(question).best.text == "Rain falls."
    peasi = Answerer(Peasi(KeywordRanker(), KeywordSelector(), options=TOP_PASSAGE), index, retrieve=10)
    question = "is the answer rain or snow?"
    assert peasi.answer(question).best.passage.doc_id == "a"
    peasi.method.fusion = Fusion("interp", 0.9)
    best = peasi.answer(question).best
    assert best.passage.doc_id == "b"  # two words of the question against one
    assert best.passage_score == 0.0  # the reranker's own score is reported, not the fused one


def test_reader_methods_refuse_a_fusion(tmp_path) -> None:
    from sieveqa.runtime.answer.answerer import load_answerer

    with pytest.raises(ConfigError, match=r"--fusion is not an option of --method skyline \(it is for peasi"):
        load_answerer("skyline", None, reader="r", fusion="interp:0.3")


def test_a_fused_cascade_keeps_its_cost_report(tiny_cascade) -> None:
    from sieveqa.runtime.cascade import CascadeRanker

    fused = with_fusion(CascadeRanker(tiny_cascade, drop_ratios=0.3), "interp:0.2").run([_example()])
    info = fused.info()
    assert info["fusion"] == "interp:0.2" and "relative_cost" in info and fused.variants()


@pytest.mark.parametrize(
    ("method", "fusion"),
    [("pointwise", "interp:0.1"), ("cascade", "rrf:0.05"), ("peasi", "none"), ("skyline", "none")],
)
def test_each_method_defaults_to_its_dev_choice(method: str, fusion: str) -> None:
    # bench/results/fusion/dev.json (pointwise, cascade) and peasi-v2-dev.json (the retrained PEASI pair)
    assert str(default_fusion(method)) == fusion
