"""Bad input anywhere on the command line: one ``error:`` line naming what is wrong, exit code 2, and
no work done before the check."""

import json
from pathlib import Path

import pytest

from tests.cli.conftest import one_error_line


def _train(sieveqa, data: Path, out: Path, *flags: str):
    jsonl = f"jsonl:{data}"
    return sieveqa(
        "train", "--train", jsonl, "--init", "tiny", "--dev", jsonl, "--out", out, "--no-progress", *flags
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--metric", "bogus"), "--metric must be one of map, mrr, p@1"),
        (("--metric", "map@mean"), "--metric must be one of"),  # a cascade's metric, not a cross-encoder's
        (("--dropout", "1.5"), "invalid dropout=1.5"),
        (("--max-negatives", "-1"), "invalid --max-negatives -1"),
        (("--max-length", "4000"), "max_length 4000 exceeds the 512 positions of tiny"),
        (("--arch", "cascade", "--exits", "2,9"), "exits must be increasing layer numbers in 1..4"),
        (("--init", "no-such-backbone"), "unknown backbone 'no-such-backbone'"),
    ],
)
def test_bad_training_settings_fail_before_any_data_is_read(
    sieveqa, tmp_path: Path, flags: tuple[str, ...], message: str
) -> None:
    result = _train(sieveqa, tmp_path / "missing.jsonl", tmp_path / "out", *flags)
    assert message in one_error_line(result)  # the data file does not even exist: it was not read
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"train": 5}, "key 'train': expected a string, got 5"),
        ({"epochs": "two"}, "key 'epochs': expected float, got 'two'"),
        ({"exits": [2, "x"]}, "key 'exits': expected a list of integers"),
    ],
)
def test_bad_config_file_values_are_named(
    sieveqa, example_jsonl: Path, tmp_path: Path, content, message
) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps(content))
    assert message in one_error_line(_train(sieveqa, example_jsonl, tmp_path / "o", "--config", config))


def test_a_config_path_that_is_a_folder_is_one_line(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    line = one_error_line(_train(sieveqa, example_jsonl, tmp_path / "o", "--config", tmp_path))
    assert line.startswith(f"error: {tmp_path}: cannot be read")


def test_an_output_folder_that_cannot_be_written_is_refused_first(sieveqa, example_jsonl: Path) -> None:
    line = one_error_line(_train(sieveqa, example_jsonl, Path("/proc/sieveqa-out")))
    assert line == "error: --out /proc/sieveqa-out: cannot write into /proc"


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"drop_ratios": "abc"}, "drop_ratios must be a list of numbers, got 'abc'"),
        ({"drop_ratios": [0.1, None]}, "drop_ratios must be a list of numbers"),
        ({"thresholds": {"a": 1}}, "thresholds must be a list of numbers"),
        ({"drop_ratios": [0.1, 2.0, 0.1]}, "drop ratios must be in [0, 1)"),
        ({"policy": "cascade", "alpha": 0.3}, "unknown cascade policy field(s) ['alpha']"),
    ],
)
def test_bad_policy_files_are_named(
    sieveqa, saved_cascade: Path, example_jsonl: Path, tmp_path: Path, policy, message
) -> None:
    file = tmp_path / "policy.json"
    file.write_text(json.dumps(policy))
    line = one_error_line(sieveqa("rank", "-m", saved_cascade, "-i", example_jsonl, "--policy", file))
    assert message in line and str(file) in line


def test_tune_cascade_refuses_a_negative_tolerance_before_scoring(sieveqa, tmp_path: Path) -> None:
    line = one_error_line(
        sieveqa("tune-cascade", "-m", tmp_path / "nope", "-o", tmp_path / "t", "--tolerance", "-1")
    )
    assert line == "error: --tolerance must be >= 0 (an allowed loss), got -1.0"


