"""The answer pipeline: each method's choice, its cost, and what an empty retrieval gives."""

import pytest

from sieveqa.data.corpus import CorpusIndex, CorpusOptions
from sieveqa.errors import ConfigError
from sieveqa.runtime.answer.answerer import Answerer, load_answerer
from sieveqa.runtime.answer.peasi import Peasi
from sieveqa.runtime.answer.sentence import Cascade, PeasiAll, Pointwise
from tests.fakes import DOCS, TOP_PASSAGE, KeywordRanker, KeywordSelector

METHODS = {
    "peasi": lambda r: Peasi(r, KeywordSelector(), options=TOP_PASSAGE),
    "peasi-all": lambda r: PeasiAll(KeywordSelector(), r),
    "pointwise": Pointwise,
    "cascade": Cascade,
}


@pytest.fixture
def index(tmp_path):
    return CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))


@pytest.mark.parametrize(
    ("method", "inferences"),
    [("peasi", 4 + 1), ("peasi-all", 4 + 4), ("pointwise", 5), ("cascade", 5)],
)
def test_every_method_finds_the_answer_sentence(index, method: str, inferences: int) -> None:
    answerer = Answerer(METHODS[method](KeywordRanker()), index, retrieve=10)
    answer = answerer.answer("the answer about cats, dogs, rain and snow?")
    assert answer.best is not None and answer.best.text == "The answer is forty two."
    assert answer.best.passage.doc_id == "a" and answer.best.passage.title == "Animals"
    assert len(answer.passages) == 4 and answer.inferences == inferences
    assert (answer.ranking is None) == (method == "peasi")


def test_top_n_reads_that_many_passages(index) -> None:
    answerer = Answerer(Peasi(KeywordRanker(), KeywordSelector(), options=TOP_PASSAGE), index, top=3)
    answer = answerer.answer("answer rain snow cats")
    assert len(answerer.answer("answer rain snow cats", top=2).answers) == 2  # a request's own top
    assert len(answer.answers) == 3 and answer.inferences == len(answer.passages) + 3
    # One answer per passage, ranked by passage logit + log P(sentence | passage).
    joint = [f.passage_score + f.signals["in_passage"] for f in answer.answers]
    assert [f.score for f in answer.answers] == joint and joint == sorted(joint, reverse=True)
    assert len({f.passage.id for f in answer.answers}) == 3 and answer.ranking is None
    assert answer.best.text == "The answer is forty two."


def test_a_question_that_retrieves_nothing_gets_no_answer(index) -> None:
    answerer = Answerer(Peasi(KeywordRanker(), KeywordSelector(), options=TOP_PASSAGE), index)
    answer = answerer.answer("zzz qqq")
    assert answer.answers == [] and answer.best is None and answer.inferences == 0
    assert not answer.answered  # `if answer.answered: answer.best.text` must be safe


def test_questions_may_come_from_a_generator(index) -> None:
    answerer = Answerer(Peasi(KeywordRanker(), KeywordSelector(), options=TOP_PASSAGE), index)
    answers = answerer.answer_many(q for q in ["answer rain snow cats", "zzz qqq"])
    assert [a.question for a in answers] == ["answer rain snow cats", "zzz qqq"]
    assert answers[0].answered and answers[0].best is not None


def test_options_and_methods_are_checked_before_any_model_loads(index, monkeypatch) -> None:
    from sieveqa.runtime.answer.method import ModelSettings

    def loaded(*_, **__) -> None:
        raise AssertionError("a model loaded before the options were checked")

    monkeypatch.setattr(ModelSettings, "model", loaded)
    monkeypatch.setattr(ModelSettings, "ranker", loaded)
    for method in ("peasi", "pointwise", "cascade"):  # a bad --fusion used to surface after the models loaded
        with pytest.raises(ConfigError, match=r"^fusion weight must be within \[0, 1\], got 2.0$"):
            load_answerer(method, str(index.path), fusion="rrf:2")
        with pytest.raises(ConfigError, match="--fusion must be none, auto, interp:W or rrf:W"):
            load_answerer(method, str(index.path), fusion="max")
    with pytest.raises(ConfigError, match="--method must be one of peasi, peasi-all, pointwise"):
        load_answerer("magic", str(index.path))
    with pytest.raises(
        ConfigError, match=r"^--budget is not an option of --method peasi \(it is for skyline\)$"
    ):
        load_answerer("peasi", str(index.path), budget=1.0)
    with pytest.raises(
        ConfigError, match=r"--reranker is not an option of --method pointwise \(it is for peasi\)"
    ):
        load_answerer("pointwise", str(index.path), reranker="x")
    with pytest.raises(ConfigError, match="no corpus index"):
        Answerer(Pointwise(KeywordRanker())).answer("q")


