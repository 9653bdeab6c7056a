"""Training recipes: what each technique trains on and with which objective, the one driver that runs
any of them on named datasets (TANDA's transfer-then-adapt is two calls), and the cascade retrofit.

A recipe has an options dataclass (its own training settings, which the CLI turns into flags), samples
labelled data from examples, tokenizes it for a model, names its objective, and says how dev
evaluation scores a model. ``sieveqa.registry`` names the recipe of each technique.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn
from tqdm.auto import tqdm

from sieveqa import registry
from sieveqa.data.records import RankingExample
from sieveqa.data.registry import load_datasets
from sieveqa.errors import ConfigError, DataFormatError
from sieveqa.evaluation.metrics import METRICS, evaluate_scores, qrels_from_examples
from sieveqa.io import check_output_dir, exclusive
from sieveqa.models.base import Ranker, flatten_pairs, regroup
from sieveqa.models.cascade import CascadeTransformer
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.models.hashing import HashingModel
from sieveqa.models.pair_model import PairModel
from sieveqa.models.zoo import SHIPPED, load_model
from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import CascadeBCE, ExitDistillation, PointwiseBCE, TripletHinge
from sieveqa.training.pairs import LabelledPairs, make_pairs
from sieveqa.training.trainer import (
    Objective,
    PairTensors,
    TrainData,
    Trainer,
    TrainState,
    check_checkpoint,
    seed_everything,
)
from sieveqa.training.triplets import TextTriplets, TripletBatches, make_triplets


@dataclass
class NoOptions:
    """This recipe has no options of its own."""


class Recipe(ABC):
    """How one technique trains; ``options`` are its own settings (``options_class``)."""

    options_class: ClassVar[type] = NoOptions
    # The dev metric that picks the best checkpoint unless --metric says otherwise.
    default_metric: ClassVar[str] = "map"

    def __init__(self, options: Any = None) -> None:
        self.options = options if options is not None else self.options_class()

    def load(self, names: str | list[str]) -> list[Any]:
        """The examples of the named datasets (default: ranking datasets, ``sieveqa.data.registry``)."""
        return load_datasets(names)

    def check_dev(self, examples: Sequence[Any], name: str) -> None:
        """Refuse dev data ``evaluate`` cannot score (default: every candidate must be labelled)."""
        qrels_from_examples(examples, name)

    def prepare(self, model: EncoderModel) -> None:
        """Adjust a freshly initialised model before training (default: nothing)."""
        return None

    @abstractmethod
    def sample(self, examples: Sequence[RankingExample], config: TrainConfig, source: str) -> Any:
        """Labelled training data as texts (sized, so a checkpoint can be checked before tokenizing)."""

    @abstractmethod
    def tensors(self, model: EncoderModel, sample: Any) -> TrainData:
        """The sample tokenized for ``model``."""

    @abstractmethod
    def objective(self, model: EncoderModel) -> Objective:
        """The loss the Trainer minimizes."""

    def evaluate(self, model: EncoderModel, dev: Sequence[RankingExample]) -> dict[str, float]:
        """Dev metrics that pick the best checkpoint (the model ranks the dev set)."""
        assert isinstance(model, Ranker)
        return evaluate_scores(dev, model.score(dev)).mean

    def metric_names(self, model: EncoderModel) -> list[str]:
        """The names ``evaluate`` reports for ``model``: what ``--metric`` may choose."""
        return list(METRICS)

    def check_metric(self, model: EncoderModel, metric: str) -> None:
        names = self.metric_names(model)
        if metric not in names:
            raise ConfigError(f"--metric must be one of {', '.join(names)} for this model, got {metric!r}")


class PointwiseRecipe(Recipe):
    """(question, candidate, 0/1) pairs, every positive plus sampled negatives; binary cross-entropy."""

    def sample(self, examples: Sequence[RankingExample], config: TrainConfig, source: str) -> LabelledPairs:
        pairs = make_pairs(examples, config.max_negatives, config.max_pairs, seed=config.seed)
        if not len(pairs):
            raise DataFormatError(f"{source}: no labelled candidates to train on")
        if not pairs.n_positive:
            raise DataFormatError(f"{source}: no candidate is labelled correct (1); nothing to learn from")
        return pairs

    def tensors(self, model: EncoderModel, sample: LabelledPairs) -> TrainData:
        assert isinstance(model, PairModel)
        features = model.featurize(sample.questions, sample.texts)
        return PairTensors(features, torch.tensor(sample.labels, dtype=torch.float32), model.pad_id)

    def objective(self, model: EncoderModel) -> Objective:
        return PointwiseBCE()


@dataclass
class CascadeOptions:
    """Options of cascade training."""

    exit_sampling: str = field(
        default="random",
        metadata={"help": "cascade: 'random' (one exit per batch, the paper) or 'all' exits"},
    )

    def __post_init__(self) -> None:
        if self.exit_sampling not in ("random", "all"):
            raise ConfigError(f"exit_sampling must be 'random' or 'all', got {self.exit_sampling!r}")


class CascadeRecipe(PointwiseRecipe):
    """Pointwise pairs, each batch's loss taken at one random exit (or all); dev metrics per exit."""

    options_class = CascadeOptions

    def objective(self, model: EncoderModel) -> Objective:
        assert isinstance(model, CascadeTransformer)
        return CascadeBCE(len(model.exits), self.options.exit_sampling)

    def evaluate(self, model: EncoderModel, dev: Sequence[RankingExample]) -> dict[str, float]:
        """The last exit's metrics, plus every exit's MAP and P@1 (``map@L2``, ``p@1@L2``, ...) and
        their mean MAP (``map@mean``)."""
        assert isinstance(model, CascadeTransformer)
        scores, _ = model.score_matrix(*flatten_pairs(dev))
        per_exit = [
            evaluate_scores(dev, regroup(dev, scores[:, i].tolist())).mean for i in range(len(model.exits))
        ]
        out = dict(per_exit[-1])
        for layer, mean in zip(model.exits, per_exit, strict=True):
            out.update({f"map@L{layer}": mean["map"], f"p@1@L{layer}": mean["p@1"]})
        out["map@mean"] = sum(m["map"] for m in per_exit) / len(per_exit)
        return out

    def metric_names(self, model: EncoderModel) -> list[str]:
        assert isinstance(model, CascadeTransformer)
        per_exit = [f"{m}@L{layer}" for layer in model.exits for m in ("map", "p@1")]
        return [*METRICS, *per_exit, "map@mean"]


