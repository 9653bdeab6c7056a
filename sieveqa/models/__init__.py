"""Rankers: one file per technique, all on the steppable encoder."""

from sieveqa.models.base import Ranker
from sieveqa.models.cascade import CascadeConfig, CascadeTransformer
from sieveqa.models.cross_encoder import CrossEncoder, CrossEncoderConfig
from sieveqa.models.hashing import HashingConfig, HashingModel
from sieveqa.models.zoo import load_model

__all__ = [
    "CascadeConfig",
    "CascadeTransformer",
    "CrossEncoder",
    "CrossEncoderConfig",
    "HashingConfig",
    "HashingModel",
    "Ranker",
    "load_model",
]
