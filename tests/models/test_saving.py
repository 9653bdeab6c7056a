"""The model folder format: checksummed weights, clear errors for broken folders, format 1 still loads."""

import json
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from sieveqa.errors import ModelFormatError
from sieveqa.io import file_sha256
from sieveqa.models.cascade import CascadeTransformer
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.zoo import load_model
from sieveqa.runtime.cascade import CascadePolicy


def test_weights_carry_a_sha256_and_a_flipped_byte_is_reported(tiny_model, tmp_path: Path) -> None:
    folder = tiny_model.save_pretrained(tmp_path / "m")
    weights = folder / "model.safetensors"
    assert json.loads((folder / "config.json").read_text())["weights_sha256"] == file_sha256(weights)
    data = bytearray(weights.read_bytes())
    data[-10] ^= 0x01  # one bit of one weight
    weights.write_bytes(bytes(data))
    with pytest.raises(ModelFormatError, match=r"model\.safetensors is corrupt or was changed"):
        CrossEncoder.from_pretrained(folder)


def test_a_truncated_file_without_a_checksum_is_reported_not_a_traceback(tiny_model, tmp_path: Path) -> None:
    folder = tiny_model.save_pretrained(tmp_path / "m")
    config = json.loads((folder / "config.json").read_text())
    del config["weights_sha256"]
    (folder / "config.json").write_text(json.dumps(config))
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(ModelFormatError, match=r"model\.safetensors cannot be read"):
        CrossEncoder.from_pretrained(folder)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[1, 2]", "expected a JSON object, got list"),
        (b"{oops", "invalid JSON"),
        (b"\xff\xfe", "not UTF-8 text"),
        (b'{"format_version": 2, "config": 3}', "field 'config' must be an object"),
        (b'{"format_version": 9, "config": {}}', "format_version 9 is not 1 or 2"),
    ],
)
def test_a_broken_config_json_is_named(tiny_model, tmp_path: Path, content: bytes, message: str) -> None:
    folder = tiny_model.save_pretrained(tmp_path / "m")
    (folder / "config.json").write_bytes(content)
    with pytest.raises(ModelFormatError, match=re.escape(message)):
        load_model(folder)


def _as_format_1(folder: Path, drop_ratios: list[float]) -> None:
    """Rewrite a saved cascade the way sieveqa 0.1 before the shared head saved it."""
    state = load_file(str(folder / "model.safetensors"))
    old = {re.sub(r"^heads\.(\d+)\.", r"heads.\1.net.", k): v for k, v in state.items()}
    save_file(old, str(folder / "model.safetensors"))
    config = json.loads((folder / "config.json").read_text())
    config["format_version"] = 1
    config["config"]["drop_ratios"] = drop_ratios
    config["tuning"] = {"drop_ratios": drop_ratios}
    del config["weights_sha256"]
    (folder / "config.json").write_text(json.dumps(config))


def test_a_format_1_cascade_loads_scores_identically_and_keeps_its_drop_ratios(
    tiny_cascade, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tiny_cascade.save_pretrained(tmp_path / "c")
    new = CascadeTransformer.from_pretrained(folder)
    _as_format_1(folder, [0.3, 0.2, 0.1])
    old = CascadeTransformer.from_pretrained(folder)
    questions, texts = ["who wrote hamlet?"] * 2, ["Shakespeare.", "It is a play."]
    assert torch.equal(new.exit_scores(questions, texts), old.exit_scores(questions, texts))
    assert CascadePolicy.saved(old) == CascadePolicy(drop_ratios=(0.3, 0.2, 0.1))
    assert "no recorded sha256" in caplog.text


def test_a_policy_file_beside_the_model_wins_and_is_checked(tiny_cascade, tmp_path: Path) -> None:
    from sieveqa.errors import ConfigError

    model = CascadeTransformer.from_pretrained(tiny_cascade.save_pretrained(tmp_path / "c"))
    assert CascadePolicy.saved(model) is None
    CascadePolicy(thresholds=(0.0, 1.0, 2.0)).save_beside(model, tuning={"dataset": "x"})
    assert CascadePolicy.saved(model) == CascadePolicy(thresholds=(0.0, 1.0, 2.0))
    (model.path / "policy.json").write_text('{"policy": "cascade", "alpha": 0.3}')
    with pytest.raises(ConfigError, match=r"unknown cascade policy field\(s\) \['alpha'\]"):
        CascadePolicy.saved(model)
    (model.path / "policy.json").write_text('{"policy": "towers", "budget": 3}')
    with pytest.raises(ConfigError, match="holds a 'towers' policy, expected 'cascade'"):
        CascadePolicy.saved(model)


@pytest.mark.slow
@pytest.mark.real
def test_train_layers_saves_only_the_top_layer_and_refuses_other_frozen_weights(tmp_path: Path) -> None:
    from sieveqa.models.cross_encoder import CrossEncoderConfig

    model = CrossEncoder(CrossEncoderConfig(backbone="minilm-l6", max_length=64, train_layers=1))
    with torch.no_grad():  # as if trained: the top layer and head differ from the base
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.01 * torch.randn_like(p))
    folder = model.save_pretrained(tmp_path / "m")
    stored = load_file(folder / "model.safetensors")
    assert stored and all(n.startswith(("encoder.backbone.encoder.layer.5.", "head")) for n in stored)
    pairs = (["who wrote hamlet"] * 2, ["Shakespeare wrote Hamlet.", "Paris is in France."])
    loaded = CrossEncoder.from_pretrained(folder)
    torch.testing.assert_close(loaded.score_pairs(*pairs), model.score_pairs(*pairs), rtol=0, atol=1e-3)
    meta = json.loads((folder / "config.json").read_text())
    meta["frozen_fingerprint"] = "0" * 64  # trained over other lower layers than those installed
    (folder / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match="its frozen layers are not the installed backbone"):
        CrossEncoder.from_pretrained(folder)
