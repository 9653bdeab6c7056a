"""``sieveqa train --arch reader``, ``calibrate``, ``train-scheduler`` and ``eval-reader`` end to end
on a tiny reader, and the bad inputs each must refuse with one line."""

import json
from pathlib import Path

import pytest

from sieveqa.data.open_qa import OpenExample, RetrievedPassage, write_open_jsonl
from sieveqa.models.reader import ReaderConfig, ReaderModel
from sieveqa.runtime.answer.reader_policy import ReaderPolicy
from sieveqa.training.reader_tuning import TuningGrid
from tests.cli.conftest import one_error_line

CITIES = [("Paris", "France"), ("Berlin", "Germany"), ("Rome", "Italy"), ("Madrid", "Spain")]


@pytest.fixture
def open_data(tmp_path: Path) -> Path:
    examples = []
    for i in range(12):
        city, country = CITIES[i % 4]
        passages = [
            RetrievedPassage("x", "Bananas are yellow fruit that grow in warm places."),
            RetrievedPassage("a", f"The capital of {country} is {city}, a large city."),
            RetrievedPassage("y", "Cats sleep a lot."),
        ]
        examples.append(OpenExample(f"q{i}", f"What is the capital of {country}?", [city], passages))
    return Path(write_open_jsonl(tmp_path / "open.jsonl", examples) and tmp_path / "open.jsonl")


@pytest.fixture
def saved_reader(tmp_path: Path) -> Path:
    return ReaderModel(ReaderConfig(backbone="tiny", max_length=32)).save_pretrained(tmp_path / "reader")


@pytest.mark.slow
def test_calibrate_schedule_and_evaluate(
    sieveqa, saved_reader: Path, open_data: Path, tmp_path: Path
) -> None:
    data = ["--dataset", open_data]
    result = sieveqa(
        "calibrate", "--reader", saved_reader, *data, "--check", open_data, "--out", tmp_path / "cal"
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("ECE") == 4 and "temperatures" in result.output  # one set, named twice
    cal = tmp_path / "cal"
    assert len(ReaderModel.from_pretrained(cal).config.temperatures) == 4
    args = ["--reader", cal, "--train", open_data, "--dev", open_data, "--budget", "0.5,1", "--epochs", "2"]
    result = sieveqa("train-scheduler", *args, "--out", tmp_path / "sched")
    assert result.exit_code == 0, result.output
    result = sieveqa("train-scheduler", *args, "--reward", "answer", "--out", tmp_path / "sched-answer")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "sched-answer" / "best").is_dir()
    reports = {}
    for method, extra in [
        ("standard", []),
        ("skyline", ["--budget", "1", "--m", "1"]),
        ("learned", ["--budget", "1", "--m", "1", "--scheduler", tmp_path / "sched"]),
    ]:
        for live in ("--live", "--no-live"):
            out = tmp_path / f"{method}{live}.json"
            result = sieveqa(
                "eval-reader", "--reader", cal, *data, "--method", method, *extra, live, "--json", out
            )
            assert result.exit_code == 0, result.output
            reports[method, live] = json.loads(out.read_text())["metrics"]
    for method in ("standard", "skyline", "learned"):
        live, replayed = reports[method, "--live"], reports[method, "--no-live"]
        assert live["em"] == replayed["em"] and live["layers_per_passage"] == replayed["layers_per_passage"]
        assert live["ms_p50"] > 0 and "hap" in replayed
    assert reports["standard", "--live"]["layers_per_passage"] == 4.0
    assert reports["skyline", "--live"]["layers_per_passage"] < 4.0
    # tune-reader: the settings chosen on dev travel with a copy of the reader.
    tuned = tmp_path / "tuned"
    result = sieveqa("tune-reader", "--reader", cal, *data, "--scheduler", tmp_path / "sched", "--out", tuned)
    assert result.exit_code == 0, result.output
    report = json.loads((tuned / "tuning.json").read_text())["report"]
    saved = ReaderPolicy.saved(ReaderModel.from_pretrained(tuned))
    assert saved is not None and saved.has_weight in TuningGrid().has_weights
    assert report["full"]["em"] == max(p["em"] for p in report["has_weight"].values())
    assert saved.scheduler == "scheduler" and (tuned / "scheduler").is_dir()  # it ships either way
    assert saved.learned == report["scheduler_default"]
    assert saved.skyline_m == report["skyline"]["m"] and saved.threshold == report["tower"]["knob"]
    if True:  # the learned method finds the reader's own scheduler
        result = sieveqa(
            "eval-reader", "--reader", tuned, *data, "--method", "learned", "--json", tmp_path / "l.json"
        )
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "skyline", "--budget", "0"], "--budget must be a finite number of layers per passage"),
        (["--method", "skyline", "--budget", "inf"], "--budget must be a finite number"),
        (["--method", "skyline", "--budget", "-2"], "above 0"),
        (["--method", "skyline", "--budget", "abc"], "Invalid value for '--budget'"),
        (["--method", "learned", "--budget", "1"], "needs --scheduler"),
        (["--method", "tower", "--scheduler", "x"], "--scheduler is for --method learned"),
    ],
)
def test_bad_budgets_and_methods_are_refused(
    sieveqa, saved_reader: Path, open_data: Path, args, message
) -> None:
    line = one_error_line(sieveqa("eval-reader", "--reader", saved_reader, "--dataset", open_data, *args))
    assert message in line


