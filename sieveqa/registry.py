"""The techniques sieveqa knows, each registered once, here.

A technique is a model class (what ``save_pretrained`` writes and ``load_model`` reads back by its
``kind``), a training recipe (data and objective, with its own options), the ``--arch`` names that
select it, and optionally a runtime ranker that applies the policy saved beside the model (a
cascade's drop ratios). Those parts live in different layers (models, training, runtime), so the
registry names them by import path and each layer resolves only its own part, on first use, as
Python entry points do. Adding a technique is its own files plus one ``register`` call below.

Answering methods (how ``sieveqa answer`` picks the answer among retrieved passages) are registered
the same way, by name and import path, with ``register_method``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from sieveqa.errors import ConfigError


def _resolve(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Technique:
    """One technique's parts, by import path (``module:Name``)."""

    kind: str
    model: str
    recipe: str
    archs: tuple[str, ...]
    ranker: str | None = None
    summary: str = ""
    #: The model's config class and the recipe's options class (``module:Name``), kept apart from the
    #: model and recipe (which load torch) so that ``train --help`` builds its flags without them;
    #: where not given, the model's ``config_class`` and the recipe's ``options_class``.
    config: str = ""
    options: str = ""

    def model_class(self) -> Any:
        return _resolve(self.model)

    def recipe_class(self) -> Any:
        return _resolve(self.recipe)

    def config_class(self) -> Any:
        return _resolve(self.config) if self.config else self.model_class().config_class

    def options_class(self) -> Any:
        return _resolve(self.options) if self.options else self.recipe_class().options_class

    def ranker_class(self) -> Any | None:
        """The runtime ranker that applies the model's saved policy (None: the model ranks itself)."""
        return None if self.ranker is None else _resolve(self.ranker)


_TECHNIQUES: dict[str, Technique] = {}


def register(technique: Technique) -> Technique:
    """Add a technique; its kind and arch names must be new."""
    taken = {a for t in _TECHNIQUES.values() for a in t.archs} & set(technique.archs)
    if technique.kind in _TECHNIQUES or taken:
        raise ValueError(f"technique {technique.kind!r} or arch {sorted(taken)} is registered already")
    _TECHNIQUES[technique.kind] = technique
    return technique


def techniques() -> list[Technique]:
    return list(_TECHNIQUES.values())


def technique(kind: str) -> Technique:
    """The technique whose models are saved with ``sieveqa_model: kind``."""
    if kind not in _TECHNIQUES:
        raise ConfigError(f"unknown model kind {kind!r}; known: {', '.join(_TECHNIQUES)}")
    return _TECHNIQUES[kind]


def archs() -> list[str]:
    return [a for t in _TECHNIQUES.values() for a in t.archs]


def for_arch(arch: str) -> Technique:
    """The technique an ``--arch`` name selects."""
    for t in _TECHNIQUES.values():
        if arch in t.archs:
            return t
    raise ConfigError(f"--arch must be one of {', '.join(archs())}, got {arch!r}")


