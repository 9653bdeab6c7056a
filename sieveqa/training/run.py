"""The one driver that runs any technique's recipe on named datasets (TANDA's transfer-then-adapt is
two calls): the model to start from, the data checked before training starts, the Trainer."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

from torch import nn
from tqdm.auto import tqdm

from sieveqa import registry
from sieveqa.data.records import RankingExample
from sieveqa.errors import ConfigError
from sieveqa.io import check_output_dir, exclusive
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.models.zoo import SHIPPED, load_model
from sieveqa.training.batches import Objective, TrainData
from sieveqa.training.checkpoint import DATA, TARGETS, check_checkpoint, sample_digest, targets_digest
from sieveqa.training.config import TrainConfig
from sieveqa.training.recipe import Recipe
from sieveqa.training.trainer import Trainer, TrainState, seed_everything

log = logging.getLogger(__name__)

__all__ = ["init_model", "prepared", "run_trainer", "train_model"]


#: Model settings a saved model may be given when training continues from it (inputs, not weights),
#: where its config has them: a reader's windows (``stride``) as well as every model's input length.
INPUT_SETTINGS = ("max_length", "stride")
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
    architecture, so they are refused for one, except its inputs (``INPUT_SETTINGS``: the length, and
    the windows' stride where its config has one).
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
    inputs = {k: settings.pop(k) for k in INPUT_SETTINGS if k in settings and hasattr(other.config, k)}
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
    if config.low_rank is not None:
        kept = model.train_low_rank(config.low_rank, config.seed)
        if kept < 0.999:
            log.warning(
                "--low-rank %d keeps %.1f%% of what %s changed in its body: the run starts below it "
                "(start from a backbone, or a model stored at this rank, to lose nothing)",
                config.low_rank, 100 * kept, init,
            )  # fmt: skip
    # the model's settings too: a resume with other --head-weights (or any) trained on, silently
    run = {"train": train, "dev": dev, "init": init, "arch": arch} | asdict(recipe.options) | (settings or {})
    with prepared(recipe, train, out_dir, dev, config, resume, "training", run) as (sample, dev_examples):
        meta = run | {"n_examples": len(sample)}
        return run_trainer(
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
def prepared(
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
    dev examples, and that a checkpoint to resume has our settings and data (the sample's digest is
    added to ``run``, which the checkpoints record)."""
    with exclusive(out_dir, "training output folder"):
        source = train if isinstance(train, str) else ",".join(train)
        dev_examples = None
        if dev:  # before sampling, which may run teachers over the training pairs
            dev_examples = recipe.load(dev)
            recipe.check_dev(dev_examples, dev)
        sample = recipe.sample(recipe.load(train), config, source)
        if (digest := sample_digest(sample)) is not None:
            run[DATA] = digest
        if targets := recipe.targets():
            run[TARGETS] = targets_digest(targets)
        if resume:
            check_checkpoint(out_dir, config, len(sample), unit="n_examples", run=run)
        tqdm.write(f"{verb} on {sample.summary}")
        yield sample, dev_examples


def run_trainer(
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
    """Train ``model`` on ``data`` with the Trainer, scoring checkpoints on ``dev`` by the recipe."""

    def evaluate(m: nn.Module) -> dict[str, float]:
        assert isinstance(m, EncoderModel) and dev is not None
        return recipe.evaluate(m, dev)

    trainer = Trainer(model, objective, data, config, out_dir, evaluate=evaluate if dev else None, meta=meta)
    return trainer.train(resume=resume)
