"""``sieveqa calibrate-confidence`` fits a method's confidence on questions some of which nothing
answers, and ``answer`` then reports it and abstains below it."""

import importlib
import json
from pathlib import Path

import pytest

from sieveqa.data.open_qa import OpenExample, RetrievedPassage, write_open_jsonl
from sieveqa.models.zoo import RESOURCES
from sieveqa.runtime.answer.confidence import load_confidence
from tests.cli.conftest import one_error_line

CITIES = [("Paris", "France"), ("Berlin", "Germany"), ("Rome", "Italy"), ("Madrid", "Spain")]


@pytest.fixture
def pair(tmp_path: Path) -> str:
    # Right and wrong answers whatever the (random) model picks: half the answerable questions have
    # only sentences holding their answer, the other half none; the unanswerable ones (SQuAD 2.0's
    # "impossible", in the same file) never do.
    examples = []
    for i in range(16):
        city, country = CITIES[i % 4]
        question = f"What is the capital of {country}?"
        gold = RetrievedPassage(f"g{i}", f"The capital of {country} is {city}. {city} is a large city.")
        other = RetrievedPassage(f"o{i}", "Bananas are yellow fruit. They grow in warm places.")
        examples.append(OpenExample(f"q{i}", question, [city], [gold] if i % 2 else [other]))
        examples.append(OpenExample(f"u{i}", f"What is the capital of {country}?", [], [other], True))
    write_open_jsonl(tmp_path / "dev.jsonl", examples)
    return str(tmp_path / "dev.jsonl")


@pytest.mark.slow
def test_calibrate_then_answer_with_confidence(
    sieveqa, saved_tiny: Path, pair: str, tmp_path: Path, monkeypatch
) -> None:
    from sieveqa.models import zoo

    # The default judge (the tiny model standing in for MPNet): fitting loads it though no calibration
    # reads it yet, and answering with the fitted file loads it because that one does.
    monkeypatch.setitem(zoo.SHIPPED, "peasi-judge", saved_tiny)
    out, report = tmp_path / "confidence.json", tmp_path / "report.json"
    models = ["--ranker", saved_tiny]
    args = ["--method", "pointwise", *models, "--dev", pair, "--check", pair, "--threshold-rule", "0.9"]
    args += ["--folds", "2"]
    result = sieveqa("calibrate-confidence", *args, "--out", out, "--json", report, "--no-progress")
    assert result.exit_code == 0, result.output
    fitted = load_confidence(out)["pointwise"]
    assert fitted.models == {"ranker": str(saved_tiny), "judge": "peasi-judge"}
    assert set(fitted.signals) == {"passage"} and 0 <= fitted.min_confidence <= 1
    body = json.loads(report.read_text())
    at = body["dev"]["at_min_confidence"]
    assert at["right_kept"] >= 90.0  # the threshold keeps the share asked for, on dev
    assert body["check"]["curve"][0]["threshold"] == 0.0 and body["check"]["curve"][0]["answered"] == 100.0
    assert body["dev"]["metrics"]["always_abstain"] == 50.0 and body["dev"]["metrics"]["unanswerable"] == 16
    held_out = body["dev_held_out"]  # each fold's questions scored by a fit on the other
    assert held_out["folds"] == 2 and held_out["questions"] == 32 and 0 <= held_out["overall"] <= 100
    index = tmp_path / "index"
    assert sieveqa("index", "corpus", "--input", "demo", "--out", index).exit_code == 0
    asked = [
        "answer",
        "How do bees make honey?",
        "--index",
        index,
        "--method",
        "pointwise",
        *models,
    ]
    answer = json.loads(sieveqa(*asked, "--confidence", out, "--json").output)
    confidence = answer["confidence"]
    assert confidence is not None
    # The threshold is a dev answer's confidence, maybe this very question's (recomputed, it may differ
    # in the last float bits, and the JSON rounds to 6 decimals): only away from it is the side certain.
    if abs(confidence - fitted.min_confidence) > 1e-5:
        assert answer["answered"] == (confidence >= fitted.min_confidence)
    always = json.loads(sieveqa(*asked, "--confidence", out, "--min-confidence", "0", "--json").output)
    assert always["answered"] is True and always["reason"] is None
    never = json.loads(sieveqa(*asked, "--confidence", out, "--min-confidence", "1", "--json").output)
    assert never["answered"] is False and never["answers"]  # the best guess is still shown
    assert never["reason"].startswith("the best answer's confidence is below the cut")
    text = sieveqa(*asked, "--confidence", out, "--min-confidence", "1").output
    assert "no answer found" in text and "below the cut 1.00" in text  # the cut said, not a flag's name
    # The answer's passage on one line around it, cut with [...] (its paragraphs' blank lines were
    # printed as they are, so the next answer's start was lost among them).
    shown = [ln for ln in text.splitlines() if "«" in ln]
    assert len(shown) == 1 and len(shown[0]) < 3 * 120 + len(never["answers"][0]["answer"]) + 20


