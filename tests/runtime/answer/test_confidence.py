"""Calibrated confidence: Platt scaling, the dev-chosen threshold, the answerer abstaining below it,
and confidence files that apply only to the models they were fitted for."""

import json
import math
from pathlib import Path

import pytest

from sieveqa.data.corpus import CorpusIndex, CorpusOptions
from sieveqa.errors import ConfigError
from sieveqa.runtime.answer.answerer import Answerer, load_answerer
from sieveqa.runtime.answer.confidence import (
    Confidence,
    best_threshold,
    choose_threshold,
    fit_logistic,
    fit_platt,
    load_confidence,
    save_confidence,
)
from sieveqa.runtime.answer.sentence import Pointwise
from tests.fakes import DOCS, KeywordRanker, LengthJudge


@pytest.fixture
def index(tmp_path):
    return CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))


def test_platt_scaling_orders_and_calibrates() -> None:
    # Right answers score high, wrong ones low, with overlap: the fit is increasing and calibrated.
    scores = [float(s) for s in range(-10, 10)]
    right = [s > 2 or s == -3 for s in range(-10, 10)]
    scale, bias = fit_platt(scores, right)
    conf = Confidence(scale, bias)
    assert scale > 0 and conf(9.0) > 0.9 and conf(-9.0) < 0.1
    assert sum(conf(s) for s in scores) == pytest.approx(sum(right), abs=0.5)  # mean matches the rate
    assert conf(-math.inf) == 0.0 and conf(math.inf) == 1.0
    with pytest.raises(ConfigError, match="needs right and wrong answers"):
        fit_platt([1.0, 2.0], [True, True])


def test_the_threshold_keeps_the_share_asked_for() -> None:
    kept = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05]
    threshold = choose_threshold(kept, 0.9)
    assert threshold == 0.1 and sum(c >= threshold for c in kept) == 9
    assert choose_threshold(kept, 1.0) == 0.05 and choose_threshold([], 0.9) == 0.0


def test_a_signal_the_score_lacks_is_learned_and_must_be_given() -> None:
    # Right exactly when the passage signal is positive; the score says nothing.
    rows = [[float(i % 3), p] for i in range(30) for p in (-2.0, 2.0)]
    right = [p > 0 for _, p in rows]
    weights, bias = fit_logistic(rows, right)
    conf = Confidence(weights[0], bias, signals={"passage": weights[1]})
    assert conf(1.0, {"passage": 2.0}) > 0.9 and conf(1.0, {"passage": -2.0}) < 0.1
    with pytest.raises(ConfigError, match="carries no passage signal"):
        conf(1.0)
    assert conf.applies_to({}, ("passage", "margin")) and not conf.applies_to({}, ("margin",))


def test_the_overall_threshold_counts_right_answers_and_right_abstentions() -> None:
    # Confidence 0.9 and 0.8 right, 0.7 an unanswerable question, 0.6 right, 0.1 unanswerable.
    values = [0.9, 0.8, 0.7, 0.6, 0.1]
    gains = [1.0, 1.0, 0.0, 1.0, 0.0]
    losses = [0.0, 0.0, 1.0, 0.0, 1.0]
    # Answering down to 0.6 gets 3 right answers and 1 right abstention (0.1): 4 of 5.
    assert best_threshold(values, gains, losses) == (0.6, 4.0)
    assert best_threshold([0.5, 0.4], [0.0, 0.0], [1.0, 1.0]) == (math.inf, 2.0)  # abstain on all
    assert best_threshold([], [], []) == (math.inf, 0.0)


def test_the_answerer_abstains_below_min_confidence_and_shows_its_guess(index) -> None:
    method = Pointwise(KeywordRanker())
    question = "the answer about cats, dogs, rain and snow?"
    plain = Answerer(method, index).answer(question)
    assert plain.answered and plain.confidence is None  # uncalibrated: always answers
    best = plain.best.score
    sure = Answerer(method, index, confidence=Confidence(1.0, -best, min_confidence=0.4)).answer(question)
    assert sure.answered and sure.confidence == pytest.approx(0.5)
    unsure = Answerer(method, index, confidence=Confidence(1.0, -best - 3, min_confidence=0.4))
    guess = unsure.answer(question)
    assert not guess.answered and guess.best.text == plain.best.text  # the best guess stays
    assert guess.best.as_dict()["confidence"] == pytest.approx(1 / (1 + math.exp(3)), abs=1e-6)
    assert unsure.answers(guess, min_confidence=0.01)  # a request's own threshold
    with pytest.raises(ConfigError, match="--min-confidence: --method pointwise has no confidence"):
        Answerer(method, index, min_confidence=0.5)