def test_a_cascade_reranker_drops_passages_at_its_exits(index, tiny_cascade) -> None:
    from sieveqa.runtime.cascade import CascadeRanker

    question = "the answer about cats, dogs, rain and snow?"
    full = Answerer(
        Peasi(CascadeRanker(tiny_cascade, drop_ratios=0.0), KeywordSelector(), options=TOP_PASSAGE), index
    )
    pruned = Answerer(
        Peasi(CascadeRanker(tiny_cascade, drop_ratios=0.5), KeywordSelector(), options=TOP_PASSAGE), index
    )
    a, b = full.answer(question), pruned.answer(question)
    assert a.cost.layer_units == 4 * 4  # 4 passages through 4 layers
    assert b.cost.layer_units == 4 + 2 + 1 + 1  # half dropped at each exit but the last, ⌊α·k⌋
    # Passages sort by the exit they reached (its index + the probability there); the answer's
    # passage score is the reranker's logit at that exit, not the sorting score.
    last = tiny_cascade.exit_scores([question] * 4, [p.text for p in a.passages])[:, -1]
    best = max(range(4), key=lambda i: a.passage_scores[i])
    assert a.best.passage_score == pytest.approx(float(last[best]), abs=1e-5)
    survivor = max(range(4), key=lambda i: b.passage_scores[i])
    assert b.passage_scores[survivor] >= 3.0 and sum(s >= 3.0 for s in b.passage_scores) == 1
    assert b.best.passage.id == b.passages[survivor].id
    assert b.best.passage_score == pytest.approx(float(last[survivor]), abs=1e-5)


def test_drop_ratios_need_a_cascade(index, saved_tiny) -> None:
    from sieveqa.runtime.answer.sentence import parse_ratios

    assert parse_ratios("0.5,0.3") == (0.5, 0.3) and parse_ratios(0.2) == (0.2,)
    assert parse_ratios(None) is None
    with pytest.raises(ConfigError, match=r"^--drop-ratios must be numbers separated by commas, got 'half'"):
        parse_ratios("half")
    with pytest.raises(ConfigError, match=r"cross-encoder model, which takes no runtime policy \(drop_"):
        load_answerer("cascade", str(index.path), ranker=str(saved_tiny), drop_ratios="0.3", judge="none")


def test_the_python_api_refuses_what_the_cli_and_http_refuse(index, monkeypatch, caplog) -> None:
    """answer("") gave answered=True with no answers; budget_ms="100" was a raw TypeError; a number
    for drop_ratios was refused with "expected str" where load_ranker takes it (issue 42)."""
    answerer = Answerer(Peasi(KeywordRanker(), KeywordSelector(), options=TOP_PASSAGE), index)
    with pytest.raises(ConfigError, match=r"^the question is empty$"):
        answerer.answer("  ")
    with pytest.raises(ConfigError, match=r"^question 2 is not a string$"):
        answerer.answer_many(["cats?", None])  # type: ignore[list-item]
    # A 30,000-character question was read to its first tokens without a word (HTTP: a 413).
    with pytest.raises(ConfigError, match=r"^question 2: 30000 characters, more than 20000$"):
        answerer.answer_many(["cats?", "cats " * 6000])
    answerer.answer("Why do cats " + "really " * 80 + "purr?")  # long, but taken: said
    import sieveqa.runtime.answer.questions as answerer_module

    monkeypatch.setattr(answerer_module, "_SAID_SCRIPT", [])
    answerer.answer("猫はなぜ喉を鳴らすのですか？")  # the models read English: said once
    answerer.answer("Почему кошки мурлычут?")
    english = [r for r in caplog.records if "the shipped models were trained on English" in r.getMessage()]
    assert len(english) == 1 and english[0].getMessage().startswith("the question is not in the Latin")
    assert any("is 84 words long: the models read a question of up to about 64 words" in r.getMessage()
               for r in caplog.records)  # fmt: skip
    with pytest.raises(ConfigError, match=r"^top must be an integer >= 1, got 1.5$"):
        answerer.answer("cats?", top=1.5)  # type: ignore[arg-type]
    with pytest.raises(
        ConfigError, match=r"^--budget-ms must be a positive number of milliseconds, got '100'$"
    ):
        load_answerer("cascade", str(index.path), budget_ms="100")  # type: ignore[arg-type]
    from sieveqa.runtime.answer.method import method_options

    assert method_options("cascade", {"drop_ratios": 0.3})[1].drop_ratios == [0.3]
    assert method_options("cascade", {"drop_ratios": (0.5, 0.3)})[1].drop_ratios == [0.5, 0.3]


def test_answer_keeps_one_answerer_per_meaning_and_a_few_at_most(index, monkeypatch) -> None:
    """answer() loaded a model per spelling of the options and kept each forever (issue 42)."""
    from sieveqa.runtime.answer import answerer as module

    loads: list[dict] = []

    def load(method, folder, **options):
        loads.append(options)
        return Answerer(Peasi(KeywordRanker(), KeywordSelector(), options=TOP_PASSAGE), index)

    monkeypatch.setattr(module, "load_answerer", load)
    monkeypatch.setattr(module, "_LOADED", type(module._LOADED)())
    question = "the answer about cats, dogs, rain and snow?"
    module.answer(question, index.path, method="peasi", read=3)
    module.answer(question, index.path, method="peasi", read=3, drop_ratios=None)
    module.answer(question, index.path, method="peasi")  # read 3 is the default: the same answerer
    assert len(loads) == 1
    # The default judge named loads whatever the calibration reads; left out, it may be held back.
    module.answer(question, index.path, method="peasi", judge="peasi-judge")
    assert len(loads) == 2
    for n in range(1, 7):
        module.answer(question, index.path, method="peasi", read=n + 3)
    assert len(module._LOADED) == module._KEPT


def test_a_min_confidence_that_is_not_a_number_is_called_so() -> None:
    from sieveqa.runtime.answer.answerer import load_answerer

    with pytest.raises(ConfigError, match=r"^--min-confidence: nan is not a number"):
        load_answerer("peasi", "no-such-index", min_confidence=float("nan"))
