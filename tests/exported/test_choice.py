"""``--backend auto``: the measured choice of this CPU kind, skipping what is not there, torch last."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sieveqa.exported import build_export, choice

pytest.importorskip("onnxruntime")


def test_cpu_kinds_by_flags() -> None:
    assert choice.cpu_kind(frozenset({"avx2", "avx512_bf16", "amx_bf16"})) == "amx"
    assert choice.cpu_kind(frozenset({"avx2", "avx512f", "avx512_bf16"})) == "avx512_bf16"
    assert choice.cpu_kind(frozenset({"avx2", "fma"})) == "avx2"
    assert choice.cpu_kind(frozenset()) == "other"


def test_systems_at_no_loss_fastest_first() -> None:
    rows = {
        "torch:fp32": {"p@1": 0.800, "map": 0.850, "pairs_per_second": 100},
        "onnx:int8": {"p@1": 0.796, "map": 0.846, "pairs_per_second": 300},  # within half a point: kept
        "torch:int8": {"p@1": 0.775, "map": 0.849, "pairs_per_second": 400},  # loses 2.5 P@1 points
        "openvino:fp32": {"p@1": 0.801, "map": 0.844, "pairs_per_second": 350},  # loses 0.6 MAP points
        "openvino:bf16": {"p@1": 0.802, "map": 0.851, "pairs_per_second": 250},
    }
    assert choice.rank_systems(rows, "torch:fp32") == ["onnx:int8", "openvino:bf16", "torch:fp32"]


@pytest.fixture
def measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "backends.json"
    path.write_text(
        json.dumps({choice.cpu_kind(): {"fastest_at_no_loss": ["onnx:int8", "onnx:fp32", "torch:fp32"]}})
    )
    monkeypatch.setattr(choice, "CHOICES", path)
    return path


def test_auto_skips_a_missing_int8_export_and_takes_the_next(tiny_model, measured: Path) -> None:
    tiny_model.configure(device="cpu", backend="auto", precision="auto")
    assert (tiny_model.backend, tiny_model.precision) == ("onnx", "fp32")
    assert tiny_model.encoder.runner is not None
    # Asked for a precision no measured system has here: torch at that precision.
    tiny_model.configure(precision="int8")
    assert (tiny_model.backend, tiny_model.precision) == ("torch", "int8")
    assert tiny_model.encoder.runner is None


@pytest.mark.slow
def test_auto_falls_back_past_a_damaged_int8_export(tiny_model, measured: Path) -> None:
    """A runtime's load error was caught by neither open_runner nor attach (issue 42)."""
    batches = [batch for _, batch in tiny_model.batches(tiny_model.featurize(["q"] * 4, ["a text"] * 4))]
    folder = build_export(
        tiny_model.encoder, tiny_model.body_fingerprint(), "onnx", int8=True, calibration=batches
    )
    (folder / "layer00.onnx").write_bytes(b"not a graph")
    tiny_model.configure(device="cpu", backend="auto", precision="auto")
    assert (tiny_model.backend, tiny_model.precision) == ("onnx", "fp32")


def test_auto_on_an_unmeasured_cpu_is_torch(tiny_model, measured: Path) -> None:
    measured.write_text(json.dumps({"some-other-cpu": {"fastest_at_no_loss": ["onnx:fp32"]}}))
    tiny_model.configure(device="cpu", backend="auto", precision="fp32")
    assert (tiny_model.backend, tiny_model.precision) == ("torch", "fp32")
