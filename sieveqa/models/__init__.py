"""Rankers: one file per technique, all on the steppable encoder."""

from sieveqa.models.base import Ranker
from sieveqa.models.cross_encoder import CrossEncoder, CrossEncoderConfig

__all__ = ["CrossEncoder", "CrossEncoderConfig", "Ranker"]
