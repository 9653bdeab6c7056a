"""minilm-l3: ONNX-to-BertModel conversion, checked against onnxruntime; caching and reporting."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from sieveqa.backbones import REGISTRY, _onnx_minilm, load_backbone
from sieveqa.errors import BackboneError


@pytest.fixture
def source() -> Path:
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    try:
        return _onnx_minilm.onnx_path()
    except BackboneError as err:
        pytest.skip(str(err))


def test_missing_package_names_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path))
    monkeypatch.setattr(_onnx_minilm, "DISTRIBUTION", "sieveqa-absent-onnx-package")
    with pytest.raises(BackboneError, match="sieveqa-absent-onnx-package is not installed") as err:
        load_backbone("minilm-l3")
    assert "sieveqa[onnx]" in str(err.value)


@pytest.mark.slow
@pytest.mark.real
def test_converted_model_matches_onnxruntime(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np
    import onnxruntime
    import torch

    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path))
    backbone = load_backbone("minilm-l3")
    config = backbone.model.config
    assert type(backbone.model).__name__ == "BertModel"
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (3, 384, 12)
    report = json.loads((backbone.path / _onnx_minilm.REPORT).read_text())
    assert report["onnx_max_abs_diff"] <= 1e-4
    # backbone_status() would also build mpnet-12 in this fresh cache, so ask the spec directly.
    assert REGISTRY["minilm-l3"].verify(backbone.path).startswith("ok (onnx max abs diff ")

    # An independent check on other sentences, with heavy padding, of the folder load_backbone gives.
    sentences = ["What is the boiling point of water at sea level?", "100 degrees Celsius.", "Hi"]
    batch = backbone.tokenizer(sentences, padding="max_length", max_length=24, return_tensors="np")
    feeds = {name: batch[name].astype(np.int64) for name in ("input_ids", "attention_mask")}
    session = onnxruntime.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    token_output = next(out.name for out in session.get_outputs() if len(out.shape) == 3)
    (expected,) = session.run([token_output], feeds)
    with torch.no_grad():
        hidden = backbone.model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).last_hidden_state
    assert expected.shape == (3, 24, 384)
    assert np.abs(expected - hidden.numpy()).max() <= 1e-4


@pytest.mark.slow
@pytest.mark.real
def test_conversion_happens_once(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path))
    path = _onnx_minilm.locate()
    assert path == tmp_path / "backbones" / "minilm-l3"
    assert {p.name for p in path.iterdir()} >= {
        "config.json",
        "model.safetensors",
        "vocab.txt",
        "conversion.json",
    }
    report = json.loads((path / _onnx_minilm.REPORT).read_text())
    version = importlib.metadata.version(_onnx_minilm.DISTRIBUTION)
    assert report["source"] == f"{_onnx_minilm.DISTRIBUTION} {version}: paraphrase-MiniLM-L3-v2.onnx"

    def no_conversion(*_: object) -> float:
        raise AssertionError("second locate() must reuse the cache")

    monkeypatch.setattr(_onnx_minilm, "convert", no_conversion)
    assert _onnx_minilm.locate() == path


@pytest.mark.slow
@pytest.mark.real
def test_wrong_mapping_is_caught(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = _onnx_minilm.bert_state_dict

    def untransposed(graph: object) -> dict:
        # Same shapes, wrong orientation: only the onnxruntime comparison can notice.
        state = real(graph)
        name = "encoder.layer.1.attention.self.query.weight"
        state[name] = state[name].T
        return state

    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path))
    monkeypatch.setattr(_onnx_minilm, "bert_state_dict", untransposed)
    with pytest.raises(BackboneError, match="differs from onnxruntime by"):
        _onnx_minilm.locate()
    assert not _onnx_minilm.cache_dir().exists()


def test_verify_rejects_missing_or_bad_report(tmp_path: Path) -> None:
    with pytest.raises(BackboneError, match="unreadable conversion report"):
        _onnx_minilm.verify(tmp_path)
    (tmp_path / _onnx_minilm.REPORT).write_text(json.dumps({"onnx_max_abs_diff": 0.5}))
    with pytest.raises(BackboneError, match="exceeds"):
        _onnx_minilm.verify(tmp_path)
    (tmp_path / _onnx_minilm.REPORT).write_text(json.dumps({"onnx_max_abs_diff": 3.1e-6}))
    assert _onnx_minilm.verify(tmp_path) == "ok (onnx max abs diff 3.1e-06)"
