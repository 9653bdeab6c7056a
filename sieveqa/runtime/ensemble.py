"""Ensembles of rankers: a weighted sum of their scores (the MHS paper's ensemble baselines).

An ensemble is a folder holding ``ensemble.json``: its members (shipped names or model folders,
stored relative to the ensemble's folder so the two can move together) and one weight each, usually
tuned on dev by ``sieveqa tune-ensemble``. It loads wherever a model does (``sieveqa eval --model
runs/ensemble``) and costs what its members with a weight above 0 cost together. Members score every
candidate with their final head, nothing pruned (a cascade's policy is not applied), so weights tuned
on cached scores mean the same at run time.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sieveqa import registry
from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError, ModelFormatError
from sieveqa.io import atomic_write_json, read_json_object
from sieveqa.models._saving import CONFIG, model_kind
from sieveqa.models.base import Ranker, RankResult
from sieveqa.models.pair_model import PairModel
from sieveqa.models.zoo import SHIPPED, load_model, resolve_model

FILE = "ensemble.json"
FORMAT = "sieveqa-ensemble/1"


def is_ensemble(path: str | Path) -> bool:
    """Whether ``path`` is an ensemble folder."""
    return (Path(path) / FILE).is_file()


def check_member(name: str) -> None:
    """Refuse, before any scoring, a member that is not a saved model ranking (question, text) pairs."""
    if is_ensemble(name):
        raise ConfigError(f"ensemble member {name} is itself an ensemble; list its members instead")
    kind = model_kind(resolve_model(name))
    if not issubclass(registry.technique(kind).model_class(), PairModel):
        raise ConfigError(f"ensemble member {name} is a {kind} model, not a ranker of pairs")


def weighted_sum(columns: Sequence[Sequence[float]], weights: Sequence[float]) -> list[float]:
    """The weighted sum of one score list per member."""
    rows = zip(*columns, strict=True)
    return [sum(w * s for w, s in zip(weights, row, strict=True)) for row in rows]


@dataclass(frozen=True)
class EnsembleSpec:
    """Members and their weights; ``tuning`` records how the weights were chosen."""

    members: tuple[str, ...]
    weights: tuple[float, ...]
    tuning: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.members) < 2:
            raise ConfigError(f"an ensemble needs at least 2 members, got {len(self.members)}")
        if len(set(self.members)) != len(self.members):
            raise ConfigError(f"an ensemble lists each member once, got {list(self.members)}")
        if len(self.weights) != len(self.members):
            raise ConfigError(f"{len(self.weights)} weights for {len(self.members)} ensemble members")
        if not all(math.isfinite(w) and w >= 0 for w in self.weights) or not any(self.weights):
            raise ConfigError(f"ensemble weights must be >= 0 and not all 0, got {list(self.weights)}")

    @property
    def active(self) -> list[tuple[str, float]]:
        """The members with a weight above 0: the only ones that run."""
        return [(m, w) for m, w in zip(self.members, self.weights, strict=True) if w > 0]

    def save(self, folder: str | Path) -> Path:
        """Write ``folder/ensemble.json`` atomically; a folder that holds a model is refused."""
        folder = Path(folder)
        if (folder / CONFIG).exists():
            raise ConfigError(f"{folder} holds a model; write the ensemble to a folder of its own")
        members = [m if m in SHIPPED else os.path.relpath(resolve_model(m), folder) for m in self.members]
        data = {"format": FORMAT, "members": members, "weights": list(self.weights), "tuning": self.tuning}
        return atomic_write_json(folder / FILE, data)

    @classmethod
    def load(cls, folder: str | Path) -> EnsembleSpec:
        """Read an ensemble folder, members resolved against it; a wrong file is refused naming it."""
        path = Path(folder) / FILE
        raw = read_json_object(path)
        if raw.get("format") != FORMAT:
            raise ConfigError(f"{path}: not an ensemble file (format {FORMAT} expected)")
        members, weights, tuning = raw.get("members"), raw.get("weights"), raw.get("tuning", {})
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise ConfigError(f"{path}: field 'members' must be a list of model names or folders")
        if not isinstance(weights, list) or not all(isinstance(w, int | float) for w in weights):
            raise ConfigError(f"{path}: field 'weights' must be a list of numbers")
        if not isinstance(tuning, dict):
            raise ConfigError(f"{path}: field 'tuning' must be an object")
        found = tuple(m if m in SHIPPED else str((Path(folder) / m).resolve()) for m in members)
        try:
            return cls(found, tuple(float(w) for w in weights), tuning)
        except ConfigError as err:
            raise ConfigError(f"{path}: {err}") from None


class EnsembleRanker(Ranker):
    """Runs the weighted members on the same questions and ranks by the weighted sum of their scores."""

    def __init__(self, spec: EnsembleSpec, members: Sequence[PairModel]) -> None:
        if len(members) != len(spec.active):
            raise ConfigError(f"{len(members)} models for {len(spec.active)} weighted ensemble members")
        self.spec = spec
        self.members = list(members)
        self.weights = [w for _, w in spec.active]

    @classmethod
    def load(cls, folder: str | Path, **settings: Any) -> EnsembleRanker:
        """The ensemble in ``folder``, its weighted members loaded and configured with ``settings``."""
        spec = EnsembleSpec.load(folder)
        models = []
        for name, _ in spec.active:
            try:
                check_member(name)
                models.append(load_model(name).configure(**settings))
            except (ConfigError, ModelFormatError) as err:
                raise ConfigError(f"{Path(folder) / FILE}: member {name}: {err}") from None
        return cls(spec, [m for m in models if isinstance(m, PairModel)])

    @property
    def device(self) -> Any:
        return self.members[0].device

    @property
    def precision(self) -> str:
        return self.members[0].precision

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        started = time.perf_counter()
        cost = Cost()
        results = [m.run(examples, progress) for m in self.members]
        for r in results:
            cost.add(r.cost)
        per_example = zip(*(r.scores for r in results), strict=True)
        scores = [weighted_sum(per_member, self.weights) for per_member in per_example]
        cost.seconds = time.perf_counter() - started
        return RankResult(scores, cost)