def test_a_ranker_is_not_a_reader_and_a_reader_is_not_a_ranker(
    sieveqa, saved_tiny, saved_reader, open_data
) -> None:
    line = one_error_line(
        sieveqa("eval-reader", "--reader", saved_tiny, "--dataset", open_data, "--method", "standard")
    )
    assert "a cross-encoder model, not a reader" in line
    line = one_error_line(
        sieveqa(
            "eval-answers",
            "--method",
            "pointwise",
            "--ranker",
            saved_reader,
            "--judge",
            "none",
            "--limit",
            "1",
        )
    )
    assert "is a reader model, not a ranker" in line
    line = one_error_line(sieveqa("eval", "--model", saved_tiny, "--budget", "1"))
    assert "--budget and --scheduler are for readers" in line


def test_eval_reads_with_a_reader_under_a_budget(
    sieveqa, saved_reader: Path, open_data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    result = sieveqa(
        "eval", "--model", saved_reader, "--dataset", open_data, "--budget", "0.5", "--json", out
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert (
        report["settings"]["method"] == "skyline"
        and report["metrics"]["layers_per_passage"] <= 0.5 + 4 * 3 / 3
    )


@pytest.mark.slow
def test_answer_extracts_a_span_over_an_index(sieveqa, saved_reader: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    assert sieveqa("index", "corpus", "--input", "demo", "--out", index).exit_code == 0
    args = ["--index", index, "--reader", saved_reader, "--judge", "none", "--json"]
    for method, own in (("reader", []), ("tower", ["--threshold", "0.8"]), ("skyline", ["--budget", "0.5"])):
        result = sieveqa("answer", "Who invented the Fresnel lens?", "--method", method, *args, *own)
        assert result.exit_code == 0, result.output
        answer = json.loads(result.output)
        (first,) = answer["answers"]
        a, b = first["answer_span"]
        assert first["passage"][a:b] == first["answer"] and answer["layer_units"] > 0
    nothing = sieveqa("answer", "zzzz qqqq", "--method", "skyline", *args)
    assert json.loads(nothing.output)["answers"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "skyline", "--reader", "nope"], "model 'nope' is neither a shipped model"),
        (["--method", "tower", "--reader", "x", "--has-weight", "-1"], "--has-weight must be a finite"),
        (["--method", "skyline", "--reader", "x", "--budget", "0"], "--budget must be"),
        (
            ["--method", "tower", "--reader", "x", "--scheduler", "s"],
            "--scheduler is not an option of --method tower (it is for skyline)",
        ),
        (
            ["--method", "reader", "--reader", "x", "--budget", "1"],
            "--budget is not an option of --method reader",
        ),
    ],
)
def test_answer_refuses_bad_reader_settings(sieveqa, tmp_path: Path, args, message) -> None:
    index = tmp_path / "index"
    assert sieveqa("index", "corpus", "--input", "demo", "--out", index).exit_code == 0
    assert message in one_error_line(sieveqa("answer", "Who?", "--index", index, *args))


