"""Offline pretrained encoders, by name.

``load_backbone("minilm-l6")`` returns a Hugging Face encoder and its tokenizer without touching the
network. Names resolve through :data:`REGISTRY`; any local Hugging Face folder works too.
"""

from sieveqa.backbones import _mpnet, _onnx_minilm  # noqa: F401  (register on import)
from sieveqa.backbones._registry import (
    REGISTRY,
    Backbone,
    BackboneSpec,
    backbone_status,
    hf_head,
    load_backbone,
    quiet_transformers,
    register,
    tokenizer_dir,
)

__all__ = [
    "REGISTRY",
    "Backbone",
    "BackboneSpec",
    "backbone_status",
    "hf_head",
    "load_backbone",
    "quiet_transformers",
    "register",
    "tokenizer_dir",
]