@dataclass
class TripletOptions:
    """Options of triplet training (HAS and its BERT baselines)."""

    negatives_per_positive: int = field(
        default=4, metadata={"help": "has/bert-*: triplets per positive answer (negatives drawn at random)"}
    )

    def __post_init__(self) -> None:
        if self.negatives_per_positive < 1:
            raise ConfigError(f"negatives_per_positive must be >= 1, got {self.negatives_per_positive}")


class TripletRecipe(Recipe):
    """(question, positive, negative) triplets; the hinge loss with HAS's binary constraint."""

    options_class = TripletOptions

    def sample(self, examples: Sequence[RankingExample], config: TrainConfig, source: str) -> TextTriplets:
        triplets = make_triplets(examples, self.options.negatives_per_positive, config.max_pairs, config.seed)
        if not len(triplets):
            raise DataFormatError(f"{source}: no question has both a positive and a negative answer")
        return triplets

    def tensors(self, model: EncoderModel, sample: TextTriplets) -> TrainData:
        assert isinstance(model, HashingModel)
        return TripletBatches(
            model.featurize_questions(sample.questions),
            model.featurize_answers(sample.positives),
            model.featurize_answers(sample.negatives),
            model.pad_id,
        )

    def objective(self, model: EncoderModel) -> Objective:
        return TripletHinge()


#: Model settings a saved model may be given when training continues from it (inputs, not weights).
INPUT_SETTINGS = ("max_length",)
#: Model settings that give a saved model one more head, trained from scratch (EASI's null option).
ADDED_HEADS = ("null",)


def _is_model_folder(init: str) -> bool:
    if init in SHIPPED:
        return True
    return (Path(init) / "config.json").is_file() and (Path(init) / "model.safetensors").is_file()


