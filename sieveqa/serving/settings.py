"""The service's settings: request limits and micro-batching (the ``sieveqa serve`` options come
from these fields; nothing heavy is imported here, so ``--help`` stays fast)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sieveqa.errors import ConfigError


@dataclass(frozen=True)
class Limits:
    """What one request may hold, and how many may wait."""

    max_texts: int = field(default=1000, metadata={"help": "texts per /rerank request (413 above)"})
    max_chars: int = field(default=20_000, metadata={"help": "characters per text or query (413 above)"})
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
