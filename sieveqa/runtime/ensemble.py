"""Ensembles of rankers: a weighted sum of their scores (the MHS paper's ensemble baselines).

An ensemble is a folder holding ``ensemble.json``: its members (shipped names or model folders) and
one weight each, usually tuned on dev by ``sieveqa tune-ensemble``. It loads wherever a model does
(``sieveqa eval --model runs/ensemble``) and costs what all of its members cost together. Members
score every candidate with their final head, nothing pruned (a cascade's policy is not applied), so
the weights tuned on cached scores mean the same at run time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.io import atomic_write_json, read_json_object
from sieveqa.models.base import Ranker, RankResult
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.models.pair_model import PairModel
from sieveqa.models.zoo import model_ref

FILE = "ensemble.json"
FORMAT = "sieveqa-ensemble/1"


def is_ensemble(path: str | Path) -> bool:
    """Whether ``path`` is an ensemble folder."""
    return (Path(path) / FILE).is_file()


@dataclass(frozen=True)
class EnsembleSpec:
    """Members and their weights; ``tuning`` records how the weights were chosen."""

    members: tuple[str, ...]
    weights: tuple[float, ...]
    tuning: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.members) < 2:
            raise ConfigError(f"an ensemble needs at least 2 members, got {len(self.members)}")
        if len(self.weights) != len(self.members):
            raise ConfigError(f"{len(self.weights)} weights for {len(self.members)} ensemble members")
        if not all(math.isfinite(w) and w >= 0 for w in self.weights) or not any(self.weights):
            raise ConfigError(f"ensemble weights must be >= 0 and not all 0, got {list(self.weights)}")

    def combine(self, columns: Sequence[Sequence[float]]) -> list[float]:
        """The weighted sum of one score list per member."""
        rows = zip(*columns, strict=True)
        return [sum(w * s for w, s in zip(self.weights, row, strict=True)) for row in rows]

    def save(self, folder: str | Path) -> Path:
        """Write ``folder/ensemble.json`` atomically, members recorded so they can be found again."""
        data = {"format": FORMAT, **asdict(self), "members": [model_ref(m) for m in self.members]}
        return atomic_write_json(Path(folder) / FILE, data)

    @classmethod
    def load(cls, folder: str | Path) -> EnsembleSpec:
        """Read an ensemble folder; a wrong file is refused naming it and the field."""
        path = Path(folder) / FILE
        raw = read_json_object(path)
        if raw.get("format") != FORMAT:
            raise ConfigError(f"{path}: not an ensemble file (format {FORMAT} expected)")
        members, weights = raw.get("members"), raw.get("weights")
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise ConfigError(f"{path}: field 'members' must be a list of model names or folders")
        if not isinstance(weights, list) or not all(isinstance(w, int | float) for w in weights):
            raise ConfigError(f"{path}: field 'weights' must be a list of numbers")
        try:
            return cls(tuple(members), tuple(float(w) for w in weights), raw.get("tuning") or {})
        except ConfigError as err:
            raise ConfigError(f"{path}: {err}") from None


class EnsembleRanker(Ranker):
    """Runs every member on the same questions and ranks by the weighted sum of their scores."""

    def __init__(self, spec: EnsembleSpec, members: Sequence[EncoderModel]) -> None:
        if len(members) != len(spec.members):
            raise ConfigError(f"{len(members)} models for an ensemble of {len(spec.members)}")
        self.spec = spec
        self.members: list[PairModel] = []
        for name, model in zip(spec.members, members, strict=True):
            if not isinstance(model, PairModel):
                raise ConfigError(f"ensemble member {name} is a {model.kind} model, not a ranker of pairs")
            self.members.append(model)

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
        scores = [self.spec.combine(per_member) for per_member in per_example]
        cost.seconds = time.perf_counter() - started
        return RankResult(scores, cost)