def init_model(
    init: str, arch: str = "cross-encoder", settings: dict[str, Any] | None = None
) -> EncoderModel:
    """A model to train: from a saved sieveqa folder (adapt step) or a backbone name (fresh heads).

    ``settings`` are model-config fields (``exits``, ``beta``, ...); a saved model brings its own
    architecture, so they are refused for one, except the input length (``INPUT_SETTINGS``).
    A cascade may start from a cross-encoder folder: it keeps that body and head (as the last exit).
    """
    settings = dict(settings or {})
    cls = registry.for_arch(arch).model_class()
    if not _is_model_folder(init):
        return cls(cls.config_class.for_arch(arch, backbone=init, **settings))
    if settings.get("train_layers") is not None:
        raise ConfigError(f"--train-layers starts from a backbone (--init NAME), not the saved model {init}")
    other = load_model(init)
    if other.kind != cls.kind:
        return cls.start_from(other, cls.config_class.for_arch(arch, **settings))
    inputs = {k: settings.pop(k) for k in INPUT_SETTINGS if k in settings}
    heads = {k: v for k in ADDED_HEADS if (v := settings.pop(k, None)) and not getattr(other.config, k)}
    if settings:
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in sorted(settings))
        raise ConfigError(f"{flags} cannot change a saved model's architecture; {init} brings its own")
    if inputs:
        # Input settings change what the model reads, not its weights (PR reads 256-token passages
        # with the default ranker's body): rebuilt through the config so its checks run.
        other.config = type(other.config)(**{**asdict(other.config), **inputs})
        other.check_positions()
    if heads:
        other = _with_heads(other, cls, heads)
    # The arch must be the saved model's (bert-pooling cannot continue a HAS model).
    implied = asdict(cls.config_class.for_arch(arch))
    defaults = asdict(cls.config_class())
    saved = asdict(other.config)
    clash = [k for k in implied if implied[k] != defaults[k] and saved.get(k) != implied[k]]
    if clash:
        raise ConfigError(f"{init} is not a {arch!r} model ({', '.join(f'{k}={saved[k]!r}' for k in clash)})")
    return other


def _with_heads(other: EncoderModel, cls: type[EncoderModel], heads: dict[str, Any]) -> EncoderModel:
    """``other`` rebuilt with the new heads ``heads`` turn on, every weight it had kept."""
    model = cls(type(other.config)(**{**asdict(other.config), **heads}))
    missing, unexpected = model.load_state_dict(other.state_dict(), strict=False)
    new = {n for n, _ in model.named_parameters()} - set(other.state_dict())
    if unexpected or set(missing) != new:
        raise ConfigError(f"{', '.join(heads)} cannot be added to this {other.kind} model")
    model.meta, model.path = other.meta, other.path
    return model.to(other.device)


def _options(recipe_class: type[Recipe], options: dict[str, Any] | None) -> Any:
    names = {f.name for f in fields(recipe_class.options_class)}
    unknown = sorted(set(options or {}) - names)
    if unknown:
        raise ConfigError(f"unknown option(s) {unknown} for this technique; known: {sorted(names)}")
    return recipe_class.options_class(**(options or {}))


def train_model(
    arch: str,
    train: str | list[str],
    out_dir: str | Path,
    init: str = "minilm-l6",
    dev: str | None = "wikiqa:dev",
    config: TrainConfig | None = None,
    settings: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    resume: bool = True,
) -> TrainState:
    """Train the technique ``arch`` selects on the named datasets; the best dev model lands in
    ``out_dir/best``. The model and its settings, then the data, labels and a checkpoint to resume
    are checked before training starts.
    """
    technique = registry.for_arch(arch)
    recipe = technique.recipe_class()(_options(technique.recipe_class(), options))
    config = config or TrainConfig()
    if config.metric is None:
        config = replace(config, metric=recipe.default_metric)
    check_output_dir(out_dir, "--out")
    seed_everything(config.seed)
    model = init_model(init, arch, settings).configure(device=config.device)
    recipe.prepare(model)
    recipe.check_metric(model, config.metric)
    run = {"train": train, "dev": dev, "init": init, "arch": arch} | asdict(recipe.options)
    with _prepared(recipe, train, out_dir, dev, config, resume, "training", run) as (sample, dev_examples):
        meta = run | {"n_examples": len(sample)}
        return _run(
            model,
            recipe,
            recipe.objective(model),
            recipe.tensors(model, sample),
            config,
            out_dir,
            dev_examples,
            meta,
            resume,
        )