@pytest.mark.slow
def test_a_fit_that_leaves_the_judge_out_neither_loads_nor_records_it(
    sieveqa, saved_tiny: Path, saved_easi: Path, pair: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sieveqa.models import zoo

    def no_judge(name: str, *_: object) -> None:
        if name.lower() != "none":  # "none" is how a method is told to load no judge
            raise AssertionError("the default judge loaded for a fit that does not read it")

    # Loaded by a method (a folder that is not there) or attached after: either way the command fails.
    monkeypatch.setitem(zoo.SHIPPED, "peasi-judge", tmp_path / "no-such-judge")
    # Where each method calls it (a module first imported while only judge.load_judge was patched
    # kept the patched function for good, and later tests failed with this error).
    modules = [
        importlib.import_module(f"sieveqa.runtime.answer.{m}")
        for m in ("judge", "sentence", "reading", "peasi")
    ]
    for module in modules:  # all imported first, so none binds the patched function
        monkeypatch.setattr(module, "load_judge", no_judge)
    models = ["--reranker", saved_tiny, "--selector", saved_easi, "--look-ranker", saved_tiny]
    out = tmp_path / "confidence.json"
    args = ["--method", "peasi", *models, "--dev", pair, "--signals", "passage,sentence", "--out", out]
    result = sieveqa("calibrate-confidence", *args, "--no-progress")
    assert result.exit_code == 0, result.output
    fitted = load_confidence(out)["peasi"]
    assert "judge" not in fitted.models and set(fitted.signals) == {"passage", "sentence"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dev", ","], "--dev: no dataset named"),
        (["--signals", ","], "--signals: no signal named"),
        (["--threshold-rule", "2"], "--threshold-rule must be 'overall' or a share in (0, 1]"),
        (["--folds", "1"], "--folds must be 0 (off) or at least 2"),
    ],
)
def test_calibrate_confidence_refuses_bad_options(sieveqa, tmp_path: Path, args: list, message: str) -> None:
    result = sieveqa("calibrate-confidence", "--method", "pointwise", *args, "--out", tmp_path / "c.json")
    assert result.exit_code == 2 and message in one_error_line(result)


def test_answer_refuses_min_confidence_without_a_calibration(sieveqa, tmp_path: Path) -> None:
    index = tmp_path / "index"
    assert sieveqa("index", "corpus", "--input", "demo", "--out", index).exit_code == 0
    shipped = json.loads((RESOURCES / "confidence.json").read_text())
    only_skyline = tmp_path / "confidence.json"
    only_skyline.write_text(json.dumps(shipped | {"methods": {"skyline": shipped["methods"]["skyline"]}}))
    asked = ["answer", "Why?", "--index", index, "--method", "peasi-all", "--min-confidence", "0.5"]
    result = sieveqa(*asked, "--confidence", only_skyline)
    assert result.exit_code == 2 and "has no calibration for --method peasi-all" in one_error_line(result)


COUNTRIES = ["France", "Germany", "Italy", "Spain", "Norway", "Egypt", "Chile"]


