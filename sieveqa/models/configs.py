"""Every model's configuration: its architecture and input settings, the one place they are declared.

The config classes live apart from the models (which import torch and the backbones), so that
``sieveqa train --help`` builds its model flags without loading them; each model module imports its
own from here. A field's ``help`` becomes a ``train`` flag (per ``--arch``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Self

from sieveqa.errors import ConfigError

__all__ = [
    "POOLINGS",
    "SELECTORS",
    "SHARING",
    "VARIANTS",
    "CascadeConfig",
    "Composition",
    "CrossEncoderConfig",
    "EasiConfig",
    "EmbedderConfig",
    "HashingConfig",
    "ModelConfig",
    "MultiHeadConfig",
    "PeasiConfig",
    "ReaderConfig",
    "StoreKind",
]

POOLINGS = ("cls", "mean")
SELECTORS = ("pooled", "slots")
SHARING = ("mtl0", "mtl1", "concat")
Composition = Literal["attention", "pooling"]
StoreKind = Literal["bits", "float", "vector"]

VARIANTS: dict[str, tuple[Composition, bool]] = {
    "has": ("attention", True),
    "bert-attention": ("attention", False),
    "bert-pooling": ("pooling", False),
}


@dataclass
class ModelConfig:
    """Backbone and input settings every model has."""

    backbone: str = field(default="minilm-l6", metadata={"help": "backbone name or Hugging Face folder"})
    max_length: int = field(
        default=128, metadata={"help": "tokens per input: a (question, candidate) pair, or an answer"}
    )
    num_layers: int | None = field(
        default=None, metadata={"help": "keep only the backbone's first N layers (None: all)"}
    )
    dropout: float = field(default=0.1, metadata={"help": "dropout inside the scoring head(s)"})
    freeze_word_embeddings: bool = field(
        default=True, metadata={"help": "keep the base word embeddings (smaller saved model, faster steps)"}
    )
    train_layers: int | None = field(
        default=None,
        metadata={
            "help": "train only the top N layers; the rest stay the base's and are not saved (None: all)"
        },
    )

    def __post_init__(self) -> None:
        checks = {
            "max_length": self.max_length >= 8,
            "num_layers": self.num_layers is None or self.num_layers >= 1,
            "train_layers": self.train_layers is None or self.train_layers >= 1,
            "dropout": 0 <= self.dropout < 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ConfigError(
                f"{type(self).__name__}: invalid {', '.join(f'{b}={getattr(self, b)!r}' for b in bad)}"
            )

    @classmethod
    def for_arch(cls, arch: str, **settings: Any) -> Self:
        """The config an ``--arch`` name stands for (one class may serve several names)."""
        return cls(**settings)


@dataclass
class CrossEncoderConfig(ModelConfig):
    """Architecture of a cross-encoder ranker."""

    pooling: str = field(default="cls", metadata={"help": "head input: 'cls' token or 'mean' of tokens"})
    classifier_layers: int = field(
        default=1,
        metadata={"help": "the head's linear layers (2: Hugging Face's dense + activation + classifier)"},
    )
    classifier_activation: str = field(
        default="tanh", metadata={"help": "between the head's layers: tanh or gelu"}
    )


@dataclass
class CascadeConfig(ModelConfig):
    """Architecture of a cascade."""

    exits: list[int] | None = field(
        default=None, metadata={"help": "layers with a classifier, e.g. 2,3,4,5,6 (None: the paper's rule)"}
    )
    pooling: str = field(
        default="mean", metadata={"help": "exit input: 'mean' of all token states (paper) or 'cls'"}
    )
    head_layers: int = field(
        default=3, metadata={"help": "linear layers per exit head (3: the paper's tanh feed-forward)"}
    )
    final_pooling: str | None = field(
        default=None, metadata={"help": "pooling of the last exit if it differs (a retrofitted head)"}
    )
    final_head_layers: int | None = field(
        default=None, metadata={"help": "linear layers of the last exit head if it differs"}
    )
    final_head_activation: str = field(
        default="tanh", metadata={"help": "the last exit head's activation (a retrofitted ELECTRA's: gelu)"}
    )


@dataclass
class EasiConfig(ModelConfig):
    """Architecture of an EASI sentence selector."""

    max_length: int = field(default=256, metadata={"help": "tokens per input: question and passage"})
    selector: str = field(
        default="pooled",
        metadata={"help": "easi: 'slots' (first token, k outputs) or 'pooled' (per sentence)"},
    )
    slots: int = field(default=16, metadata={"help": "easi slots: sentences per window (k)"})
    stride: int | None = field(
        default=None, metadata={"help": "easi: tokens shared by windows of a long passage (max_length/4)"}
    )
    null: bool = field(
        default=False, metadata={"help": "easi: also score 'no sentence here answers' (SQuAD 2.0's null)"}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.selector not in SELECTORS:
            raise ConfigError(f"selector must be one of {', '.join(SELECTORS)}, got {self.selector!r}")
        if self.slots < 1:
            raise ConfigError(f"slots must be >= 1, got {self.slots}")
        if not 0 <= self.window_stride <= self.max_length // 4:
            raise ConfigError(
                f"stride must be in 0..{self.max_length // 4} (a quarter of max_length), got {self.stride}"
            )

    @property
    def window_stride(self) -> int:
        return self.max_length // 4 if self.stride is None else self.stride


@dataclass
class PeasiConfig(EasiConfig):
    """Architecture of a multi-task PR + EASI model."""

    sharing: str = field(
        default="concat", metadata={"help": "peasi: mtl0 (one body), mtl1 (two bodies), concat (PR ⊕ EASI)"}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sharing not in SHARING:
            raise ConfigError(f"sharing must be one of {', '.join(SHARING)}, got {self.sharing!r}")
        if self.null:
            raise ConfigError("null is EASI's own option (--arch easi); PEASI's multi-task models have none")

    @classmethod
    def for_arch(cls, arch: str, **settings: Any) -> Self:
        return cls(**{**settings, "sharing": arch.removeprefix("peasi-")})


@dataclass
class EmbedderConfig(ModelConfig):
    """The embedder's backbone and input length."""

    max_length: int = field(default=256, metadata={"help": "tokens per text (longer texts are truncated)"})


