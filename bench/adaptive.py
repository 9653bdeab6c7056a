"""Adaptive computation for ODQA (issue 12): EM against layers per passage for every method (the
paper's Fig. 2), the layers each needs for 95% of the full reader's EM (Table 2), the analysis metrics
(Table 3) and measured latency per question at those points.

Settings (m, the unread-tower priority, TowerBuilder's threshold grid) are chosen on ``--dev``; the
curves and tables are on ``--test``. Curves replay one static reading per question (the replayed
towers equal the live ones: tests/runtime/answer/test_towers.py); latency runs the encoder step by step.

    python bench/adaptive.py --reader runs/reader/r6-cal --scheduler runs/reader/sched \\
        --efficient 2=runs/reader/e2/best --out bench/results/adaptive
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from _common import finish, labelled, markdown

from sieveqa.data.registry import load_open_dataset
from sieveqa.evaluation.odqa import (
    analyse,
    cached_table,
    evaluate_schedule,
    load_policy,
    load_reader,
    replay,
    score_outcomes,
)
from sieveqa.models.reader import ReaderModel
from sieveqa.models.skyline_policy import SkylinePolicy
from sieveqa.runtime.answer.reader_policy import ReaderPolicy
from sieveqa.runtime.answer.schedulers import Schedule

BUDGETS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0)
THRESHOLDS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)
CHOICES = {"m": (1, 2, 3, 5), "init_priority": (0.0, 0.3, 0.6, 1.0)}
ADAPTIVE = ("TowerBuilder", "SkylineBuilder(-RL)", "SkylineBuilder")
EQUAL = (0.5, 0.75, 1.0, 1.5, 2.0, 3.0)  # layers per passage where the methods are compared
ANALYSIS = ("height_variance", "average_rank", "flips", "height_with_answer", "height_without_answer", "hap")


class Bench:
    """One reader's tables, temperatures and learned policy."""

    def __init__(self, reader: ReaderModel, policy: SkylinePolicy | None, tables: dict[str, Any]) -> None:
        self.reader, self.policy, self.tables = reader, policy, tables
        self.temps = reader.config.temperatures
        # How the answer across passages weighs P(has): the reader's dev-chosen value (tune-reader).
        self.has_weight = (ReaderPolicy.saved(reader) or ReaderPolicy()).has_weight

    def schedule(self, method: str, **settings: Any) -> Schedule:
        return Schedule(method, has_weight=self.has_weight, **settings)

    def point(self, split: str, schedule: Schedule) -> dict[str, float]:
        examples, table = self.tables[split]
        outcomes, built = replay(table, schedule, self.temps, self.policy)
        return score_outcomes(examples, outcomes) | analyse(table, built)

    def curve(self, split: str, schedules: list[Schedule]) -> list[dict[str, Any]]:
        out = []
        for s in schedules:
            knobs = {"top-k": {"k": s.k}, "tower": {"threshold": s.threshold}}
            knob = knobs.get(s.method, {"budget": s.budget})
            out.append({**knob, **self.point(split, s)})
        return out

    def choose(self, base: Schedule, keys: tuple[str, ...], budgets: tuple[float, ...]) -> Schedule:
        """The settings of ``keys`` with the best mean dev EM over ``budgets`` (or thresholds)."""
        best, best_em = base, -1.0
        grid: list[dict[str, Any]] = [{}]
        for key in keys:
            grid = [{**g, key: v} for g in grid for v in CHOICES[key]]
        for settings in grid:
            candidate = replace(base, **settings)
            ems = [self.point("dev", self._at(candidate, b))["em"] for b in budgets]
            if sum(ems) / len(ems) > best_em:
                best, best_em = candidate, sum(ems) / len(ems)
        return best

    @staticmethod
    def _at(schedule: Schedule, knob: float) -> Schedule:
        return (
            replace(schedule, threshold=knob)
            if schedule.method == "tower"
            else replace(schedule, budget=knob)
        )


