"""``--backend auto``: the fastest backend and precision measured at no loss on this kind of CPU.

The choices are measured, not guessed: ``bench/throughput.py --choose`` scores a dev set with every
backend and precision, keeps those whose P@1 and MAP stay within :data:`TOLERANCE` points of torch
fp32, orders them by pairs per second, and records the list under this CPU's kind in
``resources/backends.json``. A kind never measured keeps torch, whose ``--precision auto`` already
knows bf16 from fp32 by the CPU's flags.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sieveqa.device import cpu_info
from sieveqa.errors import ModelFormatError

CHOICES = Path(__file__).resolve().parent.parent / "resources" / "backends.json"
#: What a faster system may lose against torch fp32 in P@1 and MAP (fractions, as the metrics are:
#: half a point) and still count as no loss.
TOLERANCE = 0.005
_NEEDS = {"onnx": "onnxruntime", "openvino": "openvino"}


def cpu_kind(flags: frozenset[str] | None = None) -> str:
    """What decides the speed of each backend here: ``amx``, ``avx512_bf16``, ``avx512_vnni``, ``avx2``
    or ``other``."""
    flags = cpu_info()[1] if flags is None else flags
    for kind, flag in (
        ("amx", "amx_bf16"),
        ("avx512_bf16", "avx512_bf16"),
        ("avx512_vnni", "avx512_vnni"),
        ("avx2", "avx2"),
    ):
        if flag in flags:
            return kind
    return "other"


def rank_systems(rows: Mapping[str, Mapping[str, float]], reference: str) -> list[str]:
    """Systems (``BACKEND:PRECISION``) within :data:`TOLERANCE` of ``reference`` on every metric
    given (``p@1``, ``map``), fastest first."""
    base = rows[reference]
    kept = [
        name
        for name, row in rows.items()
        if all(row[m] >= base[m] - TOLERANCE for m in ("p@1", "map") if m in base)
    ]
    return sorted(kept, key=lambda name: -rows[name]["pairs_per_second"])


def load_choices(path: Path | None = None) -> dict[str, Any]:
    """The measured choices per CPU kind (``resources/backends.json`` unless ``path``)."""
    path = path or CHOICES
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ModelFormatError(f"{path}: unreadable backend choices ({err})") from err


def measured_speeds(kind: str, path: Path | None = None) -> dict[str, float]:
    """Pairs per second of each system measured on CPU kind ``kind`` (empty if none was)."""
    rows = load_choices(path).get(kind, {}).get("rows", {})
    return {name: float(row["pairs_per_second"]) for name, row in rows.items() if "pairs_per_second" in row}


def auto_choices(precision: str, path: Path | None = None) -> list[tuple[str, str]]:
    """``(backend, precision)`` pairs to try for ``--backend auto`` on this CPU, best first: the
    measured ones whose backend is installed (only at ``precision`` unless it is ``auto``), then
    torch at ``precision`` as the fallback that always works."""
    measured: Sequence[str] = load_choices(path).get(cpu_kind(), {}).get("fastest_at_no_loss", [])
    found = []
    for system in measured:
        backend, _, at = system.partition(":")
        if precision not in ("auto", at):
            continue
        if backend == "torch" or importlib.util.find_spec(_NEEDS[backend]) is not None:
            found.append((backend, at))
    return [*found, ("torch", precision)]
