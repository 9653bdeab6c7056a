"""Inference precision: fp32, bf16 autocast, or int8 dynamic quantization of the linear layers."""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Iterator
from typing import Literal

import torch
from torch import nn

Precision = Literal["fp32", "bf16", "int8"]
PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "int8")


@contextlib.contextmanager
def apply_precision(model: nn.Module, precision: str) -> Iterator[nn.Module]:
    """Yield the module to run at ``precision``.

    bf16 runs the fp32 weights under CPU autocast; int8 runs a dynamically quantized copy (made once
    per model and cached: quantizing takes longer than scoring a small batch, so weights changed after
    the first int8 call are not seen by later int8 calls).
    """
    if precision == "fp32":
        yield model
    elif precision == "bf16":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            yield model
    elif precision == "int8":
        cached = getattr(model, "_int8_copy", None)
        if cached is None:
            # torch.ao's eager quantization is deprecated in favour of torchao (not a dependency);
            # it still works in the pinned torch, and its warnings would only repeat that.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", category=DeprecationWarning)
                warnings.simplefilter("ignore", category=UserWarning)
                cached = torch.ao.quantization.quantize_dynamic(
                    copy.deepcopy(model), {nn.Linear}, dtype=torch.qint8
                )
            object.__setattr__(model, "_int8_copy", cached)
        yield cached
    else:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
