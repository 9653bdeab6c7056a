"""The one training loop, its configuration, objectives and the recipe of each technique."""

from sieveqa.training.cascade import retrofit_cascade
from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import PointwiseBCE
from sieveqa.training.recipe import Recipe
from sieveqa.training.run import train_model
from sieveqa.training.trainer import Trainer

__all__ = ["PointwiseBCE", "Recipe", "TrainConfig", "Trainer", "retrofit_cascade", "train_model"]
