"""What every (question, candidate) pair model shares: backbone, tokenizer, batched scoring, persistence.

The cross-encoder and the cascade differ only in their heads; loading the backbone, freezing the base
word embeddings, length-sorted inference and the safetensors folder format live here once.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from sieveqa.backbones import Backbone, load_backbone
from sieveqa.batching import PairFeatures, collate, length_batches, tokenize_pairs
from sieveqa.encoder import SteppableEncoder
from sieveqa.errors import ModelFormatError
from sieveqa.models._saving import load_into, read_meta, save_model_folder, tensor_fingerprint
from sieveqa.models.base import Ranker
from sieveqa.models.precision import Precision, apply_precision

log = logging.getLogger(__name__)

WORD_EMBEDDINGS = "encoder.backbone.embeddings.word_embeddings."
BODY = "encoder."


@dataclass
class PairModelConfig:
    """Backbone and input settings every pair model has."""

    backbone: str = field(default="minilm-l6", metadata={"help": "backbone name or Hugging Face folder"})
    max_length: int = field(default=128, metadata={"help": "tokens per (question, candidate) pair"})
    num_layers: int | None = field(
        default=None, metadata={"help": "keep only the backbone's first N layers (None: all)"}
    )
    dropout: float = field(default=0.1, metadata={"help": "dropout inside the scoring head(s)"})
    freeze_word_embeddings: bool = field(
        default=True, metadata={"help": "keep the base word embeddings (smaller saved model, faster steps)"}
    )


@dataclass
class ScoringStats:
    """What the last scoring call cost."""

    pairs: int = 0
    seconds: float = 0.0
    layer_units: int = 0
    flops: int = 0

    @property
    def pairs_per_second(self) -> float:
        return self.pairs / self.seconds if self.seconds > 0 else 0.0


def truncate_layers(backbone: Backbone, num_layers: int) -> None:
    """Keep the first ``num_layers`` transformer layers of ``backbone`` (a shallower monolithic model)."""
    layers = backbone.model.encoder.layer
    if not 1 <= num_layers <= len(layers):
        raise ValueError(f"num_layers must be in 1..{len(layers)}, got {num_layers}")
    backbone.model.encoder.layer = layers[:num_layers]
    backbone.model.config.num_hidden_layers = num_layers


class PairModel(nn.Module, Ranker):
    """Base of the pair rankers: a steppable encoder over a (possibly truncated) backbone."""

    kind: ClassVar[str]
    config_class: ClassVar[type[PairModelConfig]]

    def __init__(self, config: PairModelConfig, backbone: Backbone | None = None) -> None:
        super().__init__()
        self.config = config
        backbone = backbone or load_backbone(config.backbone)
        if config.num_layers is not None:
            truncate_layers(backbone, config.num_layers)
        self.tokenizer = backbone.tokenizer
        self.encoder = SteppableEncoder(backbone.model)
        if config.freeze_word_embeddings:
            backbone.model.embeddings.word_embeddings.weight.requires_grad_(False)
        self.precision: Precision = "fp32"
        self.batch_size = 64
        self.last_stats = ScoringStats()
        # What save_pretrained recorded (training provenance) when loaded from a folder.
        self.meta: dict[str, Any] = {}
        # A saved model whose body this one shares unchanged (see ``share_body``), and its fingerprint.
        self.body_from: str | None = None
        self._body_fingerprint: str | None = None

    def featurize(self, questions: Sequence[str], texts: Sequence[str]) -> PairFeatures:
        return tokenize_pairs(self.tokenizer, questions, texts, self.config.max_length)

    def iter_batches(
        self, features: PairFeatures, progress: bool = False, started: float | None = None
    ) -> Iterator[tuple[list[int], nn.Module, dict[str, Tensor]]]:
        """Length-sorted batches of ``features`` as ``(rows, model, batch)`` under ``inference_mode``
        and the model's precision (``model`` may be a quantized copy). ``last_stats`` records the cost
        once the batches are used up, timed from ``started`` when given."""
        was_training = self.training
        self.eval()
        start = time.perf_counter() if started is None else started
        batches = length_batches(features.lengths, self.batch_size)
        with torch.inference_mode(), apply_precision(self, self.precision) as model:
            # An int8 run happens in a quantized copy, which counts its own cost.
            cost = model.encoder.cost
            cost.reset()
            for rows in tqdm(batches, desc="scoring", unit="batch", disable=not progress, leave=False):
                yield rows, model, collate(features, rows, self.tokenizer.pad_token_id)
        self.train(was_training)
        self.last_stats = ScoringStats(
            len(features), time.perf_counter() - start, cost.layer_units, cost.flops
        )

    def run_batches(
        self,
        features: PairFeatures,
        fn: Callable[[nn.Module, dict[str, Tensor]], Tensor],
        progress: bool = False,
        width: int | None = None,
        started: float | None = None,
    ) -> Tensor:
        """Apply ``fn(model, batch)`` to length-sorted batches under ``inference_mode``; input row order.

        ``fn`` returns one value per pair, or ``width`` values. ``last_stats`` records the cost, timed
        from ``started`` (a ``time.perf_counter()`` taken before tokenizing) when given.
        """
        out = torch.empty((0,) if width is None else (0, width))
        for rows, model, batch in self.iter_batches(features, progress, started):
            values = fn(model, batch).float()
            if len(out) != len(features):
                out = torch.empty((len(features), *values.shape[1:]))
            out[rows] = values
        return out

    # -- persistence ------------------------------------------------------------------------------

    def share_body(self, source: str | Path) -> None:
        """Declare that this model's body is ``source``'s (a shipped name or a model folder), unchanged.

        ``save_pretrained`` then stores only the heads and records ``source``; loading reads the body
        from it. A retrofit cascade over the shipped default is a few MB instead of a second copy of
        the body. If the body changes before saving (it was trained), the whole model is stored.
        """
        from sieveqa.models.zoo import model_ref

        self.body_from = model_ref(source)
        self._body_fingerprint = self.body_fingerprint()

    def body_fingerprint(self) -> str:
        """sha256 over the body's tensors (fp16, as saved): identifies the exact body."""
        digest = hashlib.sha256()
        for name, tensor in self.encoder.state_dict().items():
            digest.update(name.encode())
            digest.update(tensor.detach().to(torch.float16).contiguous().numpy().tobytes())
        return digest.hexdigest()

    def _shares_body(self) -> bool:
        return self.body_from is not None and self._body_fingerprint == self.body_fingerprint()

    def _excluded(self) -> tuple[str, ...]:
        if self._shares_body():
            return (BODY,)
        # A random test backbone has no installed base to read frozen weights from: store them all.
        return (
            (WORD_EMBEDDINGS,)
            if self.config.freeze_word_embeddings and self.config.backbone != "tiny"
            else ()
        )

    def save_pretrained(self, path: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """Save config and weights (fp16; frozen base embeddings, or a shared body, left out and
        fingerprinted)."""
        meta = {
            "sieveqa_model": self.kind,
            "config": asdict(self.config),
            "base_fingerprint": tensor_fingerprint(self.encoder.backbone.embeddings.word_embeddings.weight),
            **(extra or {}),
        }
        if self._shares_body():
            meta |= {"body_from": self.body_from, "body_fingerprint": self._body_fingerprint}
        elif self.body_from is not None:
            log.warning("the body changed since share_body(%s): saving the whole model", self.body_from)
        return save_model_folder(path, self, meta, exclude=self._excluded())

    def _load_shared_body(self, path: Path, meta: dict[str, Any]) -> None:
        from sieveqa.models.zoo import load_model

        source = str(meta["body_from"])
        try:
            base = load_model(source)
        except ModelFormatError as err:
            raise ModelFormatError(
                f"{path}: its body comes from {source!r}, which fails to load: {err}"
            ) from err
        try:
            self.encoder.load_state_dict(base.encoder.state_dict())
        except RuntimeError as err:
            raise ModelFormatError(f"{path}: the body of {source!r} has another shape ({err})") from err
        self.share_body(source)
        if self._body_fingerprint != meta.get("body_fingerprint"):
            raise ModelFormatError(
                f"{path}: its body model {source!r} has changed since it was saved (body fingerprint "
                f"{str(self._body_fingerprint)[:12]} != {str(meta.get('body_fingerprint'))[:12]})"
            )

    @classmethod
    def from_pretrained(cls, path: str | Path) -> Self:
        """Load a folder written by ``save_pretrained`` (or a shipped model name, e.g. ``default``)."""
        from sieveqa.models.zoo import resolve_model

        path = resolve_model(path)
        meta = read_meta(path, cls.kind)
        try:
            config = cls.config_class(**meta["config"])
        except TypeError as err:
            raise ModelFormatError(f"{path}/config.json: bad model config ({err})") from err
        model = cls(config)
        if meta.get("body_from"):
            model._load_shared_body(path, meta)
        elif model._excluded():
            found = tensor_fingerprint(model.encoder.backbone.embeddings.word_embeddings.weight)
            if found != meta.get("base_fingerprint"):
                expected = str(meta.get("base_fingerprint"))[:12]
                raise ModelFormatError(
                    f"{path}: trained over other base weights than the installed backbone "
                    f"{model.config.backbone!r} (fingerprint {found[:12]} != {expected})"
                )
        load_into(path, model, meta)
        model.meta = meta
        return model.eval()
