"""How a whole-store search finds its answers: the settings ``rank --store`` takes as flags, kept apart
from the ranker so that reading them (the command line builds its flags from them) loads no model."""

from __future__ import annotations

from dataclasses import dataclass, field

from sieveqa.errors import ConfigError

__all__ = ["FIRST_STAGES", "SIGNALS", "SearchSettings"]

#: What each first stage searches in a store (``index build --vector-index`` / ``--bm25``).
SIGNALS = {"vector": ("vector",), "bm25": ("bm25",), "rrf": ("vector", "bm25"), "mix": ("vector", "bm25")}
FIRST_STAGES = (*SIGNALS, "none")


@dataclass(frozen=True)
class SearchSettings:
    """How a whole-store search finds its answers (defaults chosen on dev: docs/RESULTS.md)."""

    first_stage: str = field(
        default="vector",
        metadata={"help": "vector (pooled bits in FAISS), bm25, rrf or mix (both fused), none (full scan)"},
    )
    k: int = field(default=50, metadata={"help": "answers the first stage passes to HAS"})
    mix_weight: float = field(
        default=0.7, metadata={"help": "mix: weight of the vector scores (BM25: 1 − it; 0.7 best on dev)"}
    )
    nprobe: int | None = field(
        default=None, metadata={"help": "IVF stores: inverted lists searched (default: a quarter of them)"}
    )

    def __post_init__(self) -> None:
        if self.first_stage not in FIRST_STAGES:
            raise ConfigError(
                f"--first-stage must be one of {', '.join(FIRST_STAGES)}, got {self.first_stage!r}"
            )
        if self.k < 1 or (self.nprobe is not None and self.nprobe < 1) or not 0 <= self.mix_weight <= 1:
            raise ConfigError(
                f"need --k >= 1, --nprobe >= 1 and 0 <= --mix-weight <= 1; got {self.k}, {self.nprobe}, "
                f"{self.mix_weight}"
            )
