"""The one training loop, its configuration, objectives and recipes."""

from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import PointwiseBCE
from sieveqa.training.trainer import Trainer

__all__ = ["PointwiseBCE", "TrainConfig", "Trainer"]
