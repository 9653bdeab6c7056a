"""Where a measured number came from: date, machine and software, stored beside every result."""

from __future__ import annotations

import platform
import sys
from datetime import date
from typing import Any

import torch

from sieveqa.device import SPEED_FLAGS, cpu_info


def cpu_description() -> str:
    """CPU model and the vector extensions that decide fp32/bf16/int8 speed."""
    model, flags = cpu_info()
    model = model or platform.processor() or platform.machine()
    return f"{model}; {', '.join(f for f in SPEED_FLAGS if f in flags) or 'no AVX2'}"


def machine_description() -> str:
    """The CPU, the torch threads and, when one is visible, the GPU."""
    text = f"{cpu_description()}; {torch.get_num_threads()} torch threads"
    if torch.cuda.is_available():
        text += f"; GPU {torch.cuda.get_device_name(0)}"
    return text


def run_info(command: str | None = None) -> dict[str, Any]:
    """Date, machine and versions of the run that produced a result."""
    from sieveqa import __version__

    info: dict[str, Any] = {
        "date": date.today().isoformat(),
        "machine": machine_description(),
        "versions": {"sieveqa": __version__, "torch": torch.__version__, "python": sys.version.split()[0]},
    }
    if command is not None:
        info["command"] = command
    return info