@dataclass
class HashingConfig(ModelConfig):
    """HAS and its baselines; ``max_length`` bounds an answer, ``question_max_length`` a question."""

    composition: Composition = field(
        default="attention", metadata={"help": "answer composition: attention (on u_q) or pooling"}
    )
    hashing: bool = field(default=True, metadata={"help": "binary answer matrices (HAS); off: floats"})
    beta: float = field(default=5.0, metadata={"help": "β in tanh(βV), the training-time hashing layer"})
    delta: float = field(default=1e-6, metadata={"help": "δ, weight of the ‖B − sign(B)‖² constraint"})
    attention_hidden: int = field(default=128, metadata={"help": "M, the attention's hidden size"})
    pooling: str = field(default="max", metadata={"help": "question pooling (and answers' for pooling)"})
    question_max_length: int = field(default=64, metadata={"help": "tokens per question"})
    margin: float = field(default=0.1, metadata={"help": "triplet hinge margin"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.composition not in ("attention", "pooling"):
            raise ConfigError(f"composition must be 'attention' or 'pooling', got {self.composition!r}")
        if self.hashing and self.composition != "attention":
            raise ConfigError("hashing is defined for attention composition (HAS); use hashing=False")
        if self.pooling not in ("max", "mean"):
            raise ConfigError(f"pooling must be 'max' or 'mean', got {self.pooling!r}")
        if self.beta <= 0 or self.delta < 0 or self.attention_hidden < 1:
            raise ConfigError(
                f"need beta > 0, delta >= 0, attention_hidden >= 1; got {self.beta}, {self.delta}, "
                f"{self.attention_hidden}"
            )

    @classmethod
    def variant(cls, name: str, **kwargs: Any) -> HashingConfig:
        """The config of one of the paper's models: ``has``, ``bert-attention`` or ``bert-pooling``."""
        if name not in VARIANTS:
            raise ConfigError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
        composition, hashing = VARIANTS[name]
        return cls(composition=composition, hashing=hashing, **kwargs)

    @classmethod
    def for_arch(cls, arch: str, **settings: Any) -> Self:
        return cls.variant(arch, **settings)  # type: ignore[return-value]

    @property
    def store_kind(self) -> StoreKind:
        """What an answer store keeps for this model: bit matrices, float matrices or vectors."""
        if self.composition == "pooling":
            return "vector"
        return "bits" if self.hashing else "float"


@dataclass
class MultiHeadConfig(ModelConfig):
    """Architecture of a multi-head student ``B_b kH_h``."""

    heads: int = field(default=3, metadata={"help": "k: ranking heads (one per teacher)"})
    head_depth: int = field(
        default=1, metadata={"help": "h: top transformer layers each head has its own copy of"}
    )
    body_depth: int | None = field(
        default=None, metadata={"help": "b: shared layers (None: the backbone's depth minus h)"}
    )
    pooling: str = field(default="cls", metadata={"help": "head input: 'cls' token or 'mean' of tokens"})
    head_weights: list[float] | None = field(
        default=None,
        metadata={
            "help": "each head's weight in the student's score and in its training loss, one per head "
            "(eq. 4's lambda; none: all alike, the paper's mean)"
        },
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.heads < 1 or self.head_depth < 1 or (self.body_depth is not None and self.body_depth < 1):
            raise ConfigError(
                f"MultiHeadConfig: needs k >= 1 heads of h >= 1 layers over b >= 1 body layers, got "
                f"k={self.heads}, h={self.head_depth}, b={self.body_depth}"
            )
        weights = self.head_weights
        if weights is not None and (
            len(weights) != self.heads
            or not all(math.isfinite(w) and w >= 0 for w in weights)
            or not max(weights) > 0
        ):
            raise ConfigError(
                f"--head-weights: one finite weight >= 0 per head ({self.heads}), not all 0; got {weights}"
            )

    def normalised_weights(self) -> list[float]:
        """The heads' weights summing to 1 (alike when none are given)."""
        weights = self.head_weights or [1.0] * self.heads
        scaled = [w / max(weights) for w in weights]  # no overflow in the sum (1e308, 1e308)
        return [w / sum(scaled) for w in scaled]

    @property
    def name(self) -> str:
        """The paper's notation, e.g. ``B5 3H1``."""
        return f"B{self.body_depth} {self.heads}H{self.head_depth}"


@dataclass
class ReaderConfig(ModelConfig):
    """Architecture of the anytime reader."""

    max_length: int = field(default=200, metadata={"help": "tokens per (question, passage) window"})
    exits: list[int] | None = field(
        default=None, metadata={"help": "layers with span and has-answer heads (None: every layer)"}
    )
    stride: int | None = field(
        default=None,
        metadata={"help": "tokens shared by consecutive windows of a long passage (default: max_length / 4)"},
    )
    max_answer_tokens: int = field(default=30, metadata={"help": "longest answer span, in tokens"})
    has_answer_layers: int = field(default=2, metadata={"help": "linear layers of the has-answer MLP"})
    has_answer_pooling: str = field(
        default="cls", metadata={"help": "what the has-answer MLP reads: the cls state or the tokens' mean"}
    )
    temperatures: list[float] | None = field(
        default=None, metadata={"help": "per-exit has-answer temperatures (set by calibration)"}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.stride is not None and not 0 <= self.stride < self.max_length // 2:
            raise ConfigError(
                f"ReaderConfig: stride must be in 0..{self.max_length // 2 - 1} (below half of max_length), "
                f"got {self.stride}"
            )
        if self.max_answer_tokens < 1:
            raise ConfigError(f"ReaderConfig: max_answer_tokens must be >= 1, got {self.max_answer_tokens}")
        if self.has_answer_pooling not in POOLINGS:
            raise ConfigError(
                f"ReaderConfig: has_answer_pooling must be one of {', '.join(POOLINGS)}, "
                f"got {self.has_answer_pooling!r}"
            )
