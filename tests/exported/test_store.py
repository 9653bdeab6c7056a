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
from sieveqa.exported.store import read_manifest

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


@pytest.mark.parametrize(
    "backend", ["onnx", pytest.param("openvino", marks=pytest.mark.slow)]
)  # 4-8 s to compile
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_damaged_missing_or_foreign_fp32_export_is_made_again(tiny_model) -> None:
    """A truncated or zeroed layer ended in InvalidProtobuf (issue 42); an fp32 export is made on first
    use, so a damaged, incomplete, foreign or older one is made again and scores as torch."""
    reference = _scores(tiny_model, precision="fp32")
    tiny_model.configure(backend="onnx")
    folder = export_folder(tiny_model.body_fingerprint(), "onnx", "fp32")
    manifest = json.loads((folder / "export.json").read_text())
    assert set(manifest["sha256"]) == set(manifest["files"])
    damages = {
        "truncated": lambda: _truncate(folder / "layer00.onnx"),
        "zeroed": lambda: _zero(folder / "layer01.onnx"),
        "missing": lambda: (folder / "layer01.onnx").unlink(),
        "another body": lambda: _edit(folder, body_fingerprint="0" * 64),
        "another runtime": lambda: _edit(folder, versions={"onnxruntime": "0.1"}),
        "no checksums": lambda: _edit(folder, sha256=None),
    }
    for what, damage in damages.items():
        damage()
        with pytest.raises(ModelFormatError, match=str(folder)):
            read_manifest(folder, tiny_model.body_fingerprint())
        got = _scores(tiny_model.configure(backend="torch"), backend="onnx")
        assert (got - reference).abs().max().item() < 1e-4, what
        assert read_manifest(folder, tiny_model.body_fingerprint()) is not None, what


@pytest.mark.slow
def test_a_damaged_int8_export_is_one_line(tiny_model) -> None:
    folder = build_export(
        tiny_model.encoder,
        tiny_model.body_fingerprint(),
        "onnx",
        int8=True,
        calibration=_calibration(tiny_model),
    )
    _zero(folder / "layer00.onnx")
    with pytest.raises(ModelFormatError, match=rf"^{folder}/layer00.onnx: damaged .*export again"):
        tiny_model.configure(device="cpu", backend="onnx", precision="int8")
    assert tiny_model.encoder.runner is None


def test_a_read_only_cache_is_one_line_and_onnx_on_first_use_falls_back(
    tiny_model, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`export` and `--backend onnx` (export on first use) ended in `OSError: Read-only file system`."""
    import errno

    from filelock import FileLock

    def read_only(self, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(FileLock, "acquire", read_only)
    with pytest.raises(
        ModelFormatError, match=r"cannot write an export there \(Read-only file system\); set SIEVEQA_CACHE"
    ):
        build_export(tiny_model.encoder, tiny_model.body_fingerprint(), "onnx")
    with pytest.raises(ModelFormatError, match="Read-only file system"):
        tiny_model.configure(device="cpu", backend="onnx")
    assert tiny_model.encoder.runner is None


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _zero(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[100:4000] = bytes(3900)
    path.write_bytes(bytes(data))


def _edit(folder: Path, **fields: object) -> None:
    manifest = json.loads((folder / "export.json").read_text())
    for key, value in fields.items():
        if value is None:
            manifest.pop(key)
        else:
            manifest[key] = value
    (folder / "export.json").write_text(json.dumps(manifest))


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


@pytest.mark.slow
def test_int8_calibrates_on_every_row_it_is_given(tiny_model) -> None:
    """`export --int8 --rows N` calibrated on at most ~256 rows whatever N was (issue 42)."""
    features = tiny_model.featurize(QUESTIONS * 25, TEXTS * 25)  # 300 rows
    batches = [batch for _, batch in tiny_model.batches(features)]
    folder = build_export(
        tiny_model.encoder, tiny_model.body_fingerprint(), "onnx", int8=True, calibration=batches
    )
    assert json.loads((folder / "export.json").read_text())["calibration_rows"] == 300


def test_a_cache_folder_that_cannot_be_made_is_one_line(tmp_path, monkeypatch) -> None:
    """SIEVEQA_CACHE under a file: `export` ended in a NotADirectoryError traceback (bench/hostile.py)."""
    (tmp_path / "a-file").write_text("x")
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "a-file" / "cache"))
    with pytest.raises(ModelFormatError, match=r"the cache folder cannot be made .*set SIEVEQA_CACHE"):
        export_folder("0" * 64, "onnx", "fp32")
