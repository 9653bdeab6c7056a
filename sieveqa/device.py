"""Where models run and at what precision: ``--device auto|cpu|cuda``, ``--precision auto|fp32|...``.

``auto`` picks CUDA when it is available. On a CPU, ``--precision auto`` picks bf16 only where the
CPU multiplies bf16 natively (AVX512-BF16 or AMX): elsewhere oneDNN emulates it, many times slower
than fp32 (measured in docs/RESULTS.md), so fp32 is the choice. On CUDA it picks bf16 where the GPU
supports it, else fp16.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sieveqa.errors import DeviceError

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import torch

DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")
PRECISIONS: tuple[str, ...] = ("auto", "fp32", "bf16", "fp16", "int8")
# torch is imported where it is used: the command line reads these names before any model loads.
#: CPU features that decide fp32 / bf16 / int8 speed (recorded with every measured result).
SPEED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "avx512_vnni", "avx_vnni")
_NATIVE_BF16 = frozenset({"avx512_bf16", "amx_bf16"})


@functools.cache
def cpu_info() -> tuple[str, frozenset[str]]:
    """The CPU's model name and feature flags (from /proc/cpuinfo; empty where there is none)."""
    model, flags = "", frozenset()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = frozenset(line.split(":", 1)[1].split())
                break
    return model, flags


def native_bf16() -> bool:
    """Whether this CPU has bf16 arithmetic units (AVX512-BF16 or AMX)."""
    return bool(_NATIVE_BF16 & cpu_info()[1])


def resolve_device(name: str) -> torch.device:
    """``auto`` → CUDA if available, else CPU; ``cuda`` without a GPU is an error."""
    import torch

    if name not in DEVICES:
        raise DeviceError(f"device must be one of {', '.join(DEVICES)}, got {name!r}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise DeviceError("--device cuda: no CUDA GPU is visible to torch on this machine")
    return torch.device(name)


def resolve_precision(precision: str, device: torch.device, training: bool = False) -> str:
    """The concrete precision for ``device``: ``auto`` resolved, impossible pairs refused.

    On CUDA ``auto`` is fp32 for inference: the one GPU measured (an H200, issue 46) scored a fresh
    process's pairs 4-5x faster in fp32 than in fp16 or bf16 (each new batch shape cost a half
    precision kernel 5-20x) and no faster warm; training (whose shapes are few and repeat) takes
    bf16, or fp16 where the GPU has no bf16."""
    import torch

    if precision not in PRECISIONS:
        raise DeviceError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    cuda = device.type == "cuda"
    if precision == "auto":
        if cuda:
            if not training:
                return "fp32"
            return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        return "bf16" if native_bf16() else "fp32"
    if precision == "int8" and cuda:
        raise DeviceError("int8 (dynamic quantization) runs on the CPU only; use bf16 or fp16 on CUDA")
    if precision == "fp16" and not cuda:
        raise DeviceError("fp16 is for CUDA; on a CPU use fp32, or bf16 where the CPU has native bf16")
    if precision == "bf16" and not cuda and not native_bf16():
        _warn_emulated_bf16()
    return precision


@functools.cache
def _warn_emulated_bf16() -> None:
    """Say once that bf16 asked for on a CPU without bf16 units is emulated (it is allowed: the result
    is the same, a run started on another machine can go on here)."""
    log.warning(
        "bf16 on this CPU (%s: no AVX512-BF16 or AMX) is emulated and runs several times slower than "
        "fp32 (8x for MPNet-12 on an AVX2 EPYC); --precision fp32 (or auto) is faster here",
        cpu_info()[0] or "unknown model",
    )


@contextlib.contextmanager
def autocast(device: torch.device, precision: str) -> Iterator[None]:
    """Mixed precision for ``precision`` on ``device`` (nothing for fp32 and int8)."""
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    if dtype is None:
        yield
    else:
        with torch.autocast(device.type, dtype=dtype):
            yield


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


def trim_heap() -> None:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``, under a millisecond;
    elsewhere nothing): after a large structure is freed, as training's data preparation frees its
    examples and token lists, the memory otherwise stays the process's. No garbage collection first:
    those are freed as their last reference goes, and a collection costs half a second in a process
    that has loaded torch and transformers."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def thread_env(threads: int) -> dict[str, str]:
    """The environment that sizes a new process's thread pools to ``threads``: OpenMP's (torch's) and
    rayon's (nanotoken's, built when it is imported, so a running process cannot resize it). A Ray
    actor or replica gets it as its ``runtime_env``; without it each one tokenized on every core."""
    return {"OMP_NUM_THREADS": str(threads), "RAYON_NUM_THREADS": str(threads)}


def use_threads(threads: int) -> None:
    """Size this process's thread pools to ``threads`` (``sieveqa --threads N``): torch's (and with it
    the ONNX Runtime and OpenVINO runners', which take torch's count) and nanotoken's. Called before
    either loads, as the command line does, it sizes both; after, torch is resized, and nanotoken's
    pool, built as it loaded, keeps its size (said in a warning)."""
    os.environ.update(thread_env(threads))
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    if "nanotoken" in sys.modules:
        log.warning("threads: the tokenizer's pool was sized as it loaded; set %d before it loads", threads)
