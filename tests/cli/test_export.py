"""``sieveqa export`` and ``--backend``: an int8 export used by rank, the same ranking on ONNX Runtime
as in torch, and one clear line for each wrong request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import one_error_line

pytest.importorskip("onnxruntime")


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))


def _ranked(sieveqa, model: Path, questions: Path, out: Path, *flags: str) -> list[list[str]]:
    result = sieveqa("rank", "--model", model, "--input", questions, "--output", out, *flags)
    assert result.exit_code == 0, result.output
    return [[c["id"] for c in json.loads(line)["candidates"]] for line in out.read_text().splitlines()]


@pytest.mark.slow
def test_int8_export_then_rank_with_it(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    missing = one_error_line(
        sieveqa(
            "rank",
            "--model",
            saved_tiny,
            "--input",
            example_jsonl,
            "--backend",
            "onnx",
            "--precision",
            "int8",
        )
    )
    assert f"run `sieveqa export {saved_tiny} --format onnx --int8`" in missing  # the command to copy
    result = sieveqa("export", saved_tiny, "--int8", "--calibrate", example_jsonl, "--rows", "8")
    assert result.exit_code == 0, result.output
    assert "(4 layers, onnx int8)" in result.output and "--backend onnx --precision int8" in result.output
    ranked = _ranked(
        sieveqa,
        saved_tiny,
        example_jsonl,
        tmp_path / "int8.jsonl",
        "--backend",
        "onnx",
        "--precision",
        "int8",
    )
    assert len(ranked) == len(example_jsonl.read_text().splitlines())


@pytest.mark.slow
def test_onnx_ranks_as_torch(sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path) -> None:
    torch_order = _ranked(sieveqa, saved_tiny, example_jsonl, tmp_path / "torch.jsonl", "--precision", "fp32")
    onnx_order = _ranked(sieveqa, saved_tiny, example_jsonl, tmp_path / "onnx.jsonl", "--backend", "onnx")
    assert onnx_order == torch_order


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("export", "default", "--format", "tflite"),
            "error: --format must be one of onnx, openvino, hf or low-rank, got 'tflite'",
        ),
        (
            ("export", "default", "--calibrate", "wikiqa:dev"),
            "error: --calibrate goes with --int8 (an fp32 export needs no calibration)",
        ),
        (("export", "no-such-model"), "error: model 'no-such-model' is neither a shipped model"),
        (
            ("rank", "--input", "x.jsonl", "--backend", "onnx", "--precision", "bf16"),
            "error: --backend onnx runs at fp32 or int8, not bf16",
        ),
        (
            ("rank", "--input", "x.jsonl", "--backend", "tvm"),
            "error: backend must be one of auto, torch, onnx, openvino",
        ),
    ],
)
def test_wrong_requests_are_one_line(sieveqa, args: tuple[str, ...], expected: str) -> None:
    assert one_error_line(sieveqa(*args)).startswith(expected)


def test_a_cache_that_cannot_be_made_is_one_line(
    sieveqa, saved_tiny: Path, tmp_path: Path, monkeypatch
) -> None:
    """A SIEVEQA_CACHE under a file (or on a read-only disk) was a NotADirectoryError traceback."""
    (tmp_path / "a-file").write_text("x")
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "a-file" / "cache"))
    line = one_error_line(sieveqa("export", saved_tiny))
    assert line.endswith(
        "the cache folder cannot be made (Not a directory); set SIEVEQA_CACHE to a writable one"
    )
