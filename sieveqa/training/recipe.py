"""What a training recipe is: how one technique samples labelled data from examples, tokenizes it for
a model, names its objective and scores a model on dev. Each technique's recipe is its own module
(``pairs``, ``cascade``, ``triplets``, ``easi``, ``peasi``, ``reader``, ``distill``);
``sieveqa.registry`` names the recipe of each technique and ``sieveqa.training.run`` runs any of them.
A recipe's options dataclass holds its own training settings, which the CLI turns into flags.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from sieveqa.data.records import RankingExample
from sieveqa.data.registry import load_datasets
from sieveqa.errors import ConfigError
from sieveqa.evaluation.metrics import METRICS, evaluate_scores, qrels_from_examples
from sieveqa.models.base import Ranker
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.training.batches import Objective, TrainData
from sieveqa.training.config import TrainConfig
from sieveqa.training.options import NoOptions

__all__ = ["NoOptions", "Recipe"]


class Recipe(ABC):
    """How one technique trains; ``options`` are its own settings (``options_class``)."""

    options_class: ClassVar[type] = NoOptions
    # The dev metric that picks the best checkpoint unless --metric says otherwise.
    default_metric: ClassVar[str] = "map"

    def __init__(self, options: Any = None) -> None:
        self.options = options if options is not None else self.options_class()

    def load(self, names: str | list[str]) -> list[Any]:
        """The examples of the named datasets (default: ranking datasets, ``sieveqa.data.registry``)."""
        return load_datasets(names)

    def check_dev(self, examples: Sequence[Any], name: str) -> None:
        """Refuse dev data ``evaluate`` cannot score (default: every candidate must be labelled)."""
        qrels_from_examples(examples, name)

    def prepare(self, model: EncoderModel) -> None:
        """Adjust a freshly initialised model before training (default: nothing)."""
        return None

    @abstractmethod
    def sample(self, examples: Sequence[RankingExample], config: TrainConfig, source: str) -> Any:
        """Labelled training data as texts (sized, so a checkpoint can be checked before tokenizing)."""

    def targets(self) -> list[list[float]]:
        """What the run learns from beside ``sample``, read by ``sample`` (default: nothing; a
        teacher's scores): part of the data a checkpoint is resumed with."""
        return []

    @abstractmethod
    def tensors(self, model: EncoderModel, sample: Any) -> TrainData:
        """The sample tokenized for ``model``."""

    @abstractmethod
    def objective(self, model: EncoderModel) -> Objective:
        """The loss the Trainer minimizes."""

    def evaluate(self, model: EncoderModel, dev: Sequence[RankingExample]) -> dict[str, float]:
        """Dev metrics that pick the best checkpoint (the model ranks the dev set)."""
        assert isinstance(model, Ranker)
        return evaluate_scores(dev, model.score(dev)).mean

    def metric_names(self, model: EncoderModel) -> list[str]:
        """The names ``evaluate`` reports for ``model``: what ``--metric`` may choose."""
        return list(METRICS)

    def check_metric(self, model: EncoderModel, metric: str) -> None:
        names = self.metric_names(model)
        if metric not in names:
            raise ConfigError(f"--metric must be one of {', '.join(names)} for this model, got {metric!r}")
