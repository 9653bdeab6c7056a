"""Cross-encoders trained elsewhere: a Hugging Face sequence-classification folder as a sieveqa ranker.

``load_model("path/to/folder")`` on a folder that ``transformers``' ``save_pretrained`` (or
sentence-transformers' ``CrossEncoder.save``) wrote gives a
:class:`~sieveqa.models.cross_encoder.CrossEncoder` (built from :func:`read_foreign`) over the
folder's own body, so everything a sieveqa
ranker has works on it: layer-by-layer running, exported backends, a retrofit cascade over its body,
the service. The head stays the model's own: the first token through ``dense``, the activation (tanh;
ELECTRA's gelu) and the classifier, which is sieveqa's two-layer
:class:`~sieveqa.models.heads.ClassifierHead`. A two-label classifier (not relevant / relevant) becomes
one logit, the difference of the two: its sigmoid is the softmax's "relevant".

Bodies: BERT (MiniLM included), ELECTRA, RoBERTa, XLM-RoBERTa and MPNet, whose layers take hidden
states and a mask and nothing else; any other is refused in one line saying so. ``max_length`` is the
model's own (its tokenizer's limit, within its position embeddings).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from sieveqa.backbones import Backbone, hf_head, quiet_transformers
from sieveqa.errors import ModelFormatError
from sieveqa.models._saving import hf_config

__all__ = ["BODIES", "Foreign", "positions", "read_foreign", "refusal"]

#: The body types whose sequence classifier sieveqa takes in, and their head's activation.
BODIES = {"bert": "tanh", "electra": "gelu", "roberta": "tanh", "xlm-roberta": "tanh", "mpnet": "tanh"}


#: The files a Hugging Face tokenizer is read from (one is enough).
_TOKENIZER_FILES = (
    "tokenizer.json", "vocab.txt", "vocab.json", "sentencepiece.bpe.model", "spiece.model", "tokenizer.model"
)  # fmt: skip


def _labels(config: dict[str, Any]) -> int:
    id2label = config.get("id2label")
    return len(id2label) if isinstance(id2label, dict) and id2label else int(config.get("num_labels", 2))


def refusal(config: dict[str, Any]) -> str | None:
    """Why a Hugging Face model with ``config`` cannot be a sieveqa ranker, or None when it can."""
    body, archs = config.get("model_type"), config.get("architectures") or []
    if not any(str(a).endswith("ForSequenceClassification") for a in archs):
        what = ", ".join(map(str, archs)) or f"{body} model"
        return f"a {what}, not a sequence classifier (a cross-encoder scores a (query, text) pair)"
    if body not in BODIES:
        return (
            f"a {body} cross-encoder: sieveqa runs {', '.join(BODIES)} bodies layer by layer, whose "
            "layers take hidden states and a mask alone"
        )
    if _labels(config) not in (1, 2):
        return f"{_labels(config)} labels: a ranker needs one relevance score (1 label, or 2: no / yes)"
    return None


def _max_length(tokenizer: Any, positions: int) -> int:
    limit = getattr(tokenizer, "model_max_length", None)
    return positions if not isinstance(limit, int) or limit > positions else max(limit, 8)


@dataclass
class Foreign:
    """What a Hugging Face cross-encoder folder holds, in the terms of sieveqa's cross-encoder: its body
    (a Backbone), the settings of its head and ``max_length``, and the head's weights (``dense``, the
    one-logit ``output``)."""

    backbone: Backbone
    settings: dict[str, Any]
    dense: dict[str, torch.Tensor]
    output: dict[str, torch.Tensor]
    about: dict[str, Any]


def positions(body: Any) -> int:
    """How many tokens ``body``'s position embeddings take (RoBERTa-style ones start after padding)."""
    return int(body.config.max_position_embeddings) - (getattr(body.embeddings, "padding_idx", -1) + 1)


def read_foreign(path: Path) -> Foreign:
    """Read the Hugging Face cross-encoder in ``path`` (fp32); a folder that cannot be a sieveqa ranker
    is a ModelFormatError naming it and why."""
    from safetensors import SafetensorError
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    config = hf_config(path)
    if config is None:
        raise ModelFormatError(f"{path}: not a Hugging Face model folder (no readable config.json)")
    reason = refusal(config)
    if reason is not None:
        raise ModelFormatError(f"{path}: {reason}")
    path = path.resolve()  # what a cascade over it records, so it loads from anywhere
    if not any((path / name).is_file() for name in _TOKENIZER_FILES):
        # transformers would load a tokenizer of nothing and read every word as [UNK]
        raise ModelFormatError(f"{path}: no tokenizer in it (none of {', '.join(_TOKENIZER_FILES)})")
    try:
        with quiet_transformers():
            hf, info = AutoModelForSequenceClassification.from_pretrained(
                path, local_files_only=True, dtype=torch.float32, output_loading_info=True
            )
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, RuntimeError, SafetensorError) as err:
        # a truncated or garbled weights file (SafetensorError), weights that do not fit the config
        # (RuntimeError), a config transformers refuses (ValueError), a file it cannot read (OSError)
        why = str(err).split("\n")[0]
        if "mismatched" in why:  # transformers' own report of which tensors went to its log
            why = "its weights' shapes do not fit the sizes its config.json gives"
        raise ModelFormatError(f"{path}: transformers cannot load it ({why})") from None
    if info.get("missing_keys"):  # transformers would start them at random, and say so only in a log
        missing = sorted(info["missing_keys"])
        raise ModelFormatError(
            f"{path}: its weights lack {', '.join(missing[:3])} (a model saved whole has them)"
        )
    hf.eval()
    body = hf.base_model
    dense, final = hf_head(hf)
    if config["model_type"] == "bert":  # the pooler is the head's first layer; the body ends at the layers
        body.pooler = None
    weight, bias = final.weight.detach(), final.bias.detach()
    if weight.shape[0] == 2:  # log-odds of "relevant": softmax's p1 is sigmoid(l1 - l0)
        weight, bias = (weight[1] - weight[0]).unsqueeze(0), (bias[1] - bias[0]).unsqueeze(0)
    settings = {
        "backbone": str(path),
        "max_length": _max_length(tokenizer, positions(body)),
        "classifier_layers": 2,
        "classifier_activation": BODIES[config["model_type"]],
    }
    return Foreign(
        backbone=Backbone(name=str(path), model=body, tokenizer=tokenizer, path=path),
        settings=settings,
        dense={k: v.detach() for k, v in dense.state_dict().items()},
        output={"weight": weight, "bias": bias},
        about={"architecture": config["architectures"][0], "labels": _labels(config)},
    )
