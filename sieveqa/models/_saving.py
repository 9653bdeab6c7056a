"""The model folder format: ``config.json`` + ``model.safetensors`` (+ ``policy.json``).

Parameters that training left frozen (the word embeddings, by default; with ``train_layers``, all
but the top layers) are not stored: they are read from the named backbone, whose fingerprint is
recorded so a different base is refused rather than
silently mixed in. ``config.json`` records the sha256 of the weights file, checked at every load, so
a truncated download or a flipped byte is reported instead of used. ``policy.json`` holds the
question-time settings a runtime applies (a cascade's drop ratios), written apart from the weights.
A body fine-tuned whole may instead be stored as low-rank factors of its changes (``_low_rank``).

Format 1 (sieveqa before the shared classifier head) still loads: its cascade heads are renamed and
the drop ratios it kept inside the model config become its policy.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from sieveqa.encoder import SteppableEncoder
from sieveqa.errors import ConfigError, ModelFormatError
from sieveqa.io import atomic_dir, atomic_write_json, file_sha256, read_json_object
from sieveqa.models._low_rank import check_base, expand, factorize
from sieveqa.paths import run_folder_hint

log = logging.getLogger(__name__)

FORMAT_VERSION = 2
CONFIG = "config.json"
WEIGHTS = "model.safetensors"
POLICY = "policy.json"
#: Parameter renames from format 1: the cascade's exit heads lost their ``.net`` level.
_V1_RENAMES = ((re.compile(r"^heads\.(\d+)\.net\."), r"heads.\1."),)


def tensor_fingerprint(tensor: torch.Tensor) -> str:
    """sha256 of a tensor's fp32 bytes: identifies the base weights a model was trained over."""
    return hashlib.sha256(tensor.detach().float().cpu().contiguous().numpy().tobytes()).hexdigest()


def frozen_prefixes(encoder: SteppableEncoder, train_layers: int | None, prefix: str) -> tuple[str, ...]:
    """Names (under ``prefix``) of ``encoder``'s weights that training only its top ``train_layers``
    layers keeps at the base's values: embeddings, lower layers (whole modules) and anything else."""
    if train_layers is None:
        return ()
    layers = len(encoder.layers)
    if train_layers > layers:
        raise ConfigError(f"train_layers must be in 1..{layers}, got {train_layers}")
    trained = tuple(f"{prefix}backbone.encoder.layer.{i}." for i in range(layers - train_layers, layers))
    module = re.compile(rf"{re.escape(prefix)}backbone\.(embeddings\.|encoder\.layer\.\d+\.)")
    names = [n for n, _ in encoder.named_parameters(prefix=prefix.rstrip(".")) if not n.startswith(trained)]
    return tuple(dict.fromkeys(m.group(0) if (m := module.match(n)) else n for n in names))


def save_model_folder(
    path: str | Path,
    module: nn.Module,
    meta: dict[str, Any],
    exclude: tuple[str, ...] = (),
    dtype: torch.dtype = torch.float16,
    policy: dict[str, Any] | None = None,
    low_rank: tuple[Mapping[str, torch.Tensor], int] | None = None,
) -> Path:
    """Write ``module``'s state (minus ``exclude`` prefixes) in ``dtype``, ``meta`` as config.json
    with the weights' sha256, and ``policy`` as policy.json; all or nothing. With ``low_rank=(base,
    rank)``, matrices that differ from ``base``'s are stored as rank-``rank`` factors of the change."""
    path = Path(path)
    state = {name: t for name, t in module.state_dict().items() if not name.startswith(exclude)}
    if low_rank is not None:
        state, entry = factorize(state, *low_rank)
        meta = {**meta, "low_rank": entry}
    state = {
        name: tensor.detach().to(dtype).cpu().contiguous()
        if tensor.is_floating_point()
        else tensor.detach().cpu().contiguous()
        for name, tensor in state.items()
    }
    with atomic_dir(path) as tmp:
        save_file(state, str(tmp / WEIGHTS))
        meta = {
            **meta,
            "format_version": FORMAT_VERSION,
            "excluded": list(exclude),
            "dtype": str(dtype).split(".")[-1],
            "weights_sha256": file_sha256(tmp / WEIGHTS),
        }
        (tmp / CONFIG).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        if policy is not None:
            (tmp / POLICY).write_text(json.dumps(policy, indent=2) + "\n", encoding="utf-8")
    return path


