"""Where a measured number came from: date, machine and software, stored beside every result."""

from __future__ import annotations

import platform
import sys
from datetime import date
from pathlib import Path
from typing import Any

import torch

_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "avx512_vnni", "avx_vnni")


def cpu_description() -> str:
    """CPU model and the vector extensions that decide fp32/bf16/int8 speed."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model in ("", "x86_64"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    return f"{model}; {', '.join(f for f in _FLAGS if f in flags) or 'no AVX2'}"


def run_info(command: str | None = None) -> dict[str, Any]:
    """Date, machine and versions of the run that produced a result."""
    from sieveqa import __version__

    info: dict[str, Any] = {
        "date": date.today().isoformat(),
        "machine": f"{cpu_description()}; {torch.get_num_threads()} torch threads",
        "versions": {"sieveqa": __version__, "torch": torch.__version__, "python": sys.version.split()[0]},
    }
    if command is not None:
        info["command"] = command
    return info
