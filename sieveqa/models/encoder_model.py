"""What every sieveqa model shares: a backbone and its tokenizer, the steppable encoder, where and at
what precision it runs, and the saved folder format.

Pair rankers (``pair_model``), bi-encoders (HAS) and readers build on this; how they score is theirs.
A model is in eval mode unless a Trainer is training it, and scoring never switches modes: that is
what lets one loaded model serve several threads at once.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
from torch import Tensor

from sieveqa.backbones import Backbone, load_backbone
from sieveqa.batching import Shapes, collate, on_device, pinned
from sieveqa.device import autocast, resolve_device
from sieveqa.encoder import Cost, SteppableEncoder, state_fingerprint
from sieveqa.errors import ConfigError, ModelFormatError
from sieveqa.features import Features, Featurizer
from sieveqa.fields import typed
from sieveqa.models import zoo
from sieveqa.models._copies import InferenceCopies
from sieveqa.models._low_rank import adapter_rank, add_adapters
from sieveqa.models._saving import (
    frozen_prefixes,
    load_into,
    read_meta,
    save_model_folder,
    tensor_fingerprint,
)
from sieveqa.models.configs import ModelConfig
from sieveqa.models.foreign import positions

log = logging.getLogger(__name__)

WORD_EMBEDDINGS = "encoder.backbone.embeddings.word_embeddings."
BODY = "encoder."


class EncoderModel(InferenceCopies):
    """A steppable encoder over a (possibly truncated) backbone, with inference settings and
    persistence. Subclasses add heads and say how they score."""

    kind: ClassVar[str]
    config_class: ClassVar[type[ModelConfig]]
    #: Whether ``train_low_rank`` covers every body the model trains (not so where a second body,
    #: an MHS branch or PEASI's sentence encoder, would train whole beside the adapted one).
    one_body: ClassVar[bool] = True

    def __init__(self, config: ModelConfig, backbone: Backbone | None = None) -> None:
        super().__init__()
        self.config = config
        backbone = backbone or load_backbone(config.backbone)
        if config.num_layers is not None:
            backbone.keep_layers(config.num_layers)
        self.tokenizer = backbone.tokenizer
        self.featurizer = Featurizer(backbone.tokenizer)
        self.encoder = SteppableEncoder(backbone.model)
        self.positions = positions(backbone.model)  # MPNet/RoBERTa-style ids start after the padding index
        self.check_positions()
        if config.freeze_word_embeddings:
            backbone.model.embeddings.word_embeddings.weight.requires_grad_(False)
        frozen = self.frozen_prefixes()
        for name, param in self.encoder.named_parameters(prefix=BODY.rstrip(".")):
            if name.startswith(frozen):
                param.requires_grad_(False)
        self.batch_size = 64
        self.precision = "fp32"
        self._precision_asked = "fp32"  # re-resolved when the device changes (auto → bf16/fp16/fp32)
        self.backend = "torch"  # where the body's layers run: torch, or an export (sieveqa.exported)
        self._backend_asked = "torch"  # re-resolved with the precision (auto → the measured choice)
        #: Bucketed batch shapes (see ``sieveqa.batching``): None chooses (half precision on CUDA).
        self.buckets: bool | None = None
        #: Batches made ahead by a thread while the model runs (None: on CUDA).
        self.overlap: bool | None = None
        # What save_pretrained recorded (training provenance) and the folder, when loaded from one.
        self.meta: dict[str, Any] = {}
        self.path: Path | None = None
        # A saved model whose body this one shares unchanged (see ``share_body``), and its fingerprint.
        self.body_from: str | None = None
        self._body_fingerprint: str | None = None

    def check_positions(self) -> None:
        """Refuse a ``max_length`` beyond the backbone's position embeddings."""
        if self.config.max_length > self.positions:
            raise ConfigError(
                f"max_length {self.config.max_length} exceeds the {self.positions} positions of "
                f"{self.config.backbone}"
            )

    # -- where and how it runs ----------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return self.encoder.backbone.embeddings.word_embeddings.weight.device

    @property
    def pad_id(self) -> int:
        return self.featurizer.pad_id

    def _name(self) -> str:
        """How a message names this model: its shipped name, else its folder (MODEL when unsaved)."""
        from sieveqa.models.zoo import SHIPPED

        if self.path is None:
            return "MODEL"
        return next((name for name, folder in SHIPPED.items() if folder == self.path), str(self.path))

    def configure(
        self,
        device: str | None = None,
        precision: str | None = None,
        batch_size: int | None = None,
        backend: str | None = None,
    ) -> Self:
        """Move to ``device`` (auto, cpu, cuda), set the inference ``precision`` (auto, fp32, bf16,
        fp16, int8), ``batch_size`` and the ``backend`` the body's layers run on (torch, onnx, openvino:
        an export of them, see :mod:`sieveqa.exported`; auto: the fastest measured at no loss here).
        Meant for set-up, before the model serves calls."""
        asked = (backend or self._backend_asked, precision or self._precision_asked)
        if device is not None:
            from sieveqa.exported import device_for

            device = device_for(asked[0], device)
        before = self.device
        if device is not None:
            self.to(resolve_device(device))
        if device is not None or precision is not None or backend is not None:
            from sieveqa.exported import attach

            encoders = [m for m in self.modules() if isinstance(m, SteppableEncoder)]
            try:
                self.backend, self.precision = attach(encoders, self.device, *asked, model=self._name())
            except BaseException:  # a failed placement leaves the model where and as it was
                self.to(before)
                raise
            self._backend_asked, self._precision_asked = asked
        if batch_size is not None:
            if batch_size < 1:
                raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
            self.batch_size = batch_size
        return self

    @contextlib.contextmanager
    def inference(self) -> Iterator[Self]:
        """The module to score with, under ``inference_mode`` and autocast for the precision (an int8
        run gets a quantized copy)."""
        if self.training:
            raise RuntimeError(
                f"{type(self).__name__} is in training mode (dropout on); call .eval() before scoring"
            )
        if self.backend != "torch":  # the export runs the layers; embeddings and heads stay fp32
            with torch.inference_mode():
                yield self
            return
        with torch.inference_mode(), autocast(self.device, self.precision):
            if self.precision == "int8":
                yield self._int8_copy()
            elif self.precision in ("bf16", "fp16"):
                yield self._half_linear_copy()
            else:
                yield self

    def train(self, mode: bool = True) -> Self:
        """As ``nn.Module.train``; training drops the inference copies (a step may write weights
        through ``.data``, which no version counter sees)."""
        if mode:
            self._drop_copies()
        return super().train(mode)

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Self:
        self._drop_copies()  # .to(), .half(), .cuda(): the copies hold the tensors as they were
        return super()._apply(fn, *args, **kwargs)

    @property
    def shapes(self) -> Shapes:
        """How its inference batches are shaped: in buckets where a new shape costs a kernel build
        (torch in bf16 or fp16 on CUDA), else exact; ``buckets`` decides when set."""
        half = self.backend == "torch" and self.precision in ("bf16", "fp16")
        auto = half and self.device.type == "cuda"
        return Shapes(auto if self.buckets is None else self.buckets, self.config.max_length)

    def batches(
        self,
        features: Features,
        progress: bool = False,
        desc: str = "scoring",
        segments: bool = False,
        cost: Cost | None = None,
    ) -> Iterator[tuple[list[int], dict[str, Tensor]]]:
        """Length-sorted batches of ``features`` as ``(rows, tensors on the model's device)``, with
        ``segment_ids`` when ``segments``, shaped as ``shapes`` says: rows past ``rows`` are padding,
        which ``cost`` (what the caller meters each batch into) does not count. With ``overlap`` (default:
        on CUDA) a thread pads the next batches into pinned memory while the model runs this one."""
        made = self.host_batches(features, segments)
        return on_device(made, self.device, len(features), progress, desc, cost, self.overlap)

    def host_batches(
        self, features: Features, segments: bool = False
    ) -> Iterator[tuple[list[int], dict[str, Tensor]]]:
        """The batches of :meth:`batches` still on the host (pinned for a CUDA device): the part of
        the work a thread can do ahead of the model."""
        device, shapes, size = self.device, self.shapes, self.batch_size
        for rows in shapes.batches(features.lengths, size):
            shape = shapes.shape([len(features.input_ids[i]) for i in rows], size)
            yield rows, pinned(collate(features, rows, self.pad_id, segments, shape), device)

    def warm_up(self) -> int:
        """Run the body once at every bucketed batch shape (see ``shapes``), so that no call pays
        for building a shape's kernels; the number of shapes run (none when shapes are exact)."""
        grid = self.shapes.grid(self.batch_size)
        with self.inference() as model:
            for rows, width in grid:
                ids = torch.full((rows, width), self.pad_id, dtype=torch.long, device=self.device)
                model.encoder(ids, torch.ones_like(ids), torch.zeros_like(ids))
        return len(grid)

    @classmethod
    def start_from(cls, other: EncoderModel, config: ModelConfig) -> Self:
        """A new model of this class over another trained model's body (``train --init FOLDER``).

        The body (backbone, depth, its weights) is ``other``'s; the heads are new, built from
        ``config``. EASI over the default ranker, or a judge over the reader's body, start this way.
        """
        settings = asdict(config) if isinstance(config, cls.config_class) else {}
        body = {k: getattr(other.config, k) for k in ("backbone", "num_layers", "freeze_word_embeddings")}
        model = cls(cls.config_class(**{**settings, **body}))
        model.encoder.load_state_dict(other.encoder.state_dict())
        model.meta = {"body_from": other.meta.get("training", {})}
        return model.to(other.device)

    # -- persistence ------------------------------------------------------------------------------

    def share_body(self, source: str | Path) -> None:
        """Declare that this model's body is ``source``'s (a shipped name or a model folder), unchanged.

        ``save_pretrained`` then stores only the heads and records ``source``; loading reads the body
        from it. A retrofit cascade over the shipped default is a few MB instead of a second copy of
        the body. If the body changes before saving (it was trained), the whole model is stored.
        """
        self.body_from = zoo.model_ref(source)
        self._body_fingerprint = self.body_fingerprint()

    def body_fingerprint(self) -> str:
        """sha256 over the body's tensors (fp16, as saved): identifies the exact body."""
        return self.encoder.fingerprint()

    def _shares_body(self) -> bool:
        return self.body_from is not None and self._body_fingerprint == self.body_fingerprint()

    def frozen_prefixes(self) -> tuple[str, ...]:
        """Names of the body's weights ``train_layers`` keeps at the base's (all but the top N layers)."""
        return frozen_prefixes(self.encoder, self.config.train_layers, BODY)

    def _excluded(self) -> tuple[str, ...]:
        if self._shares_body():
            return (BODY,)
        # A random test backbone has no installed base to read frozen weights from: store them all.
        if self.config.backbone == "tiny":
            return ()
        words = (WORD_EMBEDDINGS,) if self.config.freeze_word_embeddings else ()
        return tuple(dict.fromkeys(words + self.frozen_prefixes()))

    def _frozen_fingerprint(self) -> str:
        frozen = self.frozen_prefixes()
        return state_fingerprint({n: t for n, t in self.state_dict().items() if n.startswith(frozen)})

    def installed_base(self) -> dict[str, Tensor]:
        """The installed backbone's weights, named as this model's body names them."""
        installed = load_backbone(self.config.backbone).model.state_dict()
        return {f"{BODY}backbone.{n}": t for n, t in installed.items()}

    def train_low_rank(self, rank: int, seed: int = 0) -> float:
        """Train the body from here on as rank-``rank`` changes of its matrices over the installed
        base (LoRA; the heads train whole; ``seed`` draws the new down factors): what it already
        changed is refactored at that rank. Saving then writes the low-rank format. Returns the share
        of the body's changes kept (1.0: none cut)."""
        if rank < 1:
            raise ConfigError(f"--low-rank must be >= 1, got {rank}")
        if self.body_from is not None:
            raise ConfigError(f"--low-rank: the body is {self.body_from!r}'s, not trained here")
        if not self.one_body:
            raise ConfigError(f"--low-rank is not available for a {self.kind} model: it trains whole")
        if not self.config.freeze_word_embeddings:
            raise ConfigError(
                "--low-rank keeps the word embeddings frozen, and this model trains them (given "
                "--no-freeze-word-embeddings, or an --init model trained so): start from a backbone"
            )
        return add_adapters(self, self.installed_base(), rank, seed)

    def save_pretrained(
        self,
        path: str | Path,
        extra: dict[str, Any] | None = None,
        policy: dict[str, Any] | None = None,
        low_rank: int | None = None,
    ) -> Path:
        """Save config and weights (fp16; frozen base embeddings, or a shared body, left out and
        fingerprinted), and ``policy`` as policy.json beside them. With ``low_rank=r``, each body
        matrix training changed is stored as rank-r factors of its change from the installed base."""
        meta = {
            "sieveqa_model": self.kind,
            "config": asdict(self.config),
            "base_fingerprint": tensor_fingerprint(self.encoder.backbone.embeddings.word_embeddings.weight),
            **(extra or {}),
        }
        if self.config.train_layers is not None:
            meta["frozen_fingerprint"] = self._frozen_fingerprint()
        if self._shares_body():
            meta |= {"body_from": self.body_from, "body_fingerprint": self._body_fingerprint}
        elif self.body_from is not None:
            log.warning("the body changed since share_body(%s): saving the whole model", self.body_from)
        base: tuple[dict[str, Tensor], int] | None = None
        if (trained := adapter_rank(self)) is not None:  # trained at low rank: saved as it trained
            if low_rank not in (None, trained):
                raise ConfigError(f"low_rank: this model trains at rank {trained}, not {low_rank}")
            low_rank = trained
            # Its frozen matrices are the installed base's (add_adapters set them): no need to read it.
            base = (self.state_dict(), trained)
        elif low_rank is not None:
            if low_rank < 1:
                raise ConfigError(f"low_rank must be >= 1, got {low_rank}")
            if self._shares_body():
                raise ConfigError(f"low_rank: the body is {self.body_from!r}'s, not stored here to factor")
            base = (self.installed_base(), low_rank)
        return save_model_folder(path, self, meta, exclude=self._excluded(), policy=policy, low_rank=base)

    def _load_shared_body(self, path: Path, meta: dict[str, Any]) -> None:
        source = str(meta["body_from"])
        try:
            base = zoo.load_model(source)
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
        path = zoo.resolve_model(path)
        meta = read_meta(path, cls.kind)
        where = f"{path}/config.json: config"
        try:
            config = cls.config_class(**typed(cls.config_class, meta["config"], where, ModelFormatError))
        except ConfigError as err:
            raise ModelFormatError(f"{where}: {err}") from err
        source = meta.get("body_from")
        if isinstance(source, str) and source not in zoo.SHIPPED and not Path(source).is_dir():
            raise ModelFormatError(
                f"{path}: its body comes from {source}, which is no longer there (a model stored as heads "
                "only reads its body from that folder: put it back, or train the heads again)"
            )
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
            frozen = meta.get("frozen_fingerprint")
            if frozen is not None and model._frozen_fingerprint() != frozen:
                raise ModelFormatError(
                    f"{path}: its frozen layers are not the installed backbone {model.config.backbone!r}'s"
                )
        load_into(path, model, meta)
        model.meta, model.path = meta, path
        return model.eval()