def test_a_reader_method_refuses_a_judge_it_cannot_load(sieveqa, saved_reader: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    assert sieveqa("index", "corpus", "--input", "demo", "--out", index).exit_code == 0
    for method in ("reader", "skyline"):
        result = sieveqa("answer", "Who?", "--index", index, "--method", method, "--reader", saved_reader,
                         "--judge", tmp_path / "no-judge")  # fmt: skip
        assert "no-judge' is neither a shipped model" in one_error_line(result)  # exit 2, one line


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--budget", "1,x"], "--budget: expected comma-separated"),
        (["--budget", "0"], "above 0"),
        (["--epochs", "0"], "error: --epochs must be >= 1, got 0"),  # issue 30: printed a settings dict
        (["--lr", "-1"], "error: --lr must be above 0, got -1.0"),
        (["--reward", "em"], "error: --reward must be 'passage' or 'answer', got 'em'"),
    ],
)
def test_train_scheduler_refuses_bad_settings_before_reading(
    sieveqa, saved_reader: Path, open_data: Path, tmp_path: Path, flags: list[str], message: str
) -> None:
    out = tmp_path / "sched"
    args = ["--reader", saved_reader, "--train", open_data, "--dev", open_data, *flags]
    assert message in one_error_line(sieveqa("train-scheduler", *args, "--out", out))
    assert not out.exists()


@pytest.mark.parametrize(
    "command",
    [
        ["calibrate", "--out", "OUT"],
        ["train-scheduler", "--out", "OUT", "--dev", "DATA", "--train", "EMPTY"],
        ["train-scheduler", "--out", "OUT", "--train", "DATA", "--dev", "EMPTY"],
        ["eval-reader"],
    ],
)
def test_an_empty_question_file_is_one_line(
    sieveqa, saved_reader: Path, open_data: Path, tmp_path: Path, command: list[str]
) -> None:
    # Issue 30: an empty file gave IndexError (calibrate), ValueError (train-scheduler, eval-reader).
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    swap = {"OUT": str(tmp_path / "out"), "DATA": str(open_data), "EMPTY": str(empty)}
    args = [swap.get(a, a) for a in command]
    if "--train" not in args:
        args += ["--dataset", str(empty)]
    result = sieveqa(*args, "--reader", saved_reader)
    assert one_error_line(result) == f"error: {empty}: no questions"


def test_reader_commands_default_to_the_shipped_reader(sieveqa) -> None:
    """They said "Missing option '--reader'" though a reader ships."""
    line = one_error_line(sieveqa("eval-reader", "--method", "skyline", "--budget", "inf"))
    assert "--budget must be a finite number" in line


@pytest.mark.slow
def test_a_saved_reader_given_windows_it_cannot_take_is_one_line(
    sieveqa, saved_reader: Path, open_data: Path, tmp_path: Path
) -> None:
    args = ["train", "--arch", "reader", "--init", saved_reader, "--train", open_data, "--dev", "",
            "--out", tmp_path / "wider", "--no-progress"]  # fmt: skip
    result = sieveqa(*args, "--stride", "20")  # its windows are 32 tokens: stride below 16
    assert result.exit_code == 2
    said = "error: ReaderConfig: stride must be in 0..15 (below half of max_length), got 20"
    assert one_error_line(result) == said
    result = sieveqa(*args, "--max-length", "64", "--stride", "20", "--epochs", "1")
    assert result.exit_code == 0, result.output
    assert ReaderModel.from_pretrained(tmp_path / "wider" / "best").config.stride == 20
