"""``sieveqa batch``: a whole run, a resumed one, and one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import one_error_line


def test_a_batch_run_writes_every_shard_and_a_rerun_ranks_nothing(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first = sieveqa("batch", "-i", example_jsonl, "-o", out, "-m", saved_tiny, "--shard-size", 2)
    assert first.exit_code == 0, first.output
    assert "3 questions in 2 shards; 0 already done" in first.output
    assert "ranked 3 questions (16 pairs)" in first.output
    rows = [
        json.loads(line) for p in sorted(out.glob("shard-*.jsonl")) for line in p.read_text().splitlines()
    ]
    assert [r["qid"] for r in rows] == ["ex1", "ex2", "ex3"]
    assert all([c["rank"] for c in r["candidates"]] == list(range(1, len(r["candidates"]) + 1)) for r in rows)
    again = sieveqa("batch", "-i", example_jsonl, "-o", out, "-m", saved_tiny, "--shard-size", 2)
    assert "2 already done" in again.output and "0 to rank" in again.output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--shard-size", "0"], "--shard-size must be >= 1"),
        (["--actors", "2"], "--actors and --address are for --ray"),
        (["--ray", "--threads", "0"], "--actors and --threads must be >= 1"),
    ],
)
def test_bad_batch_options(sieveqa, example_jsonl: Path, tmp_path: Path, args: list[str], says: str) -> None:
    assert says in one_error_line(sieveqa("batch", "-i", example_jsonl, "-o", tmp_path / "o", *args))


def test_an_out_that_is_a_file_is_refused(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    assert "--out" in one_error_line(sieveqa("batch", "-i", example_jsonl, "-o", tmp_path / "f"))


@pytest.mark.slow
def test_a_resume_with_another_model_is_refused(
    sieveqa, example_jsonl: Path, saved_tiny: Path, tmp_path
) -> None:
    import shutil

    out = tmp_path / "out"
    assert sieveqa("batch", "-i", example_jsonl, "-o", out, "-m", saved_tiny).exit_code == 0
    other = shutil.copytree(saved_tiny, tmp_path / "other")
    line = one_error_line(sieveqa("batch", "-i", example_jsonl, "-o", out, "-m", other))
    assert "holds a run with another --model: give a new --out" in line  # same weights, other folder
    (saved_tiny / "policy.json").write_text('{"drop_ratios": [0.5]}')  # re-tuned in place
    line = one_error_line(sieveqa("batch", "-i", example_jsonl, "-o", out, "-m", saved_tiny))
    assert "holds a run with another --model (its files changed)" in line
    line = one_error_line(sieveqa("batch", "-i", example_jsonl, "-o", out, "-m", "no-such-model"))
    assert "'no-such-model' is neither a shipped model" in line


@pytest.mark.parametrize(("flag", "value"), [("--precision", "int8"), ("--backend", "onnx")])
def test_a_resume_at_another_precision_or_backend_is_refused(
    sieveqa, example_jsonl: Path, saved_tiny: Path, tmp_path, flag: str, value: str, monkeypatch
) -> None:
    """It mixed fp32 and int8 (or torch and ONNX Runtime) shards in one output."""
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    first = sieveqa("batch", "-i", example_jsonl, "-o", out, "-m", saved_tiny, "--shard-size", 2)
    assert first.exit_code == 0, first.output
    (out / "shard-00001.jsonl").unlink()  # as if stopped before the last shard
    line = one_error_line(
        sieveqa(
            "batch",
            "-i",
            example_jsonl,
            "-o",
            out,
            "-m",
            saved_tiny,
            "--shard-size",
            2,
            flag,
            value,
        )
    )
    # (onnx runs fp32 where torch's auto is bf16: then --precision differs too, and is named)
    assert "holds a run with another " in line and flag in line.split(": give")[0]


def test_a_lone_surrogate_or_an_empty_file_is_one_line_before_any_ranking(
    sieveqa, saved_tiny: Path, tmp_path: Path
) -> None:
    """A lone surrogate escape passed batch's line check and broke the tokenizer (a traceback)."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": "a", "question": "Is \\ud800 it?", "candidates": [{"id": "x", "text": "yes"}]}\n')
    line = one_error_line(sieveqa("batch", "-i", bad, "-o", tmp_path / "o1", "-m", saved_tiny))
    assert f"{bad}:1: a lone surrogate escape \\ud800 is not text" in line
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert f"{empty}: no questions" in one_error_line(sieveqa("batch", "-i", empty, "-o", tmp_path / "o2"))
    assert not list((tmp_path / "o1").glob("shard-*"))


@pytest.mark.slow
def test_backend_auto_is_recorded_as_what_it_chose(
    sieveqa, example_jsonl: Path, saved_tiny: Path, tmp_path, monkeypatch
) -> None:
    """It recorded "auto": a resume on a machine where auto lands elsewhere would mix backends."""
    from sieveqa.runtime import policy

    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    loads = []
    real = policy.load_ranker
    monkeypatch.setattr(policy, "load_ranker", lambda *a, **k: loads.append(k) or real(*a, **k))
    out = tmp_path / "out"
    result = sieveqa("batch", "-i", example_jsonl, "-o", out, "-m", saved_tiny, "--backend", "auto")
    assert result.exit_code == 0, result.output
    assert len(loads) == 1  # the model auto loaded ranks too (it was loaded again)
    identity = json.loads((out / "run.json").read_text())["identity"]
    assert identity["backend"] in ("torch", "onnx", "openvino")
    assert identity["precision"] in ("fp32", "bf16", "int8")


def test_batch_writes_what_rank_output_writes(
    sieveqa, tiny_cascade, example_jsonl: Path, tmp_path: Path
) -> None:
    """The same rows, scores and scale as `rank --output`: a cascade's shards held its sort keys (the
    exit reached plus a probability) and no score_scale."""
    cascade, ranked = tiny_cascade.save_pretrained(tmp_path / "cascade"), tmp_path / "ranked.jsonl"
    fp32 = ["--precision", "fp32"]  # shards batch other shapes than one rank call: bf16 would differ a little
    result = sieveqa("rank", "-i", example_jsonl, "-m", cascade, "-o", ranked, *fp32)
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    result = sieveqa("batch", "-i", example_jsonl, "-o", out, "-m", cascade, "--shard-size", 2, *fp32)
    assert result.exit_code == 0, result.output
    rows = [
        json.loads(line) for p in sorted(out.glob("shard-*.jsonl")) for line in p.read_text().splitlines()
    ]
    expected = [json.loads(line) for line in ranked.read_text().splitlines()]
    assert [r["score_scale"] for r in rows] == ["logit"] * 3
    for row, want in zip(rows, expected, strict=True):
        assert [c["id"] for c in row["candidates"]] == [c["id"] for c in want["candidates"]]
        assert [c["score"] for c in row["candidates"]] == pytest.approx(
            [c["score"] for c in want["candidates"]], abs=1e-5
        )
