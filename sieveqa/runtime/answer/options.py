"""Every answering method's options: the one place its settings are declared.

Each method's options dataclass lives here, apart from the method (which loads models): a field with a
``help`` becomes a flag of ``sieveqa answer``, ``eval-answers`` and ``serve`` and a key
``load_answerer`` takes, and building those flags (``--help``) must not wait for torch. A field's
``parse`` (metadata) checks a given value before any model loads. A method registers its options'
path beside its class (``registry.MethodSpec``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sieveqa.errors import ConfigError

__all__ = [
    "RATIOS",
    "AdaptiveOptions",
    "CascadeOptions",
    "MethodOptions",
    "PeasiAllOptions",
    "PeasiOptions",
    "PointwiseOptions",
    "ReaderOptions",
    "SkylineOptions",
    "TowerOptions",
    "fusion_option",
    "given_or",
    "judge_option",
    "parse_ratios",
    "ranker_option",
    "selector_option",
]

T = TypeVar("T")


@dataclass(frozen=True)
class MethodOptions:
    """The base of every method's options: fields with a ``help`` become its settings; a field's
    ``parse`` (metadata) checks a given value before any model loads."""


def judge_option() -> Any:
    """A method's ``judge`` field."""
    return field(
        default="peasi-judge",
        metadata={
            "help": "the passage reranker whose logit of each answer's passage says whether the documents "
            "answer (a signal the confidence reads; none: no such signal)"
        },
    )


_FUSION_HELP = "BM25 fused into the scores: none, interp:W or rrf:W"


def _parse_fusion(text: str) -> Any:
    from sieveqa.runtime.answer.fusion import Fusion  # (models and BM25: loaded when checked)

    return Fusion.parse(text)


def fusion_option(default: str) -> Any:
    """A method's ``fusion`` field, defaulting to ``default``."""
    return field(default=default, metadata={"help": _FUSION_HELP, "parse": _parse_fusion})


def ranker_option(default: str) -> Any:
    """A sentence method's ``ranker`` field."""
    return field(default=default, metadata={"help": "the sentence ranker (shipped name or folder)"})


#: ``drop_ratios``' field metadata (the field is ``field(default=None, metadata=RATIOS)``).
RATIOS = {
    "help": "when the ranker is a cascade: the share of candidates its exits drop, one α or one "
    "per exit but the last, e.g. 0.3 or 0.5,0.3,0,0 (default: its tuned ones)"
}


def parse_ratios(text: str | float | Sequence[float] | None) -> tuple[float, ...] | None:
    """``--drop-ratios``: ``0.3`` or ``0.5,0.3,0,0`` (numbers pass through; None: the saved ones)."""
    if text is None:
        return None
    if isinstance(text, int | float):
        return (float(text),)
    if not isinstance(text, str):
        return tuple(float(x) for x in text)
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(f"--drop-ratios must be numbers separated by commas, got {text!r}") from None


def selector_option() -> Any:
    """A method's ``selector`` field (EASI)."""
    return field(
        default=None, metadata={"help": "the EASI selector (default: the reranker's own, else peasi-easi)"}
    )


def given_or(flag: T | None, saved: T) -> T:
    """A flag's value where given, else the reader's saved choice."""
    return saved if flag is None else flag


@dataclass(frozen=True)
class PeasiAllOptions(MethodOptions):
    selector: str | None = selector_option()
    ranker: str = ranker_option("default")
    fusion: str = fusion_option("none")
    judge: str = judge_option()


@dataclass(frozen=True)
class PointwiseOptions(MethodOptions):
    ranker: str = ranker_option("default")
    fusion: str = fusion_option("interp:0.1")
    judge: str = judge_option()


@dataclass(frozen=True)
class CascadeOptions(PointwiseOptions):
    ranker: str = ranker_option("default-cascade")
    fusion: str = fusion_option("rrf:0.05")
    drop_ratios: list[float] | None = field(default=None, metadata=RATIOS)


@dataclass(frozen=True)
class PeasiOptions(MethodOptions):
    reranker: str = field(
        default="peasi-pr", metadata={"help": "the passage reranker (shipped name or folder)"}
    )
    selector: str | None = selector_option()
    fusion: str = fusion_option("none")
    drop_ratios: list[float] | None = field(default=None, metadata=RATIOS)
    read: int = field(default=3, metadata={"help": "passages EASI reads (the reranker's best)"})
    sentence_weight: float = field(
        default=1.0,
        metadata={"help": "weight of log P(sentence | passage) beside the passage's logit"},
    )
    second_look: int = field(
        default=3, metadata={"help": "best sentences the point-wise ranker re-reads alone (0: none)"}
    )
    look_ranker: str = field(default="default", metadata={"help": "the ranker of the second look"})
    look_weight: float = field(default=1.0, metadata={"help": "weight of the second look's logit"})
    bm25_weight: float = field(
        default=1.0,
        metadata={"help": "weight of the passage's BM25 (min-max over the retrieved) in the choice"},
    )
    sentence_bm25_weight: float = field(
        default=0.0,
        metadata={
            "help": "weight of the sentence's own BM25 (min-max over the sentences read) in the choice"
        },
    )
    heading: bool = field(
        default=False,
        metadata={"help": "the passage reranker reads each passage's title and section above it"},
    )
    judge: str = judge_option()

    def __post_init__(self) -> None:
        if self.read < 1 or self.second_look < 0:
            raise ConfigError(
                f"--read must be >= 1 and --second-look >= 0, got {self.read}, {self.second_look}"
            )
        if min(self.sentence_weight, self.look_weight, self.bm25_weight, self.sentence_bm25_weight) < 0:
            raise ConfigError(
                "--sentence-weight, --look-weight, --bm25-weight and --sentence-bm25-weight must be >= 0"
            )


@dataclass(frozen=True)
class ReaderOptions(MethodOptions):
    reader: str = field(
        default="reader",
        metadata={"help": "the reader model: the shipped 'reader' or a folder (sieveqa train --arch reader)"},
    )
    has_weight: float | None = field(
        default=None,
        metadata={
            "help": "weight of log P(has answer) beside the span's log-probability when choosing among "
            "passages (default: the reader's dev-chosen one, else 1)"
        },
    )
    judge: str = judge_option()

    def __post_init__(self) -> None:
        # Values given are checked as the schedule checks them, before any model loads.
        from sieveqa.runtime.answer.schedulers import Schedule

        Schedule(
            "skyline",
            budget=given_or(getattr(self, "budget", None), 1.0),
            threshold=given_or(getattr(self, "threshold", None), 0.9),
            m=getattr(self, "m", None),
            has_weight=given_or(self.has_weight, 1.0),
        )


@dataclass(frozen=True)
class AdaptiveOptions(ReaderOptions):
    m: int | None = field(
        default=None,
        metadata={"help": "passages kept for the answer (default: the reader's dev-chosen number)"},
    )


@dataclass(frozen=True)
class TowerOptions(AdaptiveOptions):
    threshold: float | None = field(
        default=None,
        metadata={"help": "stop reading a passage at this P(no answer) (default: the reader's, else 0.9)"},
    )


@dataclass(frozen=True)
class SkylineOptions(AdaptiveOptions):
    budget: float | None = field(
        default=None, metadata={"help": "layers per passage to spend (default: the reader's, else 2)"}
    )
    scheduler: str | None = field(
        default=None,
        metadata={
            "help": "a learned policy folder (sieveqa train-scheduler), 'learned' for the reader's own, "
            "'none' for calibrated probabilities (default: the reader's own where dev preferred it)"
        },
    )