def test_cascade_options_with_a_store_are_refused(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    line = one_error_line(sieveqa("rank", "-i", example_jsonl, "--store", tmp_path, "--alpha", "0.3"))
    assert line.startswith("error: --alpha and --policy are for cascades")


def test_a_folder_that_is_no_store_is_one_line(sieveqa, tmp_path: Path) -> None:
    assert one_error_line(sieveqa("index", "info", tmp_path)) == (
        f"error: {tmp_path}: neither a corpus index (sieveqa index corpus) nor an answer store "
        "(sieveqa index build): no manifest.json (a stopped corpus build leaves none: rerun its command)"
    )


def test_a_cut_teachers_file_is_one_line_not_an_interrupt(
    sieveqa, tmp_path: Path, example_jsonl: Path
) -> None:
    # Issue 30: a truncated gzip read as Ctrl-D ("interrupted", exit 130).
    import gzip

    whole = gzip.compress(json.dumps({"format": 1, "scores": list(range(500))}).encode())
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    data = f"jsonl:{example_jsonl}"
    args = ["train", "--arch", "mhs", "--heads", "1", "--init", "tiny", "--train", data, "--no-progress"]
    line = one_error_line(sieveqa(*args, "--dev", data, "--teachers", cut, "--out", tmp_path / "o"))
    assert line == f"error: {cut}: the gzip stream ends early (a truncated file)"


def test_bad_text_and_repeated_ids_are_one_line_naming_the_line(sieveqa, tmp_path: Path) -> None:
    # Issue 30: a lone surrogate was a traceback; repeated ids named no line.
    item = {"qid": "a", "question": "q?", "candidates": [{"id": "c", "text": "t"}]}
    surrogate = tmp_path / "s.jsonl"
    surrogate.write_text(json.dumps(item) + "\n" + json.dumps(item).replace('"t"', '"\\ud800"') + "\n")
    line = one_error_line(sieveqa("rank", "--model", "tiny", "--input", surrogate))
    assert line == f"error: {surrogate}:2: a lone surrogate escape \\ud800 is not text"
    twice = tmp_path / "twice.jsonl"
    twice.write_text((json.dumps(item) + "\n") * 2)
    line = one_error_line(sieveqa("rank", "--model", "tiny", "--input", twice))
    assert line == f"error: {twice}:2: duplicate qid 'a' (first at {twice}:1)"
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": "x", "text": "one"}\n{"id": "x", "text": "two"}\n')
    build = ["index", "build", "-m", "has", "-a", answers, "-o", tmp_path / "store"]
    assert (
        one_error_line(sieveqa(*build))
        == f"error: {answers}:2: duplicate answer id 'x' (first at {answers}:1)"
    )
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "d", "text": "One. Two.", "sentences": ["Two.", "One."]}\n')
    line = one_error_line(sieveqa("index", "corpus", "--input", docs, "--out", tmp_path / "idx"))
    assert line.startswith(f"error: {docs}:1: field 'sentences': sentence not found")