def read_config(path: str | Path) -> dict[str, Any]:
    """A model folder's config.json, checked and brought to the current format."""
    path = Path(path)
    cfg = path / CONFIG
    if not cfg.is_file() or not (path / WEIGHTS).is_file():
        raise ModelFormatError(
            f"{path}: not a sieveqa model folder (needs {CONFIG} and {WEIGHTS}){run_folder_hint(path)}"
        )
    meta = read_json_object(cfg, ModelFormatError)
    version = meta.get("format_version")
    if version not in (1, FORMAT_VERSION):
        raise ModelFormatError(f"{cfg}: format_version {version!r} is not 1 or {FORMAT_VERSION}")
    if not isinstance(meta.get("config"), dict):
        raise ModelFormatError(f"{cfg}: field 'config' must be an object of model settings")
    if version == 1:
        meta = _from_v1(meta)
    return meta


def _from_v1(meta: dict[str, Any]) -> dict[str, Any]:
    config = dict(meta["config"])
    ratios = config.pop("drop_ratios", None)
    meta = {**meta, "config": config}
    if ratios is not None:
        meta["legacy_policy"] = {"drop_ratios": ratios, "tuning": meta.get("tuning")}
    return meta


def hf_config(path: str | Path) -> dict[str, Any] | None:
    """The ``config.json`` of a Hugging Face model folder that sieveqa did not write, or None."""
    try:
        config = json.loads((Path(path) / CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict) or "sieveqa_model" in config or "model_type" not in config:
        return None
    return config


def model_kind(path: str | Path) -> str:
    """The ``sieveqa_model`` kind a model folder holds (``cross-encoder``, ``cascade``, ...); a Hugging
    Face folder is taken as a cross-encoder (``sieveqa.models.foreign`` reads it, or says why not)."""
    if hf_config(path) is not None:
        return "cross-encoder"
    kind = read_config(path).get("sieveqa_model")
    if not isinstance(kind, str):
        raise ModelFormatError(f"{Path(path) / CONFIG}: field 'sieveqa_model' must name the model kind")
    return kind


def read_meta(path: str | Path, kind: str) -> dict[str, Any]:
    """Read and check a model folder's config.json (``kind`` is the expected ``sieveqa_model``)."""
    meta = read_config(path)
    if meta.get("sieveqa_model") != kind:
        raise ModelFormatError(
            f"{Path(path) / CONFIG}: holds a {meta.get('sieveqa_model')!r} model, expected {kind!r}"
        )
    return meta


def load_into(path: str | Path, module: nn.Module, meta: dict[str, Any]) -> None:
    """Load the stored tensors into ``module`` after checking the file's sha256; every parameter
    must be stored or excluded."""
    path = Path(path)
    weights = path / WEIGHTS
    expected_sha = meta.get("weights_sha256")
    if expected_sha is None:
        log.warning("%s has no recorded sha256 (saved by an older sieveqa); it is not verified", weights)
    elif file_sha256(weights) != expected_sha:
        raise ModelFormatError(
            f"{weights} is corrupt or was changed: its sha256 differs from the one recorded in "
            f"{CONFIG} ({expected_sha[:12]}…); restore or re-save the model"
        )
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError) as err:
        raise ModelFormatError(f"{weights} cannot be read: {err}") from err
    if meta.get("format_version") == 1:
        state = {_rename_v1(name): tensor for name, tensor in state.items()}
    excluded = tuple(meta.get("excluded", ()))
    own = module.state_dict()
    if (entry := meta.get("low_rank")) is not None:
        where = f"{path / CONFIG}"
        if not isinstance(entry, dict):
            raise ModelFormatError(f"{where}: field 'low_rank' must be an object")
        check_base(where, own, entry)
        state = expand(str(weights), state, own, entry)
    expected = {n for n in own if not n.startswith(excluded)}
    missing, extra = expected - set(state), set(state) - expected
    if missing or extra:
        raise ModelFormatError(
            f"{weights} does not match the model: missing {sorted(missing)[:3]}, "
            f"unexpected {sorted(extra)[:3]}"
        )
    bad = [n for n, t in state.items() if t.shape != own[n].shape]
    if bad:
        raise ModelFormatError(
            f"{weights}: {bad[0]} has shape {tuple(state[bad[0]].shape)}, "
            f"the model {tuple(own[bad[0]].shape)}"
        )
    module.load_state_dict({n: t.to(own[n].dtype) for n, t in state.items()}, strict=False)


def _rename_v1(name: str) -> str:
    for pattern, replacement in _V1_RENAMES:
        name = pattern.sub(replacement, name)
    return name


def read_policy(path: str | Path, meta: dict[str, Any]) -> dict[str, Any] | None:
    """The question-time policy saved beside a model (policy.json, or a format-1 config's)."""
    file = Path(path) / POLICY
    return read_json_object(file, ModelFormatError) if file.is_file() else meta.get("legacy_policy")


def write_policy(path: str | Path, policy: dict[str, Any]) -> Path:
    """Write ``policy.json`` into a model folder (atomically; weights and config untouched)."""
    file = Path(path) / POLICY
    atomic_write_json(file, policy)
    return file
