"""The service's settings: request limits and micro-batching (the ``sieveqa serve`` options come
from these fields; nothing heavy is imported here, so ``--help`` stays fast), and the heap's: the
glibc settings a service starts with (``sieveqa serve --heap``).

A service that answers RAG clients frees blocks of every size (activations of ever new shapes, large
request bodies); glibc keeps freed memory for reuse, and the process's RSS can creep. ``malloc_trim``
every few seconds (the model thread does) gives back what sits free at the heap's top; the settings
here decide how much stays elsewhere. Their cost is CPU: a fixed low mmap threshold maps and zeroes
every large block afresh (15x the page faults of a batch). docs/RESULTS.md (issue 64, "The heap
settings, measured") has the soak and the CPU per request behind the default.

Applied where a service starts (the ``serve`` command, a Ray Serve replica), before its models load;
nothing else in a process changes its heap.
"""

from __future__ import annotations

import ctypes
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from sieveqa.errors import ConfigError


@dataclass(frozen=True)
class Limits:
    """What one request may hold, and how many may wait."""

    max_texts: int = field(default=1000, metadata={"help": "texts per /rerank request (413 above)"})
    max_chars: int = field(default=20_000, metadata={"help": "characters per text or query (413 above)"})
    # (20,000: as `sieveqa answer` and load_answerer take a question, answerer.MAX_QUESTION_CHARS)
    max_body_bytes: int = field(default=4 * 2**20, metadata={"help": "request body size (413 above)"})
    max_queue: int = field(default=512, metadata={"help": "requests waiting for the model (429 above)"})
    timeout_s: float = field(
        default=25.0,
        metadata={"help": "seconds a request may wait and run (503 after); --max-texts is fitted to it"},
    )
    result_cache_mb: float = field(
        default=32.0, metadata={"help": "MB of recent /rerank results kept for a client's retry (0: none)"}
    )

    def __post_init__(self) -> None:
        floors = {name: 0 if name == "result_cache_mb" else 1 for name in vars(self)}
        bad = [
            f"{name} is not a number" if math.isnan(v) else f"{name} must be >= {floors[name]}"
            for name, v in vars(self).items()
            if not v >= floors[name]  # (a NaN is not >= anything)
        ]
        if bad:
            raise ConfigError(", ".join(bad))


@dataclass(frozen=True)
class Batching:
    """How concurrent /rerank requests are packed into forward passes."""

    max_tokens: int = field(default=32768, metadata={"help": "tokens per micro-batch"})
    max_wait_ms: float = field(
        default=10.0, metadata={"help": "under concurrency, the longest a batch waits for more requests"}
    )

    def __post_init__(self) -> None:
        if self.max_tokens < 1 or self.max_wait_ms < 0:
            raise ConfigError(f"max_tokens must be >= 1 and max_wait_ms >= 0, got {self}")


#: malloc.h's ``mallopt`` parameters.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8

#: The settings by name: ``glibc`` leaves glibc's own (a dynamic mmap threshold that rises to the
#: largest block freed, up to 32 MB); ``fixed`` fixes the mmap threshold at 256 KiB (larger blocks are
#: mapped afresh and given back whole), gives back free space past 1 MiB at the heap's top at once and
#: lets the threads share two arenas: flatter memory for 1.85x the CPU a /rerank request.
HEAP_SETTINGS: dict[str, dict[int, int]] = {
    "glibc": {},
    "fixed": {M_TRIM_THRESHOLD: 1 << 20, M_MMAP_THRESHOLD: 256 << 10, M_ARENA_MAX: 2},
}
#: What ``sieveqa serve`` starts with unless ``--heap`` says otherwise: the soak's memory stays within
#: its bound with glibc's own settings and the model thread's trimming.
DEFAULT_HEAP = "glibc"


@functools.cache
def _mallopt() -> Callable[[int, int], int] | None:
    try:
        return ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return None


def check_heap(name: str) -> str:
    """``name`` if it is one of :data:`HEAP_SETTINGS`, else a :class:`ConfigError` naming them."""
    if name not in HEAP_SETTINGS:
        raise ConfigError(f"--heap {name!r}: must be one of {', '.join(HEAP_SETTINGS)}")
    return name


def configure_heap(name: str) -> bool:
    """Make the process's heap settings ``name``; False where the C library is not glibc (nothing is
    changed). Settings already made stay unless ``name`` sets them again: a process takes one."""
    settings = HEAP_SETTINGS[check_heap(name)]
    mallopt = _mallopt()
    if mallopt is None:
        return False
    for parameter, value in settings.items():
        mallopt(parameter, value)
    return True