@pytest.mark.slow
def test_a_cut_fitted_on_your_own_questions_is_saved_beside_the_index_and_read(
    sieveqa, saved_tiny: Path, pair: str, tmp_path: Path, monkeypatch
) -> None:
    from sieveqa.models import zoo
    from sieveqa.runtime.answer import confidence as shipped_module
    from sieveqa.runtime.answer.answerer import load_answerer

    monkeypatch.setitem(zoo.SHIPPED, "peasi-judge", saved_tiny)
    shipped = tmp_path / "shipped.json"  # stands in for the shipped calibration of these models
    models = ["--method", "pointwise", "--ranker", saved_tiny]
    fit = sieveqa("calibrate-confidence", *models, "--dev", pair, "--out", shipped, "--no-progress")
    assert fit.exit_code == 0, fit.output
    monkeypatch.setattr(shipped_module, "SHIPPED_CONFIDENCE", shipped)
    docs = tmp_path / "docs"
    docs.mkdir()
    for country in COUNTRIES:  # no word shared between documents: each question retrieves its own
        (docs / f"{country}.txt").write_text(f"{country} {country.upper()}x{len(country)}\n")
    index = tmp_path / "index"
    assert sieveqa("index", "corpus", "--input", docs, "--out", index).exit_code == 0
    rows = ["question,answer"] + [f"{c},{c.upper()}x{len(c)}" for c in COUNTRIES]
    rows += [f"Where is {c} {i}?," for i, c in enumerate(COUNTRIES[:5])]  # answered wrong or not at all
    questions = tmp_path / "mine.csv"
    questions.write_text("\n".join(rows) + "\n", encoding="utf-8")
    own = ["--index", index, "--questions", questions]
    result = sieveqa("calibrate-confidence", *models, *own, "--no-progress")
    assert result.exit_code == 0, result.output
    assert "12 questions: the shipped calibration is kept, the cut fitted on them" in result.output
    assert "a cut fitted on 12 questions is rough" in result.output
    local = load_confidence(index / "confidence.json")["pointwise"]
    base = load_confidence(shipped)["pointwise"]
    assert (local.scale, local.bias, local.signals) == (base.scale, base.bias, base.signals)
    assert local.fitted_on["cut"]["count"] == 12
    info = sieveqa("index", "info", index).output
    assert f"which answer and serve read: pointwise {local.min_confidence:.3f}" in info
    answerer = load_answerer("pointwise", str(index), ranker=str(saved_tiny))
    assert answerer.min_confidence == local.min_confidence  # answer and serve read the index's own
    unread = load_answerer("pointwise", str(index), ranker=str(saved_tiny), local_confidence=False)
    assert unread.min_confidence == base.min_confidence


def test_too_few_of_your_questions_are_refused_before_any_model_loads(sieveqa, tmp_path: Path) -> None:
    questions = tmp_path / "mine.jsonl"
    questions.write_text(
        "".join(json.dumps({"question": f"q{i}?", "answer": "x" if i < 8 else ""}) + "\n" for i in range(10))
    )
    index = tmp_path / "index"
    assert sieveqa("index", "corpus", "--input", "demo", "--out", index).exit_code == 0
    line = one_error_line(sieveqa("calibrate-confidence", "--index", index, "--questions", questions))
    assert "10 questions, 8 with an answer string and 2 without; a cut needs at least 10 questions, 3" in line
    line = one_error_line(sieveqa("calibrate-confidence", "--questions", questions))
    assert line == "error: --index and --questions go together: your questions over your index"


def test_a_damaged_cut_beside_the_index_is_one_line_before_any_model_loads(sieveqa, tmp_path: Path) -> None:
    index = tmp_path / "index"
    assert sieveqa("index", "corpus", "--input", "demo", "--out", index).exit_code == 0
    (index / "confidence.json").write_text('{"format": 1, "methods": {')  # cut short
    line = one_error_line(sieveqa("answer", "What is firn?", "--index", index))
    assert line.startswith(f"error: {index / 'confidence.json'}: invalid JSON")
