"""Low-rank model folders: a body fine-tuned whole, stored as the installed base plus factors.

Each matrix of the body that training changed (the embeddings aside) is saved as two factors
``NAME.lr_a`` (out x r) and ``NAME.lr_b`` (r x in) whose product is the best rank-r approximation (SVD)
of the change; loading adds it to the installed base's matrix. Every other tensor (biases, LayerNorms,
heads, position embeddings) is kept as trained. A 12-layer MPNet judge is 6 MB at rank 16 instead of
220 MB, and keeps its ranking (docs/RESULTS.md, "A larger judge kept at low rank").

config.json records the rank, the factored names and a fingerprint of the base matrices they are
added to, so a different installed base is refused instead of silently mixed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from sieveqa.encoder import state_fingerprint
from sieveqa.errors import ModelFormatError

A, B = ".lr_a", ".lr_b"


def factorize(
    state: Mapping[str, Tensor], base: Mapping[str, Tensor], rank: int
) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """``state`` with each 2-D tensor that differs from its ``base`` counterpart replaced by rank-``rank``
    factors of the difference, and the config.json entry describing them (``kept``: the share of the
    changes' Frobenius norm the factors keep)."""
    out: dict[str, Tensor] = {}
    names: list[str] = []
    left = total = 0.0
    for name, tensor in state.items():
        weight = base.get(name)
        if weight is None or tensor.dim() != 2 or "embeddings" in name or min(tensor.shape) <= rank:
            out[name] = tensor
            continue
        tensor, weight = tensor.detach().float().cpu(), weight.detach().float().cpu()
        if torch.equal(tensor.half(), weight.half()):  # unchanged, as saved (a loaded fp16 model)
            out[name] = tensor
            continue
        change = tensor - weight
        u, s, vh = torch.linalg.svd(change, full_matrices=False)
        out[name + A] = (u[:, :rank] * s[:rank]).contiguous()
        out[name + B] = vh[:rank].contiguous()
        names.append(name)
        left, total = left + s[:rank].pow(2).sum().item(), total + s.pow(2).sum().item()
    entry = {
        "rank": rank,
        "matrices": names,
        "base_fingerprint": state_fingerprint({n: base[n] for n in names}),
        "kept": round((left / total) ** 0.5, 4) if total else 1.0,
    }
    return out, entry


def check_base(where: str, own: Mapping[str, Tensor], entry: Mapping[str, Any]) -> None:
    """Raise unless ``own`` (a model built over the installed base) holds the base matrices the
    factors of ``entry`` were made against."""
    names = entry.get("matrices")
    if not isinstance(names, list) or not all(isinstance(n, str) and n in own for n in names):
        raise ModelFormatError(f"{where}: field 'low_rank.matrices' must list the model's factored matrices")
    if state_fingerprint({n: own[n] for n in names}) != entry.get("base_fingerprint"):
        raise ModelFormatError(
            f"{where}: its low-rank changes were made over other base weights than the installed backbone's"
        )


def expand(
    where: str, state: Mapping[str, Tensor], own: Mapping[str, Tensor], entry: Mapping[str, Any]
) -> dict[str, Tensor]:
    """``state`` with every factored matrix of ``entry`` back as its base (from ``own``) plus a @ b;
    errors name ``where`` (the weights file)."""
    state = dict(state)
    for name in entry["matrices"]:
        a, b = state.pop(name + A, None), state.pop(name + B, None)
        if a is None or b is None:
            raise ModelFormatError(f"{where}: lacks the factors {name}{A} / {name}{B}")
        weight = own[name]
        if (a.shape[0], b.shape[1]) != tuple(weight.shape):
            raise ModelFormatError(
                f"{where}: {name}'s factors make {a.shape[0]}x{b.shape[1]}, "
                f"the model's matrix is {tuple(weight.shape)}"
            )
        state[name] = torch.addmm(weight.float(), a.float(), b.float()).to(weight.dtype)  # base + a @ b
    return state
