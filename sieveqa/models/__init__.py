"""Models: one file per technique, all on the steppable encoder, saved and loaded by kind. Names are
imported on first use, so reading a config class (``train --help``) loads no model."""

from __future__ import annotations

from sieveqa.lazy import lazy_getattr

_EXPORTS = {
    "RankResult": "sieveqa.models.base",
    "Ranker": "sieveqa.models.base",
    "CascadeTransformer": "sieveqa.models.cascade",
    "CrossEncoder": "sieveqa.models.cross_encoder",
    "EasiModel": "sieveqa.models.easi",
    "SentenceEmbedder": "sieveqa.models.embedder",
    "EncoderModel": "sieveqa.models.encoder_model",
    "HashingModel": "sieveqa.models.hashing",
    "ClassifierHead": "sieveqa.models.heads",
    "PairModel": "sieveqa.models.pair_model",
    "PeasiModel": "sieveqa.models.peasi",
    "load_model": "sieveqa.models.zoo",
    "CascadeConfig": "sieveqa.models.configs",
    "CrossEncoderConfig": "sieveqa.models.configs",
    "EasiConfig": "sieveqa.models.configs",
    "HashingConfig": "sieveqa.models.configs",
    "ModelConfig": "sieveqa.models.configs",
    "PeasiConfig": "sieveqa.models.configs",
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr("sieveqa.models", _EXPORTS)