def test_a_confidence_file_applies_only_to_its_models(index, tmp_path: Path) -> None:
    file = tmp_path / "confidence.json"
    save_confidence(file, "pointwise", Confidence(1.0, 0.0, 0.3, models={"ranker": "elsewhere"}))
    save_confidence(file, "peasi", Confidence(2.0, 1.0, 0.2, models={"reranker": "default"}))
    assert set(load_confidence(file)) == {"peasi", "pointwise"}
    with pytest.raises(ConfigError, match=r"fitted for ranker elsewhere, not ranker default$"):
        load_answerer("pointwise", str(index.path), confidence=str(file), ranker="default", judge="none")
    with pytest.raises(ConfigError, match="has no calibration for --method cascade"):
        load_answerer("cascade", str(index.path), confidence=str(file), min_confidence=0.5)
    with pytest.raises(ConfigError, match="--min-confidence must be a probability"):
        load_answerer("pointwise", str(index.path), min_confidence=1.5)
    file.write_text(json.dumps({"format": 1, "methods": {"peasi": {"scale": "x", "bias": 0}}}))
    with pytest.raises(ConfigError, match=r"methods.peasi: field 'scale': expected float"):
        load_confidence(file)


@pytest.mark.parametrize("method", ["reader", "tower", "skyline"])
def test_the_shipped_file_calibrates_each_reader_method_as_it_loads_by_default(method: str) -> None:
    # What Reader.load names with no option given (the shipped reader's own scheduler is not used:
    # dev preferred the calibrated probabilities), and the signals its answers then carry.
    from sieveqa import registry

    options = registry.answer_method(method).method_class().options_class()
    shipped = load_confidence()[method]
    assert shipped.applies_to({"reader": options.reader, "judge": options.judge}, ("judge",))
    assert not shipped.applies_to({"reader": options.reader}, ())  # --judge none: no confidence
    assert shipped.fitted_on["dev"] == "squad2-open:dev" and 0 < shipped.min_confidence < 1


def test_the_default_judge_loads_only_where_a_confidence_reads_it(
    index: CorpusIndex, saved_tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sieveqa.models import zoo

    monkeypatch.setitem(zoo.SHIPPED, "peasi-judge", saved_tiny)  # the tiny model stands in for MPNet
    tiny, where = str(saved_tiny), str(index.path)
    # The shipped calibration is for the shipped ranker: nothing would read a judge, so none loads.
    bare = load_answerer("pointwise", where, ranker=tiny)
    assert bare.method.judge is None and bare.method.model_names == {"ranker": tiny}
    assert bare.confidence is None and "passage" not in (bare.answer("cats?").best.signals or {})
    # Asked to abstain, it names the models as they would load, the default judge among them.
    with pytest.raises(
        ConfigError, match=r"for ranker default, judge peasi-judge, not ranker \S+, judge peasi-judge$"
    ):
        load_answerer("pointwise", where, ranker=tiny, min_confidence=0.5)
    # A calibration fitted with the default judge: it loads, and the answers carry what it reads.
    file = tmp_path / "confidence.json"
    models = {"ranker": tiny, "judge": "peasi-judge"}
    save_confidence(file, "pointwise", Confidence(1.0, 0.0, signals={"passage": 0.5}, models=models))
    read = load_answerer("pointwise", where, ranker=tiny, confidence=str(file))
    assert read.method.judge is not None and read.confidence is not None
    assert "passage" in read.answer("cats?").best.signals
    # Fitting a confidence, or a judge named by the user, loads it whatever the calibrations say.
    assert (
        load_answerer("pointwise", where, ranker=tiny, fitting=True).method.model_names["judge"]
        == "peasi-judge"
    )
    assert load_answerer("pointwise", where, ranker=tiny, judge=tiny).method.model_names["judge"] == tiny


def test_the_judge_reads_the_best_answers_passage_unless_every_confidence_is_asked(index) -> None:
    judge = LengthJudge()
    method = Pointwise(KeywordRanker(), judge=judge)  # type: ignore[arg-type]
    reads_judge = Confidence(1.0, 0.0, signals={"passage": 0.01})
    answerer = Answerer(method, index, top=3, confidence=reads_judge)
    question = "the answer about cats, dogs, rain and snow?"
    found = answerer.answer(question)
    passages = {a.passage.text for a in found.answers}
    assert len(passages) > 1 and judge.read == [found.best.passage.text]  # one pass a question
    assert found.confidence is not None and found.answered
    assert [a.confidence is not None for a in found.answers] == [
        a.passage.text == found.best.passage.text for a in found.answers
    ]
    judge.read.clear()
    every = answerer.answer(question, confidences="all")
    assert sorted(judge.read) == sorted(passages)  # each answer's passage once
    assert all(a.confidence is not None for a in every.answers)
    assert every.inferences == found.inferences + len(passages) - 1
    assert (
        Answerer(method, index, top=3, confidence=reads_judge, confidences="all").answer(question).answers
        == every.answers
    )
    blind = Answerer(Pointwise(KeywordRanker()), index, top=3, confidence=reads_judge)  # no judge at all
    with pytest.raises(ConfigError, match="the answer carries no passage signal"):
        blind.answer(question)  # the best answer's confidence is what abstains: never silently none
    with pytest.raises(ConfigError, match=r"--confidences must be one of best, all, got .some."):
        answerer.answer(question, confidences="some")
    with pytest.raises(ConfigError, match="--confidences must be one of best, all"):
        load_answerer("pointwise", str(index.path), confidences="every")
