"""Models: one file per technique, all on the steppable encoder, saved and loaded by kind."""

from sieveqa.models.base import Ranker, RankResult
from sieveqa.models.cascade import CascadeConfig, CascadeTransformer
from sieveqa.models.cross_encoder import CrossEncoder, CrossEncoderConfig
from sieveqa.models.easi import EasiConfig, EasiModel
from sieveqa.models.embedder import SentenceEmbedder
from sieveqa.models.encoder_model import EncoderModel, ModelConfig
from sieveqa.models.hashing import HashingConfig, HashingModel
from sieveqa.models.heads import ClassifierHead
from sieveqa.models.pair_model import PairModel
from sieveqa.models.peasi import PeasiConfig, PeasiModel
from sieveqa.models.zoo import load_model

__all__ = [
    "CascadeConfig",
    "CascadeTransformer",
    "ClassifierHead",
    "CrossEncoder",
    "CrossEncoderConfig",
    "EasiConfig",
    "EasiModel",
    "EncoderModel",
    "HashingConfig",
    "HashingModel",
    "ModelConfig",
    "PairModel",
    "PeasiConfig",
    "PeasiModel",
    "RankResult",
    "Ranker",
    "SentenceEmbedder",
    "load_model",
]
