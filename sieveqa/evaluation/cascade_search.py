"""Measuring cascades: metrics of a pruning trace, the drop-ratio grid search (section 5.5), its Pareto
front, and the plot of accuracy against relative cost.

Exit scores are computed once with nothing pruned; every drop-ratio configuration is then simulated
from them (a row's score does not depend on which other rows share its batch), so a grid of
thousands of configurations costs one pass of the model.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from torch import Tensor
from tqdm.auto import tqdm

from sieveqa.data.records import RankingExample
from sieveqa.errors import ConfigError, require_extra
from sieveqa.evaluation.metrics import MetricReport, evaluate_orders, qrels_from_examples
from sieveqa.io import atomic_open
from sieveqa.runtime.trace import CascadeTrace, cascade_layer_units, groups_of, relative_cost, simulate

DEFAULT_GRID = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)


def evaluate_trace(
    examples: Sequence[RankingExample],
    trace: CascadeTrace,
    exit_index: int | None = None,
    qrels: dict[str, dict[str, int]] | None = None,
) -> MetricReport:
    """Metrics of the cascade's ranking (or of the cascade stopped at ``exit_index``)."""
    return evaluate_orders(examples, trace.orders(exit_index), qrels)


@dataclass
class GridPoint:
    """One drop-ratio configuration and what it achieved."""

    drop_ratios: tuple[float, ...]
    relative_cost: float
    metrics: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        return {
            "drop_ratios": list(self.drop_ratios),
            "relative_cost": round(self.relative_cost, 4),
            **{k: round(v, 4) for k, v in self.metrics.items()},
        }


def evaluate_config(
    examples: Sequence[RankingExample],
    exit_scores: Tensor,
    exits: Sequence[int],
    drop_ratios: Sequence[float],
    qrels: dict[str, dict[str, int]] | None = None,
) -> GridPoint:
    """Simulate one configuration: its metrics and relative cost in layer-units."""
    trace = simulate(exit_scores, groups_of(examples), drop_ratios, n_groups=len(examples))
    cost = relative_cost(cascade_layer_units(trace.survivors, exits), len(exit_scores), exits[-1])
    return GridPoint(tuple(drop_ratios), cost, evaluate_trace(examples, trace, qrels=qrels).mean)


def grid_search(
    examples: Sequence[RankingExample],
    exit_scores: Tensor,
    exits: Sequence[int],
    grid: Sequence[float] = DEFAULT_GRID,
    progress: bool = False,
) -> list[GridPoint]:
    """Every per-exit combination of ``grid`` values, plus α = 0 everywhere, first (once)."""
    qrels = qrels_from_examples(examples)
    unpruned = (0.0,) * (len(exits) - 1)
    combos = [unpruned, *(c for c in itertools.product(grid, repeat=len(exits) - 1) if c != unpruned)]
    return [
        evaluate_config(examples, exit_scores, exits, combo, qrels)
        for combo in tqdm(combos, desc="grid", unit="config", disable=not progress, leave=False)
    ]


def check_agreement(k: int) -> None:
    """Refuse an ``--agreement`` that is no top K."""
    if k < 1:
        raise ConfigError(f"--agreement must be >= 1 (the full model's top K), got {k}")


def agreement_labels(examples: Sequence[RankingExample], full: Tensor, k: int = 1) -> list[RankingExample]:
    """``examples`` labelled by the unpruned model itself: a candidate is correct (1) when it is among
    its question's top ``k`` by ``full`` (the last exit's score of every pair, in order), so P@1 is how
    often the pruned cascade's top answer is one the full model ranks in its top k. Tuning without
    labels; ties at the k-th score count as top."""
    check_agreement(k)
    out, at = [], 0
    for ex in examples:
        scores = full[at : at + len(ex.candidates)].tolist()
        at += len(ex.candidates)
        kth = sorted(scores, reverse=True)[min(k, len(scores)) - 1] if scores else 0.0
        cands = [replace(c, label=int(score >= kth)) for c, score in zip(ex.candidates, scores, strict=True)]
        out.append(RankingExample(ex.question, cands))
    return out


def pareto_front(points: Sequence[GridPoint], metric: str) -> list[GridPoint]:
    """Points no other point beats on both cost (lower) and ``metric`` (higher), cheapest first."""
    front: list[GridPoint] = []
    for p in sorted(points, key=lambda p: (p.relative_cost, -p.metrics[metric])):
        if not front or p.metrics[metric] > front[-1].metrics[metric]:
            front.append(p)
    return front


def choose(points: Sequence[GridPoint], metric: str, tolerance: float) -> GridPoint:
    """The cheapest point whose ``metric`` is within ``tolerance`` (absolute) of the unpruned one."""
    unpruned = [p for p in points if not any(p.drop_ratios)]
    if not unpruned:
        raise ValueError("the grid has no unpruned point (all drop ratios 0) to compare with")
    reference = unpruned[0].metrics[metric]
    ok = [p for p in points if p.metrics[metric] >= reference - tolerance - 1e-12]
    if not ok:
        raise ConfigError(f"no configuration is within tolerance {tolerance} of the unpruned {metric}")
    return min(ok, key=lambda p: (p.relative_cost, -p.metrics[metric]))


def plot_pareto(
    points: Sequence[GridPoint],
    path: str | Path,
    metrics: Sequence[str] = ("p@1", "map"),
    chosen: GridPoint | None = None,
    title: str = "",
) -> Path:
    """Scatter of ``metrics`` against relative cost, one panel each, Pareto front drawn; PNG at ``path``."""
    matplotlib = require_extra("matplotlib", "plot", "drawing the Pareto plot")
    matplotlib.use("Agg")
    plt = require_extra("matplotlib.pyplot", "plot", "drawing the Pareto plot")

    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 4.2), squeeze=False)
    for ax, metric in zip(axes[0], metrics, strict=True):
        costs = [p.relative_cost for p in points]
        ax.scatter(
            costs, [p.metrics[metric] for p in points], s=8, alpha=0.35, color="tab:blue", label="grid"
        )
        front = pareto_front(points, metric)
        ax.plot(
            [p.relative_cost for p in front],
            [p.metrics[metric] for p in front],
            "-o",
            color="tab:orange",
            markersize=4,
            label="Pareto front",
        )
        full = next((p for p in points if not any(p.drop_ratios)), None)
        if full is not None:
            ax.axhline(full.metrics[metric], color="grey", ls="--", lw=1, label="no pruning")
        if chosen is not None:
            ax.scatter(
                [chosen.relative_cost],
                [chosen.metrics[metric]],
                s=90,
                marker="*",
                color="red",
                zorder=5,
                label="chosen " + "/".join(f"{a:g}" for a in chosen.drop_ratios),
            )
        ax.set_xlabel("relative cost per batch (layer-units vs full model)")
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=120)
    plt.close(fig)
    return path
