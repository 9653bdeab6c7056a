"""``sieveqa export MODEL --format hf OUT``: a Hugging Face folder that ``transformers``'
``AutoModelForSequenceClassification`` and sentence-transformers' ``CrossEncoder`` load as they are,
and that scores as sieveqa does.

What maps: a cross-encoder with CLS pooling over a BERT, MPNet, RoBERTa or XLM-RoBERTa body (the
shipped ``default`` and ``default-v1-ranker``, ``peasi-pr``), and one imported from Hugging Face (its
two-layer head maps back as it is; an ELECTRA's too). Hugging Face's classes put ``dense`` and ``tanh``
before the linear classifier on the first token; sieveqa's own head is the linear layer alone. The export sets
``dense`` to ``eps·I`` and the classifier to ``w/eps``: ``tanh(eps·h)/eps = h - eps²h³/3 + ...``, so
the logit moves by about ``eps²·Σ|w·h³|/3`` (``EPS`` keeps that far under 1e-4 for these bodies;
bench/hf_export.py measures it) while the fp32 rounding of ``tanh`` near zero stays relative to
``eps·h`` and cancels in ``w/eps``. Pairs longer than the model's ``max_length`` score otherwise:
Hugging Face cuts them (the longer side first), where sieveqa reads the candidate in windows (or,
with ``windows`` off, cuts the candidate).

Nothing else has such an equivalent (a cascade's exits, HAS, readers, PEASI's selector, mean pooling):
asking says so in one line.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from sieveqa.backbones import hf_head
from sieveqa.errors import ConfigError

if TYPE_CHECKING:
    from sieveqa.models.encoder_model import EncoderModel

#: The pooler's scale: small enough that tanh is linear to fp32 precision at sieveqa's hidden sizes.
EPS = 1e-4
#: The body types with a sequence classifier that reads the first token through dense + activation
#: (tanh; ELECTRA's gelu) + classifier.
_CLASSIFIERS = {
    "bert": "BertForSequenceClassification",
    "mpnet": "MPNetForSequenceClassification",
    "roberta": "RobertaForSequenceClassification",
    "xlm-roberta": "XLMRobertaForSequenceClassification",
    "electra": "ElectraForSequenceClassification",
}


def hf_refusal(model: EncoderModel) -> str | None:
    """Why ``model`` has no Hugging Face sequence-classifier equivalent, or None when it has one."""
    if model.kind != "cross-encoder":
        return (
            f"a {model.kind} has no Hugging Face equivalent: --format hf exports cross-encoders "
            "(a cascade's exits, HAS, readers and PEASI's selector exist only in sieveqa)"
        )
    if model.config.pooling != "cls":
        return f"pooling {model.config.pooling!r} has no Hugging Face equivalent (it reads the first token)"
    if any(hasattr(m, "lr_a") for m in model.modules()):  # adapters (sieveqa.models._low_rank)
        return "a model training at low rank exports once saved (its change merged into the matrices)"
    body = model.encoder.backbone.config.model_type
    if body not in _CLASSIFIERS:
        return f"a {body} body has no sequence classifier here ({', '.join(_CLASSIFIERS)} do)"
    layers, activation = model.config.classifier_layers, model.config.classifier_activation
    if layers == 2 and activation != ("gelu" if body == "electra" else "tanh"):
        return f"a {activation} head over a {body} body has no Hugging Face equivalent"
    if layers == 1 and body == "electra":  # gelu is not linear near 0: the eps pooler below needs tanh
        return (
            "a one-layer head over an electra body has no Hugging Face equivalent (its classifier uses gelu)"
        )
    if layers not in (1, 2):
        return f"a {layers}-layer head has no Hugging Face equivalent (1 or 2 layers map)"
    return None


def check_out(out: Path) -> None:
    """Refuse an ``out`` that holds anything (checked before a model loads, and again on writing)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out}: exists and is not an empty folder")


def export_hf(model: EncoderModel, out: Path) -> Path:
    """Write ``model`` to ``out`` as a Hugging Face sequence classifier with its tokenizer (fp32
    safetensors; ``max_length`` as the tokenizer's limit); a ConfigError names why it cannot be."""
    import transformers

    refusal = hf_refusal(model)
    if refusal is not None:
        raise ConfigError(refusal)
    check_out(out)
    backbone = model.encoder.backbone
    body = backbone.config.model_type
    layers = len(model.encoder.layers)
    # One label: the base's own label maps (two labels) would make transformers warn of a mismatch.
    settings = {k: v for k, v in backbone.config.to_dict().items() if k not in ("id2label", "label2id")}
    config = type(backbone.config)(**{**settings, "num_labels": 1, "num_hidden_layers": layers})
    config.architectures = [_CLASSIFIERS[body]]
    # sentence-transformers' CrossEncoder reads this: a probability, as sieveqa's `predict` gives.
    config.sentence_transformers = {"activation_fn": "torch.nn.modules.activation.Sigmoid"}
    hf = getattr(transformers, _CLASSIFIERS[body])(config).eval()
    inner = hf.base_model
    state = {k: v for k, v in backbone.state_dict().items() if not k.startswith("pooler.")}
    result = inner.load_state_dict(state, strict=False)
    unexpected = [k for k in result.unexpected_keys if not k.startswith("encoder.layer.")]
    missing = [k for k in result.missing_keys if not k.startswith("pooler.")]
    if missing or unexpected:
        raise ConfigError(f"the body's weights do not map onto {_CLASSIFIERS[body]}: {missing or unexpected}")
    dense, final = hf_head(hf)
    with torch.no_grad():
        if model.config.classifier_layers == 2:  # the head is already dense + activation + classifier
            dense.load_state_dict({k: v.float() for k, v in model.head[1].state_dict().items()})
            final.weight.copy_(model.head.output.weight.float())
        else:
            dense.weight.copy_(torch.eye(config.hidden_size) * EPS)
            dense.bias.zero_()
            final.weight.copy_(model.head.output.weight.float() / EPS)
        final.bias.copy_(model.head.output.bias.float())
    tmp = None
    try:  # a failed save (a full disk, a read-only folder) leaves nothing and says so in one line
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
        hf.save_pretrained(tmp)
        tokenizer = model.tokenizer  # may be shared: its limit is set for the save only
        limit, tokenizer.model_max_length = tokenizer.model_max_length, model.config.max_length
        try:
            tokenizer.save_pretrained(tmp)
        finally:
            tokenizer.model_max_length = limit
        about = {"exported_from": model.kind, "max_length": model.config.max_length, "eps": EPS}
        (tmp / "sieveqa.json").write_text(json.dumps(about, indent=2))
        if out.exists():
            out.rmdir()  # empty, as checked
        tmp.rename(out)
    except OSError as err:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise ConfigError(f"{out}: could not write the export there ({err.strerror or err})") from None
    return out
