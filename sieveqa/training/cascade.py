"""Training the Cascade Transformer: its recipe (point-wise pairs, each batch's loss at one random
exit) and the retrofit that gives a trained cross-encoder exits without labels."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from sieveqa.data.records import RankingExample
from sieveqa.errors import ConfigError, DataFormatError
from sieveqa.evaluation.metrics import METRICS, evaluate_scores
from sieveqa.io import check_output_dir
from sieveqa.models.base import flatten_pairs, regroup
from sieveqa.models.cascade import CascadeTransformer
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.models.zoo import load_model
from sieveqa.training.batches import Objective
from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import CascadeBCE, ExitDistillation
from sieveqa.training.options import CascadeOptions
from sieveqa.training.pairs import LabelledPairs, PointwiseRecipe, every_pair, make_pairs
from sieveqa.training.run import prepared, run_trainer
from sieveqa.training.trainer import TrainState, seed_everything

__all__ = ["CascadeOptions", "CascadeRecipe", "RetrofitRecipe", "retrofit_cascade"]


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


class RetrofitRecipe(CascadeRecipe):
    """A retrofit's pairs: labelled data sampled as for training (positives, ``max_negatives``
    negatives), and where any candidate is unlabelled, ``max_negatives + 1`` candidates of each
    question (as many as a question with one answer gives; all of them without ``max_negatives``):
    the exits learn the model's own scores, so labels are never read."""

    def sample(self, examples: Sequence[RankingExample], config: TrainConfig, source: str) -> LabelledPairs:
        if all(c.label is not None for ex in examples for c in ex.candidates):
            pairs = make_pairs(examples, config.max_negatives, config.max_pairs, seed=config.seed)
        else:
            each = None if config.max_negatives is None else config.max_negatives + 1
            pairs = every_pair(examples, config.max_pairs, seed=config.seed, per_question=each)
        if not len(pairs):
            raise DataFormatError(f"{source}: no (question, candidate) pairs to retrofit on")
        return pairs


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
    if config.low_rank is not None:  # the command line has no such flag; the Python API ignored it
        raise ConfigError("low_rank: a retrofit trains exit heads only, its body is the ranker's")
    if config.metric is None:  # what picks the best heads on dev: the mean MAP over the exits
        config = replace(config, metric="map@mean")
    recipe = RetrofitRecipe()
    check_output_dir(out_dir, "--out")
    seed_everything(config.seed)
    teacher = load_model(base, CrossEncoder, want="a cross-encoder (what a retrofit needs)")
    teacher.configure(device=config.device)
    model = CascadeTransformer.from_cross_encoder(teacher, exits)
    recipe.check_metric(model, config.metric)
    run = {"retrofit_of": base, "train": train, "dev": dev, "tune_body": tune_body}
    with prepared(recipe, train, out_dir, dev, config, resume, "retrofitting", run) as (pairs, dev_examples):
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
        return run_trainer(model, recipe, objective, data, config, out_dir, dev_examples, meta, resume)