@contextlib.contextmanager
def _prepared(
    recipe: Recipe,
    train: str | list[str],
    out_dir: str | Path,
    dev: str | None,
    config: TrainConfig,
    resume: bool,
    verb: str,
    run: dict[str, Any],
) -> Iterator[tuple[Any, list[RankingExample] | None]]:
    """The data side of a run, its output folder locked throughout: the training sample, labelled
    dev examples, and that a checkpoint to resume has our settings."""
    with exclusive(out_dir, "training output folder"):
        source = train if isinstance(train, str) else ",".join(train)
        dev_examples = None
        if dev:  # before sampling, which may run teachers over the training pairs
            dev_examples = recipe.load(dev)
            recipe.check_dev(dev_examples, dev)
        sample = recipe.sample(recipe.load(train), config, source)
        if resume:
            check_checkpoint(out_dir, config, len(sample), unit="n_examples", run=run)
        tqdm.write(f"{verb} on {sample.summary}")
        yield sample, dev_examples


def _run(
    model: EncoderModel,
    recipe: Recipe,
    objective: Objective,
    data: TrainData,
    config: TrainConfig,
    out_dir: str | Path,
    dev: list[RankingExample] | None,
    meta: dict[str, Any],
    resume: bool,
) -> TrainState:
    def evaluate(m: nn.Module) -> dict[str, float]:
        assert isinstance(m, EncoderModel) and dev is not None
        return recipe.evaluate(m, dev)

    trainer = Trainer(model, objective, data, config, out_dir, evaluate=evaluate if dev else None, meta=meta)
    return trainer.train(resume=resume)


def retrofit_cascade(
    base: str,
    train: str | list[str],
    out_dir: str | Path,
    exits: Sequence[int] | None = None,
    dev: str | None = "wikiqa:dev,trecqa:dev-clean",
    config: TrainConfig | None = None,
    tune_body: bool = False,
    resume: bool = True,
) -> TrainState:
    """Give a trained cross-encoder exits: fit new exit heads to reproduce its score (labels unused).

    With the body frozen (default) only the new heads learn, from the model's own last exit; the
    last exit keeps the cross-encoder's head, so at α = 0 the cascade ranks exactly as it did.
    The saved cascade then holds only the heads and reads the body from ``base`` when loaded.
    ``tune_body`` also lets the body move, fitting every exit to the original model's logits.
    The best checkpoint is picked by dev ``map@mean`` (mean MAP over the exits) unless
    ``config.metric`` says otherwise.
    """
    config = config or TrainConfig(metric="map@mean")
    recipe = CascadeRecipe()
    check_output_dir(out_dir, "--out")
    seed_everything(config.seed)
    teacher = load_model(base, CrossEncoder, want="a cross-encoder (what a retrofit needs)")
    teacher.configure(device=config.device)
    model = CascadeTransformer.from_cross_encoder(teacher, exits)
    recipe.check_metric(model, config.metric)
    run = {"retrofit_of": base, "train": train, "dev": dev, "tune_body": tune_body}
    with _prepared(recipe, train, out_dir, dev, config, resume, "retrofitting", run) as (pairs, dev_examples):
        if tune_body:
            teacher.configure(batch_size=128)
            labels = teacher.score_pairs(pairs.questions, pairs.texts, progress=config.progress)
        else:
            model.freeze_body()
            model.share_body(base)  # saved as heads only, over the base model's body
            labels = [0.0] * len(pairs)
        meta = run | {"n_examples": len(pairs)}
        data = recipe.tensors(model, LabelledPairs(pairs.questions, pairs.texts, labels))
        objective = ExitDistillation("labels" if tune_body else "self")
        return _run(model, recipe, objective, data, config, out_dir, dev_examples, meta, resume)
