"""Low-rank model folders: what training changed, stored as factors over the installed base."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from sieveqa.errors import ConfigError, ModelFormatError
from sieveqa.io import file_sha256
from sieveqa.models.zoo import load_model

QUESTIONS = ["who wrote the book", "when did the war end", "what is the capital"]
TEXTS = ["the book was written by her", "the war ended in 1918", "bicycles have two wheels"]


def _change_at_rank(model, rank: int, seed: int = 0) -> list[str]:
    """Add a random rank-``rank`` change to every matrix of the body's layers; their names."""
    gen = torch.Generator().manual_seed(seed)
    changed = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("encoder.") and p.dim() == 2 and "embeddings" not in name:
                a = torch.randn(p.shape[0], rank, generator=gen) * 0.1
                p.add_(a @ torch.randn(rank, p.shape[1], generator=gen))
                changed.append(name)
    return changed


def test_a_change_of_the_folder_rank_comes_back_whole_from_a_smaller_file(tiny_model, tmp_path: Path) -> None:
    changed = _change_at_rank(tiny_model, 2)
    whole = tiny_model.save_pretrained(tmp_path / "whole")
    folder = tiny_model.save_pretrained(tmp_path / "lr", low_rank=2)
    stored = load_file(str(folder / "model.safetensors"))
    name = changed[0]
    assert name not in stored and stored[f"{name}.lr_a"].shape == (tiny_model.state_dict()[name].shape[0], 2)
    entry = json.loads((folder / "config.json").read_text())["low_rank"]
    assert sorted(entry["matrices"]) == sorted(changed) and entry["kept"] == pytest.approx(1.0, abs=1e-3)
    whole_state = load_file(str(whole / "model.safetensors"))
    factors = sum(t.numel() for n, t in stored.items() if n.endswith((".lr_a", ".lr_b")))
    assert factors < 0.5 * sum(whole_state[n].numel() for n in changed)
    expected = tiny_model.score_pairs(QUESTIONS, TEXTS)
    assert load_model(folder).score_pairs(QUESTIONS, TEXTS) == pytest.approx(expected, abs=2e-2)


def test_a_change_beyond_the_rank_keeps_its_largest_part(tiny_model, tmp_path: Path) -> None:
    _change_at_rank(tiny_model, 8)
    entry = json.loads((tiny_model.save_pretrained(tmp_path / "lr", low_rank=1) / "config.json").read_text())
    assert 0.3 < entry["low_rank"]["kept"] < 0.95


def test_unchanged_matrices_are_stored_as_they_are(tiny_model, tmp_path: Path) -> None:
    folder = tiny_model.save_pretrained(tmp_path / "lr", low_rank=2)
    assert json.loads((folder / "config.json").read_text())["low_rank"]["matrices"] == []
    assert not any(n.endswith(".lr_a") for n in load_file(str(folder / "model.safetensors")))


def _rewrite(folder: Path, change_config=None, change_state=None) -> None:
    config = json.loads((folder / "config.json").read_text())
    if change_state is not None:
        state = load_file(str(folder / "model.safetensors"))
        change_state(state)
        save_file(state, str(folder / "model.safetensors"))
        config["weights_sha256"] = file_sha256(folder / "model.safetensors")
    if change_config is not None:
        change_config(config)
    (folder / "config.json").write_text(json.dumps(config))


def test_another_base_or_a_missing_factor_is_named(tiny_model, tmp_path: Path) -> None:
    changed = _change_at_rank(tiny_model, 2)
    other = tiny_model.save_pretrained(tmp_path / "other", low_rank=2)
    _rewrite(other, change_config=lambda c: c["low_rank"].update(base_fingerprint="0" * 64))
    with pytest.raises(ModelFormatError, match="other base weights than the installed backbone"):
        load_model(other)
    missing = tiny_model.save_pretrained(tmp_path / "missing", low_rank=2)
    _rewrite(missing, change_state=lambda s: s.pop(f"{changed[0]}.lr_b"))
    with pytest.raises(ModelFormatError, match=r"lacks the factors .*\.lr_a / .*\.lr_b"):
        load_model(missing)
    unknown = tiny_model.save_pretrained(tmp_path / "unknown", low_rank=2)
    _rewrite(unknown, change_config=lambda c: c["low_rank"].update(matrices=["no.such.weight"]))
    with pytest.raises(ModelFormatError, match=r"'low_rank\.matrices' must list"):
        load_model(unknown)


def test_a_model_sharing_its_body_has_none_to_factor(tiny_model, tiny_cascade, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="low_rank must be >= 1"):
        tiny_model.save_pretrained(tmp_path / "zero", low_rank=0)
    tiny_cascade.share_body(tiny_model.save_pretrained(tmp_path / "body"))
    with pytest.raises(ConfigError, match="not stored here to factor"):
        tiny_cascade.save_pretrained(tmp_path / "c", low_rank=2)
