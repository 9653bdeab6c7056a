"""Every training recipe's own options (beside ``TrainConfig`` and the model's config): the one place
they are declared, apart from the recipes (which import torch), so that ``sieveqa train --help`` builds
its flags without loading them. A field's ``help`` becomes a ``train`` flag (per ``--arch``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sieveqa.errors import ConfigError

__all__ = [
    "WINDOWS",
    "CascadeOptions",
    "DistillOptions",
    "EasiOptions",
    "NoOptions",
    "PeasiOptions",
    "ReaderOptions",
    "TripletOptions",
]

WINDOWS = ("all", "one", "passage")


@dataclass
class NoOptions:
    """This recipe has no options of its own."""


@dataclass
class CascadeOptions:
    """Options of cascade training."""

    exit_sampling: str = field(
        default="random",
        metadata={"help": "cascade: 'random' (one exit per batch, the paper) or 'all' exits"},
    )

    def __post_init__(self) -> None:
        if self.exit_sampling not in ("random", "all"):
            raise ConfigError(f"exit_sampling must be 'random' or 'all', got {self.exit_sampling!r}")


@dataclass
class DistillOptions:
    """Who teaches each head, and the KD loss's balance and temperature (eq. 1)."""

    teachers: list[str] = field(
        default_factory=list,
        metadata={
            "help": "one per head: a teacher model (name or folder), embedder:BACKBONE, bm25, reader:NAME, "
            "or a teacher-scores .json.gz"
        },
    )
    alpha: float = field(default=0.5, metadata={"help": "KD: weight of the hard loss (1 - alpha: the soft)"})
    tau: float = field(default=3.0, metadata={"help": "KD: temperature of the softened distributions"})
    pool: str = field(
        default="",
        metadata={
            "help": "unlabelled pairs the heads also learn from, by the teachers' soft targets only: "
            "datasets (their labels unread) or pairs:FILE of {query, text} lines"
        },
    )
    pool_pairs: int | None = field(
        default=None,
        metadata={
            "help": "--pool: at most this many pairs, up to --max-negatives + 1 (default 21) of each "
            "question (default: as many as the labelled pairs)"
        },
    )

    def __post_init__(self) -> None:
        if not 0 <= self.alpha <= 1 or not self.tau > 0:
            raise ConfigError(f"--alpha must be in [0, 1] and --tau above 0, got {self.alpha}, {self.tau}")
        if self.pool_pairs is not None and self.pool_pairs < 1:
            raise ConfigError(f"--pool-pairs must be >= 1, got {self.pool_pairs}")


@dataclass
class EasiOptions:
    """Options of EASI training."""

    windows: str = field(
        default="all",
        metadata={"help": "easi: 'all' sentence windows with an answer, 'one' per passage, or 'passage'"},
    )
    passage_tokens: int = field(default=200, metadata={"help": "easi: tokens per training window"})

    def __post_init__(self) -> None:
        if self.windows not in WINDOWS:
            raise ConfigError(f"windows must be one of {', '.join(WINDOWS)}, got {self.windows!r}")
        if self.passage_tokens < 8:
            raise ConfigError(f"passage_tokens must be >= 8, got {self.passage_tokens}")


@dataclass
class PeasiOptions:
    """Options of multi-task PEASI training."""

    easi_init: str | None = field(
        default=None, metadata={"help": "peasi-*: a trained EASI to start EASI from"}
    )
    easi_weight: float = field(default=1.0, metadata={"help": "peasi-*: weight of EASI's loss beside PR's"})

    def __post_init__(self) -> None:
        if self.easi_weight < 0:
            raise ConfigError(f"easi_weight must be >= 0, got {self.easi_weight}")


@dataclass
class ReaderOptions:
    """Options of reader training."""

    passages: int = field(
        default=5, metadata={"help": "reader: top retrieved passages per training question"}
    )
    dev_passages: int = field(default=5, metadata={"help": "reader: top passages read per dev question"})
    early_weight: float = field(
        default=1.0,
        metadata={"help": "reader: the first exit's loss weight against the last's (1: all equal)"},
    )
    exit_distill: float = field(
        default=0.0,
        metadata={"help": "reader: weight of each exit's distillation from the last exit (0: none)"},
    )

    def __post_init__(self) -> None:
        if self.passages < 1 or self.dev_passages < 1:
            raise ConfigError(
                f"passages and dev_passages must be >= 1, got {self.passages}, {self.dev_passages}"
            )
        if self.early_weight <= 0 or self.exit_distill < 0:
            raise ConfigError(
                f"early_weight must be > 0 and exit_distill >= 0, got {self.early_weight} "
                f"and {self.exit_distill}"
            )


@dataclass
class TripletOptions:
    """Options of triplet training (HAS and its BERT baselines)."""

    negatives_per_positive: int = field(
        default=4, metadata={"help": "has/bert-*: triplets per positive answer (negatives drawn at random)"}
    )

    def __post_init__(self) -> None:
        if self.negatives_per_positive < 1:
            raise ConfigError(f"negatives_per_positive must be >= 1, got {self.negatives_per_positive}")
