"""The one training loop, its configuration, objectives and the recipe of each technique. Names are
imported on first use, so a command that only reads a settings dataclass (``train --help``) loads
neither torch nor the models."""

from __future__ import annotations

from sieveqa.lazy import lazy_getattr

_EXPORTS = {
    "PointwiseBCE": "sieveqa.training.objectives",
    "Recipe": "sieveqa.training.recipe",
    "TrainConfig": "sieveqa.training.config",
    "Trainer": "sieveqa.training.trainer",
    "retrofit_cascade": "sieveqa.training.cascade",
    "train_model": "sieveqa.training.run",
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr("sieveqa.training", _EXPORTS)