def test_ctrl_c_is_one_line_and_exit_130(
    sieveqa, saved_tiny: Path, example_jsonl: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Typer turned Ctrl-C into a silent exit 130 before the app's own line could be said."""
    import sieveqa.data.jsonl as jsonl

    def pressed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(jsonl, "read_jsonl", pressed)
    line = one_error_line(sieveqa("rank", "-m", saved_tiny, "-i", example_jsonl), code=130)
    assert line == "error: interrupted"


def test_a_full_disk_is_one_line_and_leaves_nothing_half_written(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by a hostile probe on a tiny tmpfs: rank --output (and index corpus, train) ended in a
    # traceback. Every write is atomic; the disk filling up while the file is synced stands for it.
    import errno
    import os

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "ranked.jsonl"
    result = sieveqa("rank", "-m", saved_tiny, "-i", example_jsonl, "-o", out)
    last = result.output.strip().splitlines()[-1]  # the ranking is shown on the terminal first
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert last.startswith(f"error: No space left on device: {out} (nothing was left half-written")
    assert list(out.parent.iterdir()) == []  # neither the file nor its temporary


def test_an_index_build_on_a_full_disk_is_one_line(
    sieveqa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite says a full disk as an OperationalError, which was a traceback
    import sqlite3

    from sieveqa.data.corpus import CorpusIndex

    def full(documents: object, out: Path, *args: object, **kwargs: object) -> None:
        (out / "gen-00000").mkdir(parents=True)
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(CorpusIndex, "build", full)
    result = sieveqa("index", "corpus", "--input", "demo", "--out", tmp_path / "idx")
    assert one_error_line(result) == (
        "error: database or disk is full: no space left on the device (an index is written whole or not "
        "at all)"
    )
    assert not (tmp_path / "idx").exists()  # the folder it made is gone (it was left empty)


def test_training_on_a_full_disk_is_one_line(
    sieveqa, example_jsonl: Path, tmp_path: Path, monkeypatch
) -> None:
    # safetensors says a full disk only in its error's text (checked for real on a 200 KB tmpfs)
    from safetensors import SafetensorError

    from sieveqa.training import trainer

    def full(*args: object, **kwargs: object) -> None:
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(trainer, "save_file", full)
    args = ["--init", "tiny", "--train", f"jsonl:{example_jsonl}", "--dev", "", "--epochs", "1"]
    result = sieveqa("train", *args, "--out", tmp_path / "t", "--no-progress")
    assert result.exit_code == 2 and "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith("error: no space left on the device (SafetensorError)")


def test_a_damaged_hugging_face_folder_and_a_nan_confidence_are_one_line(
    sieveqa, example_jsonl: Path, tmp_path: Path
) -> None:
    from tests.models.hf_tiny import tiny_hf_cross_encoder

    folder = tiny_hf_cross_encoder("bert", tmp_path / "hf")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    line = one_error_line(sieveqa("rank", "-m", folder, "-i", example_jsonl))
    assert "transformers cannot load it (Error while deserializing header" in line
    line = one_error_line(sieveqa("answer", "--index", tmp_path / "none", "--min-confidence", "nan", "q"))
    assert (
        line
        == "error: Invalid value for '--min-confidence': nan is not a number; give a probability in [0, 1]"
    )


def test_the_threads_option_is_applied_before_the_command(sieveqa, monkeypatch) -> None:
    """`sieveqa --threads N COMMAND` sizes the pools before COMMAND runs; 0 is one line, exit 2."""
    import os

    import torch

    for name in ("OMP_NUM_THREADS", "RAYON_NUM_THREADS"):
        monkeypatch.setenv(name, "0")
        monkeypatch.delenv(name)
    before = torch.get_num_threads()
    try:
        result = sieveqa("--threads", "1", "rank", "--input", "/nonexistent")
        assert result.exit_code == 2 and torch.get_num_threads() == 1
        assert os.environ["RAYON_NUM_THREADS"] == "1"
    finally:
        torch.set_num_threads(before)
    line = one_error_line(sieveqa("--threads", "0", "rank", "--input", "x"))
    assert "--threads" in line and "greater than or equal to 1" in line


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "flag"),
    [
        ("rank", "--first-stage"),
        ("answer", "--second-look"),  # took ~9 s: the methods' options lived beside their models
        ("serve", "--second-look"),
        ("eval-answers", "--drop-ratios"),
        ("train", "--teachers"),  # took ~8.5 s: the models' configs lived beside the models
    ],
)
def test_help_loads_no_model_library(command: str, flag: str) -> None:
    """`sieveqa rank --help` took ~11 s on a busy 2-core machine: building its store-search flags
    imported the whole runtime, torch and transformers with it."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from sieveqa.cli import app\n"
        "try:\n"
        f"    app([{command!r}, '--help'], standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('LOADED', sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert flag in out.stdout and "LOADED []" in out.stdout, out.stderr[-2000:]
