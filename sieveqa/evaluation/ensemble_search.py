"""Tuning an ensemble's weights on dev with Optuna, as the MHS paper tunes its ensemble baselines.

Each member scores the dev set once (``cached_scores``); every trial is then a weighted sum of those
columns and one metric computation, so hundreds of trials cost seconds. The first trials are the
plain mean and each member alone, so the tuned ensemble is never worse on dev than any of them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sieveqa.data.records import RankingExample
from sieveqa.errors import ConfigError
from sieveqa.evaluation.metrics import METRICS, evaluate_scores, qrels_from_examples
from sieveqa.evaluation.score_cache import cached_scores
from sieveqa.models.base import regroup
from sieveqa.runtime.ensemble import EnsembleSpec, check_member, weighted_sum


@dataclass
class EnsembleTuning:
    """The tuned ensemble, its dev metric, and each member's alone."""

    spec: EnsembleSpec
    metric: str
    value: float
    members: dict[str, float]


def member_columns(
    members: Sequence[str], dataset: str, examples: Sequence[RankingExample]
) -> list[list[float]]:
    """Each member's final score of every candidate (computed once per model and dataset, cached)."""
    return [cached_scores(m, dataset, examples, progress=True)[:, -1].tolist() for m in members]


def _metric(examples: Sequence[RankingExample], flat: list[float], metric: str) -> float:
    return evaluate_scores(examples, regroup(examples, flat)).mean[metric]


def tune_ensemble(
    members: Sequence[str],
    dataset: str,
    examples: Sequence[RankingExample],
    trials: int = 200,
    metric: str = "map",
    seed: int = 0,
) -> EnsembleTuning:
    """Weights in [0, 1] per member maximising ``metric`` on ``examples`` (TPE, ``trials`` trials)."""
    import optuna

    if len(members) < 2:
        raise ConfigError(f"--members names {len(members)} model(s); an ensemble needs at least 2")
    if metric not in METRICS:
        raise ConfigError(f"--metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if trials < len(members) + 1:
        raise ConfigError(
            f"--trials must be at least {len(members) + 1} (equal weights, then each member alone), "
            f"got {trials}"
        )
    for member in members:
        check_member(member)
    qrels_from_examples(examples, dataset, to_tune=True)
    columns = member_columns(members, dataset, examples)
    alone = {m: _metric(examples, c, metric) for m, c in zip(members, columns, strict=True)}
    names = [f"w{i}" for i in range(len(members))]

    def objective(trial: optuna.Trial) -> float:
        weights = [trial.suggest_float(n, 0.0, 1.0) for n in names]
        return _metric(examples, weighted_sum(columns, weights), metric) if any(weights) else 0.0

    optuna.logging.set_verbosity(logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    study.enqueue_trial(dict.fromkeys(names, 1.0))
    for name in names:
        study.enqueue_trial({n: float(n == name) for n in names})
    study.optimize(objective, n_trials=trials)
    best = [study.best_params[n] for n in names]
    total = sum(best)
    tuning: dict[str, Any] = {"dataset": dataset, "metric": metric, "value": study.best_value}
    tuning["trials"] = trials
    spec = EnsembleSpec(tuple(members), tuple(round(w / total, 6) for w in best), tuning)
    return EnsembleTuning(spec, metric, study.best_value, alone)