def layers_for(curve: list[dict[str, Any]], target: float) -> float | None:
    """Fewest layers per passage reaching ``target`` EM, interpolated between the curve's points."""
    pts = sorted((p["layers_per_passage"], p["em"]) for p in curve)
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if y0 >= target:
            return x0
        if y1 >= target:
            return x0 + (x1 - x0) * (target - y0) / (y1 - y0)
    return pts[-1][0] if pts and pts[-1][1] >= target else None


def plot(curves: dict[str, list[dict[str, Any]]], full_em: float, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, curve in curves.items():
        pts = sorted((p["layers_per_passage"], p["em"]) for p in curve)
        ax.plot(*zip(*pts, strict=True), marker="o", markersize=3, label=name)
    ax.axhline(0.95 * full_em, color="grey", linestyle=":", label="95% of the full reader")
    ax.set_xlabel("average layers per passage")
    ax.set_ylabel("EM (SQuAD-Open-mini test)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", required=True, help="a calibrated reader")
    parser.add_argument("--scheduler", required=True, help="the learned policy (train-scheduler)")
    parser.add_argument("--efficient", nargs="*", default=[], help="LAYERS=PATH readers trained shallower")
    parser.add_argument("--dev", default="squad-open-mini:dev0")
    parser.add_argument("--test", default="squad-open-mini:test")
    parser.add_argument("--live", type=int, default=100, help="test questions timed live per method")
    parser.add_argument("--out", type=Path, default=Path("bench/results/adaptive"))
    args = parser.parse_args()
    reader = load_reader(args.reader)
    splits = {"dev": load_open_dataset(args.dev), "test": load_open_dataset(args.test)}
    tables = {k: (v, cached_table(reader, v, progress=True)) for k, v in splits.items()}
    bench = Bench(reader, load_policy(args.scheduler, "learned"), tables)
    depth = reader.encoder.num_layers
    full = bench.point("test", bench.schedule("standard"))
    picks = {
        "skyline": bench.choose(
            bench.schedule("skyline", budget=1.0), ("m", "init_priority"), (0.5, 1.0, 2.0)
        ),
        "learned": bench.choose(bench.schedule("learned", budget=1.0), ("m",), (0.5, 1.0, 2.0)),
        "tower": bench.choose(bench.schedule("tower"), ("m",), (0.8, 0.95, 0.99)),
    }
    n = len(tables["test"][1].guesses[0])
    curves = {
        "top-k": bench.curve("test", [bench.schedule("top-k", k=k) for k in range(1, n + 1)]),
        "TowerBuilder": bench.curve("test", [replace(picks["tower"], threshold=t) for t in THRESHOLDS]),
        "SkylineBuilder(-RL)": bench.curve("test", [replace(picks["skyline"], budget=b) for b in BUDGETS]),
        "SkylineBuilder": bench.curve("test", [replace(picks["learned"], budget=b) for b in BUDGETS]),
        "SkylineBuilder, any layer": bench.curve(
            "test", [replace(picks["learned"], budget=b, strategy="any") for b in BUDGETS]
        ),
    }
    efficient, models = [], {}
    for layers, path in labelled(args.efficient, "--efficient").items():
        models[f"efficient reader, {layers} layers"] = model = load_reader(path)
        examples = splits["test"]
        outcomes, _ = replay(cached_table(model, examples, progress=True), Schedule("standard"))
        efficient.append({"layers_per_passage": float(layers), **score_outcomes(examples, outcomes)})
    if efficient:
        curves["efficient reader"] = efficient
    target = 0.95 * full["em"]
    table2 = [{"method": "standard reader", "layers": depth, "reduction": 1.0, "em": round(full["em"], 2)}]
    for name, curve in curves.items():
        layers = layers_for(curve, target)
        table2.append(
            {"method": name, "layers": None if layers is None else round(layers, 2),
             "reduction": None if not layers else round(depth / layers, 1)}
        )  # fmt: skip
    print(markdown(table2, ["method", "layers", "reduction", "em"]))
    equal = [{"layers_per_passage": b, **{name: em_at(curves[name], b) for name in ADAPTIVE}} for b in EQUAL]
    print(markdown(equal, ["layers_per_passage", *ADAPTIVE]))
    table3 = analysis_at(curves, target)
    print(markdown(table3, ["method", "layers_per_passage", "em", *ANALYSIS]))
    args.out.mkdir(parents=True, exist_ok=True)
    plot(curves, full["em"], args.out / "em_vs_layers.png")
    live = timed(bench, picks, curves, target, splits["test"][: args.live], models)
    print(markdown(live, ["method", "layers_per_passage", "em", "ms_p50", "ms_mean", "speedup"]))
    finish(
        args.out / "adaptive.json",
        "adaptive",
        {"full": full, "chosen_on_dev": {k: asdict(v) for k, v in picks.items()}, "curves": curves,
         "table2": table2, "equal_budget": equal, "table3": table3, "live": live},
    )  # fmt: skip


def em_at(curve: list[dict[str, Any]], layers: float) -> float | None:
    """EM at ``layers`` per passage, interpolated between the curve's points (None: outside them)."""
    pts = sorted((p["layers_per_passage"], p["em"]) for p in curve)
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if x0 <= layers <= x1:
            return round(y0 if x1 == x0 else y0 + (y1 - y0) * (layers - x0) / (x1 - x0), 2)
    return None


def reaching(curve: list[dict[str, Any]], target: float) -> dict[str, Any]:
    """The cheapest point of ``curve`` with EM at or above ``target`` (else its best point)."""
    reached = [p for p in curve if p["em"] >= target]
    if reached:
        return min(reached, key=lambda p: p["layers_per_passage"])
    return max(curve, key=lambda p: p["em"])


def analysis_at(curves: dict[str, list[dict[str, Any]]], target: float) -> list[dict[str, Any]]:
    """Table 3: each adaptive method at the point of its curve nearest the learned policy's 95% point."""
    at = reaching(curves["SkylineBuilder"], target)["layers_per_passage"]
    rows = []
    for name in ADAPTIVE:
        p = min(curves[name], key=lambda p: abs(p["layers_per_passage"] - at))
        rows.append({"method": name, **{k: round(v, 2) for k, v in p.items() if isinstance(v, float)}})
    return rows


def timed(
    bench: Bench,
    picks: dict[str, Schedule],
    curves: dict[str, Any],
    target: float,
    questions: list,
    efficient: dict[str, ReaderModel],
) -> list[dict[str, Any]]:
    """Every method at the cheapest point of its curve reaching ``target``, run live on ``questions``."""
    standard = evaluate_schedule(bench.reader, questions, bench.schedule("standard"), live=True)
    rows = [{"method": "standard reader", **standard, "speedup": 1.0}]

    def run(name: str, schedule: Schedule, model: ReaderModel | None = None) -> None:
        report = evaluate_schedule(model or bench.reader, questions, schedule, bench.policy, live=True)
        speedup = round(standard["ms_mean"] / report["ms_mean"], 2)
        rows.append({"method": name, **{k: round(v, 2) for k, v in report.items()}, "speedup": speedup})

    k = reaching(curves["top-k"], target)["k"]
    run(f"top-k, k {k}", bench.schedule("top-k", k=k))
    threshold = reaching(curves["TowerBuilder"], target)["threshold"]
    run(f"TowerBuilder, threshold {threshold}", replace(picks["tower"], threshold=threshold))
    for name, key in (("SkylineBuilder(-RL)", "skyline"), ("SkylineBuilder", "learned")):
        budget = reaching(curves[name], target)["budget"]
        for group in (1, 4):
            run(f"{name}, budget {budget}, group {group}", replace(picks[key], budget=budget, group=group))
    for name, model in efficient.items():
        run(name, Schedule("standard"), model)
    return rows


if __name__ == "__main__":
    main()
