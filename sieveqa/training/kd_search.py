"""Choosing the KD loss's α and τ on dev with Optuna (the MHS paper's grid), resumably.

The study lives in a SQLite file. It records everything a trial depends on (the arch, data, init,
teachers, settings, training config and the search space itself), so running the search again
resumes it, and a study of another search is refused instead of silently mixed in. A trial killed
mid-run is marked failed and its grid point queued again.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sieveqa.errors import ConfigError
from sieveqa.training.config import TrainConfig
from sieveqa.training.run import train_model

# The paper's search space (section 3.2): α ∈ {0, 0.1, 0.5, 0.9}, τ ∈ {1, 3, 5}.
SPACE: dict[str, list[float]] = {"alpha": [0.0, 0.1, 0.5, 0.9], "tau": [1.0, 3.0, 5.0]}
STUDY = "kd"


def _first_difference(saved: dict[str, Any], wanted: dict[str, Any]) -> str:
    return next(k for k in sorted(set(saved) | set(wanted)) if saved.get(k) != wanted.get(k))


def search_kd(
    arch: str,
    train: str,
    dev: str,
    init: str,
    out_dir: str | Path,
    teachers: list[str],
    trials: int,
    config: TrainConfig,
    settings: dict[str, Any] | None = None,
    space: dict[str, list[float]] | None = None,
) -> dict[str, Any]:
    """Run the α/τ study until it has ``trials`` finished trials; each trial trains a student into
    ``out_dir/trial-N``. Returns the best parameters, their dev metric and every finished trial."""
    import optuna

    space = space or SPACE
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    storage = f"sqlite:///{out_dir / 'study.sqlite'}"
    fixed = json.loads(
        json.dumps(
            {"arch": arch, "train": train, "dev": dev, "init": init, "teachers": teachers,
             "settings": settings or {}, "config": asdict(config), "space": space}
        )
    )  # fmt: skip
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.GridSampler(space, seed=0)
    study = optuna.create_study(
        study_name=STUDY, storage=storage, load_if_exists=True, direction="maximize", sampler=sampler
    )
    saved = study.user_attrs.get("search")
    if saved is None:
        study.set_user_attr("search", fixed)
    elif saved != fixed:
        key = _first_difference(saved, fixed)
        raise ConfigError(
            f"{out_dir / 'study.sqlite'} holds a study of another search (its {key!r} differs); "
            "give another --out"
        )
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        study._storage.set_trial_state_values(trial._trial_id, optuna.trial.TrialState.FAIL)
        study.enqueue_trial(trial.params)

    def objective(trial: optuna.Trial) -> float:
        params = {name: trial.suggest_categorical(name, values) for name, values in space.items()}
        try:
            state = train_model(
                arch, train, out_dir / f"trial-{trial.number}", init, dev, config, settings,
                {"teachers": teachers, **params}, resume=False,
            )  # fmt: skip
        except KeyboardInterrupt:  # a stop asked for (Ctrl-C, SIGTERM): Optuna marks the trial failed
            study.enqueue_trial(params)  # and its grid takes the point as visited: queued again
            raise
        return state.best_metric

    done = len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)))
    if trials > done:
        study.optimize(objective, n_trials=trials - done)
    finished = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    return {
        "best": study.best_params,
        "best_metric": study.best_value,
        "trials": [{"number": t.number, **t.params, "metric": t.value} for t in finished],
    }
