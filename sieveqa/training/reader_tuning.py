"""Choose a reader's question-time settings on dev questions (``sieveqa tune-reader``).

Everything is replayed from one static reading of the dev questions (replayed towers equal live
ones), so the whole grid costs one pass of the reader:

1. ``has_weight``: how the answer across passages weighs log P(has) against the span's
   log-probability, the full reader's best dev EM (ties: the value nearest 1, the joint probability);
2. for each adaptive method, the towers kept (``m``) with the best mean dev EM over the budgets (or
   thresholds) of its grid;
3. whether ``skyline`` uses the learned scheduler by default (it ships either way, for
   ``--scheduler learned``): only where its mean dev EM is at least SkylineBuilder(-RL)'s;
4. the default budget (and threshold): the cheapest grid point whose dev EM reaches ``share`` of the
   full reader's, else the best one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sieveqa.data.open_qa import OpenExample
from sieveqa.evaluation.odqa import ReadTable, replay, score_outcomes
from sieveqa.models.skyline_policy import SkylinePolicy
from sieveqa.runtime.answer.reader_policy import SCHEDULER_FOLDER, ReaderPolicy
from sieveqa.runtime.answer.schedulers import Schedule

__all__ = ["TuningGrid", "tune_reader"]


@dataclass(frozen=True)
class TuningGrid:
    """The values tried."""

    has_weights: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
    budgets: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
    thresholds: tuple[float, ...] = (0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99)
    keeps: tuple[int, ...] = (1, 2, 3, 5)
    share: float = 0.95


class _Dev:
    def __init__(
        self, examples: Sequence[OpenExample], table: ReadTable, temps: Sequence[float] | None, policy: Any
    ) -> None:
        self.examples, self.table, self.temps, self.policy = examples, table, temps, policy

    def point(self, schedule: Schedule) -> dict[str, float]:
        outcomes, _ = replay(self.table, schedule, self.temps, self.policy)
        scores = score_outcomes(self.examples, outcomes)
        return {k: round(scores[k], 4) for k in ("em", "f1", "layers_per_passage")}


def _knob(schedule: Schedule, value: float) -> Schedule:
    return (
        replace(schedule, threshold=value) if schedule.method == "tower" else replace(schedule, budget=value)
    )


def _choose(dev: _Dev, base: Schedule, knobs: Sequence[float], grid: TuningGrid, target: float) -> dict:
    """``m`` by mean EM over ``knobs``, then the cheapest knob reaching ``target`` (else the best)."""
    by_m = {m: [dev.point(_knob(replace(base, m=m), k)) for k in knobs] for m in grid.keeps}
    mean = {m: sum(p["em"] for p in pts) / len(pts) for m, pts in by_m.items()}
    m = max(grid.keeps, key=lambda k: (mean[k], -k))
    points = [{"knob": k, **p} for k, p in zip(knobs, by_m[m], strict=True)]
    reaching = [p for p in points if p["em"] >= target]
    pick = (
        min(reaching, key=lambda p: p["layers_per_passage"])
        if reaching
        else max(points, key=lambda p: (p["em"], -p["layers_per_passage"]))
    )
    return {"m": m, "mean_em": round(mean[m], 4), "knob": pick["knob"], "pick": pick, "points": points}


def tune_reader(
    examples: Sequence[OpenExample],
    table: ReadTable,
    temperatures: Sequence[float] | None,
    scheduler: SkylinePolicy | None = None,
    grid: TuningGrid | None = None,
) -> tuple[ReaderPolicy, dict[str, Any]]:
    """The settings chosen on ``examples`` (read into ``table``) and what each choice saw."""
    grid = grid or TuningGrid()
    dev = _Dev(examples, table, temperatures, scheduler)
    weights = {w: dev.point(Schedule("standard", has_weight=w)) for w in grid.has_weights}
    weight = max(grid.has_weights, key=lambda w: (weights[w]["em"], -abs(w - 1.0)))
    full = weights[weight]
    target = grid.share * full["em"]
    base = {"has_weight": weight}
    tower = _choose(dev, Schedule("tower", **base), grid.thresholds, grid, target)
    skyline = _choose(dev, Schedule("skyline", budget=1.0, **base), grid.budgets, grid, target)
    report: dict[str, Any] = {
        "has_weight": {str(w): p for w, p in weights.items()},
        "full": full,
        "target_em": round(target, 4),
        "tower": tower,
        "skyline": skyline,
    }
    learned = None
    if scheduler is not None:
        learned = _choose(dev, Schedule("learned", budget=1.0, **base), grid.budgets, grid, target)
        report["learned"] = learned
    ships = learned is not None and learned["mean_em"] >= skyline["mean_em"]
    policy = ReaderPolicy(
        has_weight=weight,
        threshold=tower["knob"],
        budget=(learned if ships and learned else skyline)["knob"],
        tower_m=tower["m"],
        skyline_m=skyline["m"],
        learned_m=learned["m"] if learned else ReaderPolicy.learned_m,
        scheduler=SCHEDULER_FOLDER if scheduler is not None else None,
        learned=ships,
    )
    report["scheduler_default"] = ships
    return policy, report
