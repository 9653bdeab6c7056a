"""Saving trained models as safetensors + JSON over a pip-installed base backbone.

A model folder holds ``config.json`` and ``model.safetensors``. Parameters that training left
frozen (the word embeddings, by default) are not stored: they are read from the named backbone,
whose fingerprint is recorded so a different base is refused rather than silently mixed in.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from sieveqa.errors import ModelFormatError
from sieveqa.io import atomic_dir, atomic_write_json

FORMAT_VERSION = 1


def tensor_fingerprint(tensor: torch.Tensor) -> str:
    """sha256 of a tensor's fp32 bytes: identifies the base weights a model was trained over."""
    return hashlib.sha256(tensor.detach().float().contiguous().numpy().tobytes()).hexdigest()


def save_model_folder(
    path: str | Path,
    module: nn.Module,
    meta: dict[str, Any],
    exclude: tuple[str, ...] = (),
    dtype: torch.dtype = torch.float16,
) -> Path:
    """Write ``module``'s state (minus ``exclude`` prefixes) in ``dtype`` and ``meta`` as config.json."""
    path = Path(path)
    state = {
        name: tensor.detach().to(dtype).contiguous()
        if tensor.is_floating_point()
        else tensor.detach().contiguous()
        for name, tensor in module.state_dict().items()
        if not name.startswith(exclude)
    }
    meta = {
        **meta,
        "format_version": FORMAT_VERSION,
        "excluded": list(exclude),
        "dtype": str(dtype).split(".")[-1],
    }
    with atomic_dir(path) as tmp:
        save_file(state, str(tmp / "model.safetensors"))
        (tmp / "config.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return path


def model_kind(path: str | Path) -> str:
    """The ``sieveqa_model`` kind a model folder holds (``cross-encoder``, ``cascade``, ...)."""
    return str(_read_config(Path(path)).get("sieveqa_model"))


def _read_config(path: Path) -> dict[str, Any]:
    cfg = path / "config.json"
    if not cfg.is_file() or not (path / "model.safetensors").is_file():
        raise ModelFormatError(
            f"{path}: not a sieveqa model folder (needs config.json and model.safetensors)"
        )
    try:
        meta = json.loads(cfg.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ModelFormatError(f"{cfg}: invalid JSON ({err.msg}, line {err.lineno})") from err
    return meta


def read_meta(path: str | Path, kind: str) -> dict[str, Any]:
    """Read and check a model folder's config.json (``kind`` is the expected ``sieveqa_model``)."""
    path = Path(path)
    cfg = path / "config.json"
    meta = _read_config(path)
    if meta.get("sieveqa_model") != kind:
        raise ModelFormatError(f"{cfg}: holds a {meta.get('sieveqa_model')!r} model, expected {kind!r}")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ModelFormatError(f"{cfg}: format_version {meta.get('format_version')} is not {FORMAT_VERSION}")
    return meta


def load_into(path: str | Path, module: nn.Module, meta: dict[str, Any]) -> None:
    """Load the stored tensors into ``module``; every parameter must be stored or excluded."""
    path = Path(path)
    state = load_file(str(path / "model.safetensors"))
    excluded = tuple(meta.get("excluded", ()))
    expected = {n for n in module.state_dict() if not n.startswith(excluded)}
    missing, extra = expected - set(state), set(state) - expected
    if missing or extra:
        raise ModelFormatError(
            f"{path}/model.safetensors does not match the model: missing {sorted(missing)[:3]}, "
            f"unexpected {sorted(extra)[:3]}"
        )
    own = module.state_dict()
    module.load_state_dict({n: t.to(own[n].dtype) for n, t in state.items()}, strict=False)


def update_meta(path: str | Path, kind: str, updates: dict[str, Any]) -> dict[str, Any]:
    """Merge ``updates`` into a model folder's config.json (atomically; weights untouched).

    A value that is a dict is merged one level deep, so ``{"config": {"drop_ratios": ...}}`` keeps
    the rest of the architecture.
    """
    path = Path(path)
    meta = read_meta(path, kind)
    for key, value in updates.items():
        meta[key] = {**meta.get(key, {}), **value} if isinstance(value, dict) else value
    atomic_write_json(path / "config.json", meta)
    return meta
