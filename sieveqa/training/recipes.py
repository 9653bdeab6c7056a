"""Training recipes: rankers on named datasets (TANDA's transfer-then-adapt is two calls), and the
retrofit that turns a trained cross-encoder into a cascade."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

from sieveqa.batching import PairFeatures
from sieveqa.data.records import RankingExample
from sieveqa.data.registry import load_datasets
from sieveqa.evaluation.metrics import evaluate_scores
from sieveqa.models._saving import model_kind
from sieveqa.models.base import flatten_pairs, regroup
from sieveqa.models.cascade import CascadeConfig, CascadeTransformer
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.hashing import HashingConfig, HashingModel
from sieveqa.models.pair_model import PairModel, PairModelConfig
from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import CascadeBCE, ExitDistillation, PointwiseBCE, TripletHinge
from sieveqa.training.pairs import make_pairs
from sieveqa.training.trainer import (
    LabeledPairs,
    Objective,
    TrainData,
    Trainer,
    TrainState,
    seed_everything,
)
from sieveqa.training.triplets import TripletBatches, make_triplets

ARCHITECTURES: dict[str, type[PairModel]] = {
    "cross-encoder": CrossEncoder,
    "cascade": CascadeTransformer,
    "hashing": HashingModel,
}


def _is_model_folder(init: str) -> bool:
    return (Path(init) / "config.json").is_file() and (Path(init) / "model.safetensors").is_file()


def init_model(
    init: str, arch: str = "cross-encoder", model_config: PairModelConfig | None = None
) -> PairModel:
    """A model to train: from a saved sieveqa folder (adapt step) or a backbone name (fresh heads).

    A cascade may start from a cross-encoder folder: it keeps that body and head (as the last exit).
    """
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {arch!r}; known: {', '.join(ARCHITECTURES)}")
    cls = ARCHITECTURES[arch]
    if _is_model_folder(init):
        kind = model_kind(init)
        if kind == cls.kind:
            return cls.from_pretrained(init).train()
        if kind == CrossEncoder.kind and cls is CascadeTransformer:
            exits = model_config.exits if isinstance(model_config, CascadeConfig) else None
            return CascadeTransformer.from_cross_encoder(CrossEncoder.from_pretrained(init), exits).train()
        raise ValueError(f"{init} holds a {kind!r} model; cannot start a {arch!r} from it")
    config = model_config or cls.config_class()
    config.backbone = init
    return cls(config)


def dev_evaluator(model: PairModel, dev_examples: Sequence[RankingExample]) -> dict[str, float]:
    """Dev metrics; for a cascade those of its last exit, plus every exit's MAP and P@1 (``map@L2``,
    ``p@1@L2``, ...) and their mean MAP (``map@mean``)."""
    if not isinstance(model, CascadeTransformer):
        return evaluate_scores(dev_examples, model.score(dev_examples)).mean
    scores = model.exit_scores(*flatten_pairs(dev_examples))
    per_exit = [
        evaluate_scores(dev_examples, regroup(dev_examples, scores[:, i].tolist())).mean
        for i in range(len(model.exits))
    ]
    out = dict(per_exit[-1])
    for layer, mean in zip(model.exits, per_exit, strict=True):
        out.update({f"map@L{layer}": mean["map"], f"p@1@L{layer}": mean["p@1"]})
    out["map@mean"] = sum(m["map"] for m in per_exit) / len(per_exit)
    return out


def train_ranker(
    train: str | list[str],
    out_dir: str | Path,
    init: str = "minilm-l6",
    dev: str | None = "wikiqa:dev",
    config: TrainConfig | None = None,
    model_config: PairModelConfig | None = None,
    arch: str = "cross-encoder",
    exit_sampling: str = "random",
    resume: bool = True,
) -> TrainState:
    """Train a ranker on the named datasets; the best dev model lands in ``out_dir/best``.

    ``arch="cascade"`` trains the exits with ``CascadeBCE(exit_sampling)``: one random exit per batch
    (the paper) or the mean of all exits' losses (``"all"``).
    """
    config = config or TrainConfig()
    if exit_sampling not in ("random", "all"):
        raise ValueError(f"exit sampling must be 'random' or 'all', got {exit_sampling!r}")
    seed_everything(config.seed)
    model = init_model(init, arch, model_config)
    examples = load_datasets(train)
    pairs = make_pairs(examples, config.max_negatives, config.max_pairs, seed=config.seed)
    tqdm.write(f"training on {len(pairs)} pairs ({pairs.n_positive} positive) from {len(examples)} questions")
    features = model.featurize(pairs.questions, pairs.texts)
    objective: Objective = (
        CascadeBCE(len(model.exits), exit_sampling)
        if isinstance(model, CascadeTransformer)
        else PointwiseBCE()
    )
    meta: dict[str, Any] = {"train": train, "dev": dev, "init": init, "n_pairs": len(pairs)}
    if isinstance(model, CascadeTransformer):
        meta["exit_sampling"] = exit_sampling
    return _train(
        model, objective, _labelled(model, features, pairs.labels), config, out_dir, dev, meta, resume
    )


def _labelled(model: PairModel, features: PairFeatures, labels: Sequence[float]) -> LabeledPairs:
    return LabeledPairs(features, torch.tensor(labels, dtype=torch.float32), model.tokenizer.pad_token_id)


def _train(
    model: PairModel,
    objective: Objective,
    data: TrainData,
    config: TrainConfig,
    out_dir: str | Path,
    dev: str | None,
    meta: dict[str, Any],
    resume: bool,
) -> TrainState:
    """Run the one Trainer with dev evaluation by ``dev_evaluator`` (none without ``dev``)."""
    dev_examples = load_datasets(dev) if dev else None

    def evaluate(m: nn.Module) -> dict[str, float]:
        assert isinstance(m, PairModel) and dev_examples is not None
        return dev_evaluator(m, dev_examples)

    trainer = Trainer(
        model, objective, data, config, out_dir, evaluate=evaluate if dev_examples else None, meta=meta
    )
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
    seed_everything(config.seed)
    teacher = CrossEncoder.from_pretrained(base)
    model = CascadeTransformer.from_cross_encoder(teacher, exits)
    pairs = make_pairs(load_datasets(train), config.max_negatives, config.max_pairs, seed=config.seed)
    tqdm.write(f"retrofitting on {len(pairs)} pairs")
    if tune_body:
        teacher.batch_size = 128
        labels = teacher.score_pairs(pairs.questions, pairs.texts, progress=config.progress)
    else:
        model.freeze_body()
        model.share_body(base)  # saved as heads only, over the base model's body
        labels = [0.0] * len(pairs)
    meta: dict[str, Any] = {
        "retrofit_of": base,
        "train": train,
        "dev": dev,
        "tune_body": tune_body,
        "n_pairs": len(pairs),
    }
    objective = ExitDistillation("labels" if tune_body else "self")
    features = model.featurize(pairs.questions, pairs.texts)
    return _train(model, objective, _labelled(model, features, labels), config, out_dir, dev, meta, resume)


def train_hashing(
    train: str | list[str],
    out_dir: str | Path,
    init: str = "minilm-l6",
    dev: str | None = "wikiqa:dev",
    config: TrainConfig | None = None,
    model_config: HashingConfig | None = None,
    negatives_per_positive: int = 4,
    resume: bool = True,
) -> TrainState:
    """Train HAS or one of its baselines (``HashingConfig.variant``) with the triplet hinge loss;
    ``config.max_pairs`` caps the triplets. The best dev model lands in ``out_dir/best``."""
    config = config or TrainConfig()
    seed_everything(config.seed)
    model = init_model(init, "hashing", model_config)
    assert isinstance(model, HashingModel)
    triplets = make_triplets(load_datasets(train), negatives_per_positive, config.max_pairs, config.seed)
    if not len(triplets):
        raise ValueError(f"{train}: no question has both a positive and a negative answer")
    tqdm.write(f"training {model.config.store_kind}-store model on {len(triplets)} triplets")
    data = TripletBatches(
        model.featurize_questions(triplets.questions),
        model.featurize_answers(triplets.positives),
        model.featurize_answers(triplets.negatives),
        model.tokenizer.pad_token_id,
    )
    meta: dict[str, Any] = {
        "train": train,
        "dev": dev,
        "init": init,
        "n_triplets": len(triplets),
        "negatives_per_positive": negatives_per_positive,
    }
    return _train(model, TripletHinge(), data, config, out_dir, dev, meta, resume)