_CONFIGS = "sieveqa.models.configs"
_OPTIONS_T = "sieveqa.training.options"
register(
    Technique(
        kind="cross-encoder",
        model="sieveqa.models.cross_encoder:CrossEncoder",
        recipe="sieveqa.training.pairs:PointwiseRecipe",
        archs=("cross-encoder",),
        summary="(question, candidate) scored jointly (the TANDA baseline)",
        config=f"{_CONFIGS}:CrossEncoderConfig",
        options=f"{_OPTIONS_T}:NoOptions",
    )
)
register(
    Technique(
        kind="cascade",
        model="sieveqa.models.cascade:CascadeTransformer",
        recipe="sieveqa.training.cascade:CascadeRecipe",
        archs=("cascade",),
        ranker="sieveqa.runtime.cascade:CascadeRanker",
        summary="classifiers after several layers; each drops a share of the candidates",
        config=f"{_CONFIGS}:CascadeConfig",
        options=f"{_OPTIONS_T}:CascadeOptions",
    )
)
register(
    Technique(
        kind="hashing",
        model="sieveqa.models.hashing:HashingModel",
        recipe="sieveqa.training.triplets:TripletRecipe",
        archs=("has", "bert-attention", "bert-pooling"),
        summary="questions and answers encoded apart; answers storable as bits (HAS)",
        config=f"{_CONFIGS}:HashingConfig",
        options=f"{_OPTIONS_T}:TripletOptions",
    )
)
register(
    Technique(
        kind="easi",
        model="sieveqa.models.easi:EasiModel",
        recipe="sieveqa.training.easi:EasiRecipe",
        archs=("easi",),
        summary="PEASI's in-place selector: question and a passage's sentences in one pass",
        config=f"{_CONFIGS}:EasiConfig",
        options=f"{_OPTIONS_T}:EasiOptions",
    )
)
register(
    Technique(
        kind="peasi",
        model="sieveqa.models.peasi:PeasiModel",
        recipe="sieveqa.training.peasi:PeasiRecipe",
        archs=("peasi-mtl0", "peasi-mtl1", "peasi-concat"),
        summary="PEASI's passage reranker and EASI trained together (shared body, two bodies, PR ⊕ EASI)",
        config=f"{_CONFIGS}:PeasiConfig",
        options=f"{_OPTIONS_T}:PeasiOptions",
    )
)
register(
    Technique(
        kind="reader",
        model="sieveqa.models.reader:ReaderModel",
        recipe="sieveqa.training.reader:ReaderRecipe",
        archs=("reader",),
        summary="anytime extractive reader: span and has-answer heads after every layer (ODQA)",
        config=f"{_CONFIGS}:ReaderConfig",
        options=f"{_OPTIONS_T}:ReaderOptions",
    )
)
register(
    Technique(
        kind="multihead",
        model="sieveqa.models.multihead:MultiHeadStudent",
        recipe="sieveqa.training.distill:DistillRecipe",
        archs=("mhs",),
        summary="Multiple Heads Student: a shared body and k heads, each distilled from its own teacher",
        config=f"{_CONFIGS}:MultiHeadConfig",
        options=f"{_OPTIONS_T}:DistillOptions",
    )
)


@dataclass(frozen=True)
class MethodSpec:
    """One answering method: its ``--method`` name, its class (``module:Name``, an
    ``AnswerMethod``), a line for the help, and its options dataclass (``module:Name``; kept apart
    from the class, which loads models, so that flags are built without torch)."""

    name: str
    path: str
    summary: str = ""
    options: str = ""

    def method_class(self) -> Any:
        return _resolve(self.path)

    def options_class(self) -> Any:
        """The method's options dataclass (its class's ``options_class`` where none is named)."""
        return _resolve(self.options) if self.options else self.method_class().options_class


_METHODS: dict[str, MethodSpec] = {}


def register_method(spec: MethodSpec) -> MethodSpec:
    """Add an answering method; its name must be new."""
    if spec.name in _METHODS:
        raise ValueError(f"answering method {spec.name!r} is registered already")
    _METHODS[spec.name] = spec
    return spec


def answer_methods() -> list[MethodSpec]:
    return list(_METHODS.values())


def answer_method(name: str) -> MethodSpec:
    """The answering method registered as ``name``."""
    if name not in _METHODS:
        raise ConfigError(f"--method must be one of {', '.join(_METHODS)}, got {name!r}")
    return _METHODS[name]


_PEASI = "sieveqa.runtime.answer.peasi"
_SENTENCE = "sieveqa.runtime.answer.sentence"
_READING = "sieveqa.runtime.answer.reading"
_OPTIONS = "sieveqa.runtime.answer.options"


def _method(name: str, path: str, summary: str, options: str) -> None:
    register_method(MethodSpec(name, path, summary, f"{_OPTIONS}:{options}"))


_method(
    "peasi",
    "sieveqa.runtime.answer.peasi:Peasi",
    "rerank passages, pick the sentence in place",
    "PeasiOptions",
)
_method("peasi-all", f"{_SENTENCE}:PeasiAll", "EASI in every passage, then the ranker", "PeasiAllOptions")
_method("pointwise", f"{_SENTENCE}:Pointwise", "the default ranker on every sentence", "PointwiseOptions")
_method("cascade", f"{_SENTENCE}:Cascade", "the cascade on every sentence", "CascadeOptions")
_method("reader", f"{_READING}:Reader", "an extractive reader's span, every layer read", "ReaderOptions")
_method("tower", f"{_READING}:Tower", "the reader, each passage until it says no answer", "TowerOptions")
_method("skyline", f"{_READING}:Skyline", "the reader under --budget layers per passage", "SkylineOptions")
