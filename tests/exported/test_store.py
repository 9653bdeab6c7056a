"""Exported bodies: the same scores as torch on ONNX Runtime and OpenVINO, exits kept, int8 only
from an explicit export, nothing half-written, every wrong pairing refused in one line."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import torch

from sieveqa.errors import ConfigError, DeviceError, ModelFormatError
from sieveqa.exported import backend_precision, build_export, export_folder, graphs

pytest.importorskip("onnxruntime")

QUESTIONS = ["who wrote hamlet", "how tall is the eiffel tower", "what is the capital of peru"] * 4
TEXTS = [
    "Hamlet is a tragedy by William Shakespeare.",
    "The tower is 330 metres tall.",
    "Lima is the capital and largest city of Peru, on the Pacific coast.",
    "Paris.",
] * 3


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))


def _scores(model, **settings) -> torch.Tensor:
    model.configure(device="cpu", **settings)
    scores, _ = model.score_matrix(QUESTIONS, TEXTS)
    return scores


def _calibration(model) -> list[dict[str, torch.Tensor]]:
    features = model.featurize(QUESTIONS, TEXTS)
    return [batch for _, batch in model.batches(features)]


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_fp32_backends_score_as_torch(tiny_model, backend: str) -> None:
    if backend == "openvino":
        pytest.importorskip("openvino")
    reference = _scores(tiny_model, precision="fp32")
    exported = _scores(tiny_model, backend=backend, precision="fp32")
    assert tiny_model.encoder.runner is not None
    assert (exported - reference).abs().max().item() < 1e-4
    manifest = json.loads(
        (export_folder(tiny_model.body_fingerprint(), backend, "fp32") / "export.json").read_text()
    )
    assert manifest["layers"] == tiny_model.encoder.num_layers
    assert manifest["body_fingerprint"] == tiny_model.body_fingerprint()
    _serves_threads_at_once(tiny_model, exported)
    # Back to torch: no runner left behind.
    assert (_scores(tiny_model, backend="torch") - reference).abs().max().item() == 0


def test_cascade_exits_keep_working_on_onnx(tiny_cascade) -> None:
    """Every exit's score (one per exit layer) is the same as in torch: the layers between exits ran
    in the exported graphs and the heads read their states."""
    reference = _scores(tiny_cascade, precision="fp32")
    exported = _scores(tiny_cascade, backend="onnx")
    assert exported.shape == reference.shape == (len(QUESTIONS), 4)
    assert (exported - reference).abs().max().item() < 1e-4


def test_int8_needs_an_explicit_export(tiny_model) -> None:
    with pytest.raises(ModelFormatError, match="sieveqa export MODEL --format onnx --int8"):
        tiny_model.configure(device="cpu", backend="onnx", precision="int8")


@pytest.mark.parametrize("fmt", ["onnx", pytest.param("openvino", marks=pytest.mark.slow)])
def test_int8_export_scores_close_to_fp32(tiny_model, fmt: str) -> None:
    if fmt == "openvino":
        pytest.importorskip("nncf")
    folder = build_export(
        tiny_model.encoder,
        tiny_model.body_fingerprint(),
        fmt,
        int8=True,
        calibration=_calibration(tiny_model),
    )
    manifest = json.loads((folder / "export.json").read_text())
    assert manifest["precision"] == "int8" and manifest["calibration_rows"] == len(QUESTIONS)
    batch = _calibration(tiny_model)[0]
    inputs = (batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    with torch.inference_mode():
        body = tiny_model.encoder(*inputs)
        tiny_model.configure(device="cpu", backend=fmt, precision="int8")
        quantized = tiny_model.encoder(*inputs)
    valid = batch["attention_mask"].bool()
    error = (quantized - body)[valid].norm() / body[valid].norm()
    assert 0 < error.item() < 0.05  # int8, yet within 5% of the fp32 body's output


def test_a_killed_export_leaves_nothing_and_the_next_one_finishes(
    tiny_model, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = graphs.export_onnx

    def dies_after_writing(encoder, folder: Path) -> list[str]:
        real(encoder, folder)
        raise KeyboardInterrupt

    monkeypatch.setattr(graphs, "export_onnx", dies_after_writing)
    with pytest.raises(KeyboardInterrupt):
        tiny_model.configure(device="cpu", backend="onnx")
    folder = export_folder(tiny_model.body_fingerprint(), "onnx", "fp32")
    assert not folder.exists()
    assert not [p for p in folder.parent.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.setattr(graphs, "export_onnx", real)
    tiny_model.configure(backend="onnx")
    assert (folder / "export.json").is_file()


def test_an_export_of_another_body_or_with_files_missing_is_refused(tiny_model) -> None:
    tiny_model.configure(device="cpu", backend="onnx")
    folder = export_folder(tiny_model.body_fingerprint(), "onnx", "fp32")
    (folder / "layer01.onnx").unlink()
    with pytest.raises(ModelFormatError, match=r"export files missing \(layer01.onnx\)"):
        tiny_model.configure(backend="torch").configure(backend="onnx")
    manifest = json.loads((folder / "export.json").read_text())
    (folder / "export.json").write_text(json.dumps(manifest | {"body_fingerprint": "0" * 64}))
    with pytest.raises(ModelFormatError, match="an export of another body"):
        tiny_model.configure(backend="torch").configure(backend="onnx")


def _serves_threads_at_once(tiny_model, reference: torch.Tensor) -> None:
    """Concurrent calls give each caller its own scores (OpenVINO: each thread its infer request)."""
    results: list[torch.Tensor] = []
    errors: list[BaseException] = []

    def score(k: int) -> None:
        try:
            for _ in range(5):
                results.append(tiny_model.score_matrix(QUESTIONS[k:], TEXTS[k:])[0])
        except BaseException as err:  # surfaced below
            errors.append(err)

    threads = [threading.Thread(target=score, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for got in results:
        k = len(QUESTIONS) - len(got)
        assert (got - reference[k:]).abs().max().item() < 1e-4


def test_impossible_pairings_are_refused() -> None:
    cpu = torch.device("cpu")
    assert backend_precision("onnx", "auto", cpu) == "fp32"
    with pytest.raises(DeviceError, match="--backend onnx runs at fp32 or int8, not bf16"):
        backend_precision("onnx", "bf16", cpu)
    with pytest.raises(DeviceError, match="runs on the CPU"):
        backend_precision("openvino", "fp32", torch.device("cuda"))
    with pytest.raises(ConfigError, match="backend must be one of auto, torch, onnx, openvino"):
        backend_precision("tensorrt", "fp32", cpu)


def test_onnx_sessions_do_not_spin_between_calls(tiny_model) -> None:
    """One session (and thread pool) per layer: pools spinning while another layer runs took the cores
    from it (the per-layer body ran at 0.56x of one graph for the body; without spinning, at par)."""
    tiny_model.configure(device="cpu", backend="onnx")
    for session in tiny_model.encoder.runner.sessions:
        assert (
            session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"
        )


def test_an_exporter_failure_is_one_clear_error_and_the_model_stays_as_it_was(
    tiny_model, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(encoder, folder: Path) -> list[str]:
        raise RuntimeError("unsupported operator")

    monkeypatch.setattr(graphs, "export_onnx", fails)
    with pytest.raises(ModelFormatError, match="export to onnx failed: unsupported operator"):
        tiny_model.configure(device="cpu", backend="onnx")
    assert tiny_model.backend == "torch" and tiny_model.encoder.runner is None


def test_a_finished_export_is_reused_when_not_replacing(tiny_model) -> None:
    """Two processes that both found no export: the one that waited for the lock uses the other's."""
    fingerprint = tiny_model.body_fingerprint()
    folder = build_export(tiny_model.encoder, fingerprint, "onnx")
    made = (folder / "export.json").stat().st_mtime_ns
    assert build_export(tiny_model.encoder, fingerprint, "onnx", replace=False) == folder
    assert (folder / "export.json").stat().st_mtime_ns == made
