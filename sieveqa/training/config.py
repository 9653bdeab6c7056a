"""Training configuration (a dataclass with help text; the CLI builds its options from it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sieveqa.device import DEVICES
from sieveqa.errors import ConfigError

#: Precisions a run may train in (fp16 would need loss scaling; int8 is for inference only).
TRAIN_PRECISIONS = ("auto", "fp32", "bf16")


@dataclass
class TrainConfig:
    """How to train a ranker: optimisation, data sampling, evaluation, checkpoints, device."""

    epochs: float = field(
        default=1.0, metadata={"help": "passes over the training pairs (fractions allowed)"}
    )
    batch_size: int = field(default=32, metadata={"help": "pairs per forward pass"})
    grad_accum: int = field(default=1, metadata={"help": "forward passes per optimizer step"})
    lr: float = field(default=3e-5, metadata={"help": "peak learning rate of AdamW"})
    weight_decay: float = field(
        default=0.01, metadata={"help": "AdamW weight decay (not on biases/LayerNorm)"}
    )
    warmup_ratio: float = field(default=0.1, metadata={"help": "share of steps with linear warm-up"})
    max_grad_norm: float = field(default=1.0, metadata={"help": "gradient clipping norm"})
    seed: int = field(default=42, metadata={"help": "seed for sampling, shuffling and dropout"})
    max_negatives: int | None = field(
        default=None, metadata={"help": "keep at most this many negatives per question (sampled)"}
    )
    max_pairs: int | None = field(
        default=None, metadata={"help": "cap on training pairs (or triplets), sampled by question"}
    )
    eval_every: int = field(
        default=0, metadata={"help": "also evaluate on dev every N optimizer steps (0: per epoch)"}
    )
    eval_at_start: bool = field(
        default=False,
        metadata={"help": "also evaluate on dev before the first step (where the model starts from)"},
    )
    low_rank: int | None = field(
        default=None,
        metadata={
            "help": "train the body as rank-R changes of its matrices (LoRA; heads whole): no full weight "
            "gradients, checkpoints and models of a few MB (saved in the low-rank format); a saved model "
            "to start from is refactored at rank R"
        },
    )
    checkpoint_every: int = field(
        default=200, metadata={"help": "write a resumable checkpoint every N steps"}
    )
    metric: str | None = field(
        default=None,
        metadata={"help": "dev metric that picks the best checkpoint (default: map; em for readers)"},
    )
    device: str = field(default="auto", metadata={"help": "auto (CUDA if available), cpu or cuda"})
    precision: str = field(
        default="auto",
        metadata={
            "help": "auto (bf16 autocast on a GPU or a CPU with native bf16, where it measured 2.3x "
            "faster than fp32; fp32 elsewhere), fp32 or bf16"
        },
    )
    progress: bool = field(default=True, metadata={"help": "show progress bars"})
    stop_after: int = field(
        default=0,
        metadata={
            "help": "pause the run at this optimizer step, checkpointed (0: never); the schedule "
            "still spans the whole run, and the same command with a later (or no) stop continues it"
        },
    )

    def __post_init__(self) -> None:
        checks = {  # name: (whether it holds, what it must be)
            "epochs": (self.epochs > 0, "above 0"),
            "batch_size": (self.batch_size >= 1, ">= 1"),
            "grad_accum": (self.grad_accum >= 1, ">= 1"),
            "lr": (self.lr > 0, "above 0"),
            "warmup_ratio": (0 <= self.warmup_ratio < 1, "in [0, 1)"),
            "checkpoint_every": (self.checkpoint_every >= 1, ">= 1"),
            "eval_every": (self.eval_every >= 0, ">= 0"),
            "device": (self.device in DEVICES, f"one of {', '.join(DEVICES)}"),
            "precision": (self.precision in TRAIN_PRECISIONS, f"one of {', '.join(TRAIN_PRECISIONS)}"),
            "weight_decay": (self.weight_decay >= 0, ">= 0"),
            "max_grad_norm": (self.max_grad_norm > 0, "above 0"),
            "max_negatives": (self.max_negatives is None or self.max_negatives >= 0, ">= 0"),
            "max_pairs": (self.max_pairs is None or self.max_pairs >= 1, ">= 1"),
            "stop_after": (self.stop_after >= 0, ">= 0"),
            "low_rank": (self.low_rank is None or self.low_rank >= 1, ">= 1"),
        }
        bad = [(name, must) for name, (ok, must) in checks.items() if not ok]
        if bad:
            said = "; ".join(f"--{n.replace('_', '-')} {getattr(self, n)!r} (must be {m})" for n, m in bad)
            raise ConfigError(f"invalid {said}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
