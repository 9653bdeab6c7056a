"""What the training loop consumes: an objective (the loss of a batch) and training data it can
batch (a token count per row, a collate of chosen rows), with the tokenized rows every recipe builds on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from torch import Tensor, nn

from sieveqa.batching import collate
from sieveqa.errors import DataFormatError
from sieveqa.features import Features

__all__ = ["Evaluate", "FeatureRows", "Objective", "PairTensors", "TrainData"]


class Objective(Protocol):
    """A training loss: given the model and a collated batch (with ``labels``), return a scalar."""

    def __call__(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor: ...


Evaluate = Callable[[nn.Module], dict[str, float]]


class TrainData(Protocol):
    """Training examples the loop can batch: a token count per row and a collate of chosen rows."""

    def __len__(self) -> int: ...

    @property
    def lengths(self) -> list[int]: ...

    def batch(self, rows: Sequence[int]) -> dict[str, Tensor]: ...


@dataclass
class FeatureRows:
    """Tokenized training rows; subclasses add their targets and say how rows become a batch."""

    features: Features

    def __len__(self) -> int:
        return len(self.features)

    @property
    def lengths(self) -> list[int]:
        return self.features.lengths


@dataclass
class PairTensors(FeatureRows):
    """(question, candidate) pairs with one target each: what the pair rankers train on."""

    labels: Tensor
    pad_id: int = 0

    def __post_init__(self) -> None:
        if len(self.features) != len(self.labels) or len(self.labels) == 0:
            raise DataFormatError(
                f"need one label per training pair, got {len(self.features)} pairs / "
                f"{len(self.labels)} labels"
            )

    def batch(self, rows: Sequence[int]) -> dict[str, Tensor]:
        return {**collate(self.features, rows, self.pad_id, bucketed=True), "labels": self.labels[rows]}
