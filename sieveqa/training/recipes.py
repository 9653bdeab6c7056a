"""Training recipes: the cross-encoder on named datasets, and TANDA's transfer-then-adapt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn
from tqdm.auto import tqdm

from sieveqa.data.registry import load_datasets
from sieveqa.evaluation.metrics import evaluate_scores
from sieveqa.models.cross_encoder import CrossEncoder, CrossEncoderConfig
from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import PointwiseBCE
from sieveqa.training.pairs import make_pairs
from sieveqa.training.trainer import Trainer, TrainState, seed_everything


def init_cross_encoder(init: str, model_config: CrossEncoderConfig | None = None) -> CrossEncoder:
    """A cross-encoder from a saved sieveqa model folder (adapt step) or a backbone name (fresh head)."""
    if (Path(init) / "config.json").is_file() and (Path(init) / "model.safetensors").is_file():
        return CrossEncoder.from_pretrained(init).train()
    config = model_config or CrossEncoderConfig()
    config.backbone = init
    return CrossEncoder(config)


def train_cross_encoder(
    train: str | list[str],
    out_dir: str | Path,
    init: str = "minilm-l6",
    dev: str | None = "wikiqa:dev",
    config: TrainConfig | None = None,
    model_config: CrossEncoderConfig | None = None,
    resume: bool = True,
) -> TrainState:
    """Train a pointwise cross-encoder on the named datasets; the best dev model lands in out_dir/best."""
    config = config or TrainConfig()
    seed_everything(config.seed)
    model = init_cross_encoder(init, model_config)
    examples = load_datasets(train)
    pairs = make_pairs(examples, config.max_negatives, config.max_pairs, seed=config.seed)
    tqdm.write(f"training on {len(pairs)} pairs ({pairs.n_positive} positive) from {len(examples)} questions")
    features = model.featurize(pairs.questions, pairs.texts)
    dev_examples = load_datasets(dev) if dev else None

    def evaluate(m: nn.Module) -> dict[str, float]:
        assert isinstance(m, CrossEncoder)
        return evaluate_scores(dev_examples, m.score(dev_examples)).mean

    meta: dict[str, Any] = {"train": train, "dev": dev, "init": init, "n_pairs": len(pairs)}
    trainer = Trainer(
        model,
        PointwiseBCE(),
        features,
        pairs.labels,
        config,
        out_dir,
        evaluate=evaluate if dev_examples else None,
        pad_id=model.tokenizer.pad_token_id,
        meta=meta,
    )
    return trainer.train(resume=resume)
