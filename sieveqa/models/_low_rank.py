"""Low-rank model folders: a body fine-tuned whole, stored as the installed base plus factors.

Each matrix of the body that training changed (the embeddings aside) is saved as two factors
``NAME.lr_a`` (out x r) and ``NAME.lr_b`` (r x in) whose product is the best rank-r approximation (SVD)
of the change; loading adds it to the installed base's matrix. Every other tensor (biases, LayerNorms,
heads, position embeddings) is kept as trained. A 12-layer MPNet judge is 6 MB at rank 16 instead of
220 MB, and keeps its ranking (docs/RESULTS.md, "A larger judge kept at low rank").

config.json records the rank, the factored names and a fingerprint of the base matrices they are
added to, so a different installed base is refused instead of silently mixed in.

A body may also *train* at low rank (``add_adapters``, LoRA): each matrix frozen at the installed
base's, plus trained factors ``lr_a`` / ``lr_b`` whose product is its change. The input goes through
the rank-r bottleneck, so no full weight gradient is computed, the optimizer holds a few MB, and the
factors are saved as they are (no SVD).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sieveqa.encoder import state_fingerprint
from sieveqa.errors import ConfigError, ModelFormatError

A, B = ".lr_a", ".lr_b"
#: The trained factors' parameter names on an adapted nn.Linear (saved as ``NAME.weight`` + A / B).
UP, DOWN = "lr_a", "lr_b"


def _adapted(module: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> Tensor:
    """Forward hook of an adapted matrix: the frozen matrix's output plus the change's, x b^T a^T."""
    return output + F.linear(F.linear(inputs[0], getattr(module, DOWN)), getattr(module, UP))


def add_adapters(model: nn.Module, base: Mapping[str, Tensor], rank: int, seed: int = 0) -> float:
    """Make every trainable matrix of ``model`` that ``base`` holds (the embeddings aside) its ``base``
    matrix, frozen, plus a trained rank-``rank`` change, and freeze every other tensor ``base`` names
    (a matrix already frozen, as below ``train_layers``, stays as it is).

    A matrix that already differs from its base starts from the best rank-``rank`` factors of the
    difference (exact for a model trained or stored at this rank); an unchanged one from a zero up
    factor and a random down one (LoRA's start). Returns the share of the changes' Frobenius norm
    kept (1.0 when nothing was cut); ConfigError when no matrix can take the rank."""
    if adapter_rank(model) is not None:
        raise ConfigError("the model already trains at low rank")
    generator = torch.Generator().manual_seed(seed)
    modules = dict(model.named_modules())
    chosen = []
    for name, param in model.named_parameters():
        owner = modules.get(name.removesuffix(".weight"))
        linear = name.endswith(".weight") and isinstance(owner, nn.Linear) and "embeddings" not in name
        if name in base and param.requires_grad and linear:
            chosen.append((name, param, owner))
    if not chosen:
        raise ConfigError(f"--low-rank {rank}: the body has no trainable matrix to adapt")
    smallest = min(min(p.shape) for _, p, _ in chosen)
    if rank >= smallest:
        raise ConfigError(f"--low-rank {rank}: the body's matrices need a rank below {smallest}")
    for name, param in model.named_parameters():
        if name in base:
            param.requires_grad_(False)
    left = total = 0.0
    for name, param, owner in chosen:
        weight = base[name].to(param.device, param.dtype)
        change = (param.detach() - weight).float()
        if change.abs().max() > 0:
            u, s, vh = torch.linalg.svd(change, full_matrices=False)
            root = s[:rank].sqrt()
            up, down = u[:, :rank] * root, root[:, None] * vh[:rank]
            left, total = left + s[:rank].pow(2).sum().item(), total + s.pow(2).sum().item()
        else:
            up = torch.zeros(param.shape[0], rank)
            down = (torch.rand(rank, param.shape[1], generator=generator) * 2 - 1) / math.sqrt(param.shape[1])
        with torch.no_grad():
            param.copy_(weight)
        owner.register_parameter(UP, nn.Parameter(up.to(param.device, param.dtype).contiguous()))
        owner.register_parameter(DOWN, nn.Parameter(down.to(param.device, param.dtype).contiguous()))
        owner.register_forward_hook(_adapted)
    return (left / total) ** 0.5 if total else 1.0


def adapter_rank(model: nn.Module) -> int | None:
    """The rank of ``model``'s adapters (``add_adapters``), or None when it has none."""
    found = (getattr(m, UP) for m in model.modules() if isinstance(getattr(m, UP, None), Tensor))
    return next((up.shape[1] for up in found), None)


def _trained_factors(state: Mapping[str, Tensor], name: str) -> tuple[Tensor, Tensor] | None:
    """The adapter factors (up, down) beside the matrix ``name`` in ``state``, if it trained at low rank."""
    stem = name.removesuffix(".weight")
    up, down = state.get(f"{stem}.{UP}"), state.get(f"{stem}.{DOWN}")
    if up is None or down is None:
        return None
    return up.detach().float().cpu(), down.detach().float().cpu()


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
        if name.endswith(("." + UP, "." + DOWN)):
            continue  # an adapter's factors: saved with their matrix
        weight = base.get(name)
        if (factors := _trained_factors(state, name)) is not None:
            up, down = factors
            frozen = tensor.detach().cpu()
            if weight is not None and torch.equal(frozen, weight.detach().cpu().to(frozen.dtype)):
                out[name + A], out[name + B] = up, down  # trained at low rank: the factors as they are
                names.append(name)
                size = (up @ down).pow(2).sum().item()
                left, total = left + size, total + size
                continue
            tensor = tensor.detach().float().cpu() + up @ down
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
