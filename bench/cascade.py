"""Cascade Transformer benchmarks: the paper's Tables 2 and 3, wall-clock throughput, thresholds.

Exit scores are computed once per (model, dataset) with nothing pruned and cached (in
~/.cache/sieveqa/scores/); every pruning configuration, cascade or sequential ranker, is then
simulated from them. The simulation is exact: tests/runtime/test_cascade.py checks the real pruned
run against it, and the ``throughput`` command re-checks it on the benchmark's own data.

    python bench/cascade.py table2 --cascade runs/cascade/adapt/best --mono 6=default ...
    python bench/cascade.py table3 --cascade CT --mono 6=MODEL6 --mono 4=MODEL4 ...
    python bench/cascade.py throughput --cascade ... --mono ... --alpha 0.3
    python bench/cascade.py thresholds --cascade ... --dev squad-as2:dev --test squad-as2:test
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import finish, labelled, markdown, pct
from throughput import as_sentence_transformers

from sieveqa.data.records import RankingExample
from sieveqa.data.registry import load_dataset
from sieveqa.evaluation.cascade_search import (
    GridPoint,
    choose,
    evaluate_config,
    evaluate_trace,
    groups_of,
    plot_pareto,
)
from sieveqa.evaluation.metrics import qrels_from_examples
from sieveqa.evaluation.score_cache import cached_scores
from sieveqa.models.base import flatten_pairs
from sieveqa.models.cascade import CascadeTransformer
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.runtime.cascade import CascadeRanker, SequentialRanker
from sieveqa.runtime.pruning import check_drop_ratios
from sieveqa.runtime.trace import cascade_layer_units, relative_cost, sequential_layer_units, simulate

METRICS = ("map", "ndcg@10", "p@1", "mrr")


def score_matrix(model_path: str, dataset: str, examples: Sequence[RankingExample]) -> torch.Tensor:
    """Unpruned scores (candidates × exits; one column for a cross-encoder), cached."""
    return cached_scores(model_path, dataset, examples, progress=True)


def _parse_monos(specs: Sequence[str]) -> dict[int, str]:
    """``DEPTH=PATH`` pairs, e.g. ``6=default``."""
    out = {}
    for spec in specs:
        depth, _, path = spec.partition("=")
        out[int(depth)] = path
    return dict(sorted(out.items()))


def _pct(metrics: dict[str, float]) -> dict[str, float]:
    return pct(metrics, METRICS)


def _row(name: str, alpha: Any, metrics: dict[str, float], cost: float) -> dict[str, Any]:
    return {
        "method": name,
        "alpha": alpha,
        **_pct(metrics),
        "relative_cost": round(cost, 3),
    }


def _markdown(rows: Sequence[dict[str, Any]]) -> str:
    return markdown(rows, ["method", "alpha", *METRICS, "relative_cost"])


def _finish(args: argparse.Namespace, name: str, payload: dict[str, Any]) -> None:
    finish(args.out, f"cascade-{name}", payload)


def _cascades(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(label, model) of every cascade compared: the main one, retrofits, then ``--other LABEL=MODEL``."""
    others = labelled(args.other, "--other").items()
    return [("CT", args.cascade), *(("retrofit CT", p) for p in args.retrofit), *others]


def table2(args: argparse.Namespace) -> None:
    """Every exit alone (α = 0) against monolithic models of the same depth, per dataset."""
    cascades = _cascades(args)
    monos = _parse_monos(args.mono)
    out: dict[str, Any] = {
        "cascade": args.cascade,
        "retrofit": args.retrofit,
        "other": args.other,
        "monolithic": monos,
        "datasets": {},
    }
    for dataset in args.datasets.split(","):
        examples = load_dataset(dataset)
        qrels = qrels_from_examples(examples)
        rows = []
        for depth, path in monos.items():
            mono = score_matrix(path, dataset, examples)
            metrics = evaluate_config(examples, mono, [depth], [], qrels).metrics
            rows.append({"model": f"monolithic {depth} layers", **_pct(metrics)})
        for name, path in cascades:
            exits = CascadeTransformer.from_pretrained(path).exits
            scores = score_matrix(path, dataset, examples)
            for i, layer in enumerate(exits):
                trace = simulate(scores[:, : i + 1], groups_of(examples), [0.0] * i)
                metrics = evaluate_trace(examples, trace, qrels=qrels).mean
                label = f"{name} exit at layer {layer}, α=0"
                rows.append({"model": label, **_pct(metrics)})
        out["datasets"][dataset] = rows
        print(f"\n{dataset}")
        for r in rows:
            print(r)
    _finish(args, "table2", out)


def table3(args: argparse.Namespace) -> None:
    """Monolithic models, the sequential ranker and the cascade at several α on one test set."""
    examples = load_dataset(args.dataset)
    qrels = qrels_from_examples(examples)
    groups = groups_of(examples)
    n = len(groups)
    alphas = [float(a) for a in args.alphas.split(",")]
    monos = _parse_monos(args.mono)
    full_depth = max(monos) if monos else None
    rows = []
    mono_scores = {d: score_matrix(p, args.dataset, examples) for d, p in monos.items()}
    for depth, scores in mono_scores.items():
        metrics = evaluate_config(examples, scores, [depth], [], qrels).metrics
        rows.append(_row(f"monolithic {depth} layers", "-", metrics, depth / full_depth))
    if len(mono_scores) >= 2:
        stacked = torch.cat(list(mono_scores.values()), dim=1)
        for alpha in alphas:
            trace = simulate(stacked, groups, [alpha] * (len(mono_scores) - 1))
            metrics = evaluate_trace(examples, trace, qrels=qrels).mean
            cost = relative_cost(sequential_layer_units(trace.survivors, list(mono_scores)), n, full_depth)
            rows.append(_row(f"SR {'+'.join(map(str, mono_scores))}", alpha, metrics, cost))
    for name, path in _cascades(args):
        cascade = CascadeTransformer.from_pretrained(path)
        scores = score_matrix(path, args.dataset, examples)
        exits = cascade.exits
        for i, layer in enumerate(exits[:-1]):
            trace = simulate(scores[:, : i + 1], groups, [0.0] * i)
            metrics = evaluate_trace(examples, trace, qrels=qrels).mean
            rows.append(_row(f"{name} exit L{layer}", 0.0, metrics, layer / exits[-1]))
        settings: list[tuple[str, Any]] = [(str(a), a) for a in [0.0, *alphas]]
        grid_file = args.tuning.get(path)
        if grid_file:
            # Chosen on dev (tune-cascade's grid), reported here on test.
            dev_points = [
                GridPoint(tuple(p["drop_ratios"]), p["relative_cost"], p)
                for p in json.loads(Path(grid_file).read_text())["grid"]
            ]
            for tol in args.tolerances:
                pick = choose(dev_points, "p@1", tol)
                ratios = "/".join(f"{a:g}" for a in pick.drop_ratios)
                label = f"dev-tuned, ≤{100 * tol:g} pt: {ratios}"
                settings.append((label, list(pick.drop_ratios)))
        for label, alpha in settings:
            point = evaluate_config(examples, scores, exits, check_drop_ratios(alpha, len(exits)), qrels)
            rows.append(_row(f"{name} (all {exits[-1]} layers)", label, point.metrics, point.relative_cost))
    print(_markdown(rows))
    _finish(
        args,
        "table3",
        {
            "dataset": args.dataset,
            "n_questions": len(examples),
            "n_pairs": n,
            "cascade": args.cascade,
            "retrofit": args.retrofit,
            "other": args.other,
            "monolithic": monos,
            "rows": rows,
            "markdown": _markdown(rows),
        },
    )


def _cascade_spec(spec: str) -> tuple[str, list[float] | None]:
    """``MODEL`` or ``MODEL@ALPHA`` or ``MODEL@A1/A2/A3/A4``; no α: the ratios saved with the model."""
    path, _, alpha = spec.partition("@")
    return path, [float(a) for a in alpha.split("/")] if alpha else None


def throughput(args: argparse.Namespace) -> None:
    """Wall clock on the same pairs, one process, alternating: ST CrossEncoder, monolithic, cascades."""
    examples = load_dataset(args.dataset)[: args.limit]
    pairs = [(ex.question.text, c.text) for ex in examples for c in ex.candidates]
    questions, texts = flatten_pairs(examples)
    monos = _parse_monos(args.mono)
    mono = CrossEncoder.from_pretrained(monos[max(monos)])
    mono.configure(batch_size=args.batch_size)
    st = as_sentence_transformers(mono)
    # Tokenization is inside every timed call: sentence-transformers tokenizes in predict().
    systems: dict[str, Any] = {
        "sentence-transformers CrossEncoder": lambda: st.predict(
            pairs, batch_size=args.batch_size, show_progress_bar=False
        ),
        "sieveqa monolithic": lambda: mono.score_pairs(questions, texts),
    }
    rankers: dict[str, CascadeRanker] = {}
    for spec in args.cascade:
        path, alpha = _cascade_spec(spec)
        ranker = CascadeRanker(CascadeTransformer.from_pretrained(path), alpha, batch_size=args.batch_size)
        name = f"cascade {path} α={'/'.join(f'{a:g}' for a in ranker.drop_ratios or [])}"
        rankers[name] = ranker
        systems[name] = lambda r=ranker: r.run(examples)
    if len(monos) > 1:
        models = [CrossEncoder.from_pretrained(p) for p in monos.values()]
        for model in models:
            model.configure(batch_size=args.batch_size)
        sr = SequentialRanker(models, float(args.sr_alpha))
        systems[f"sequential ranker α={args.sr_alpha}"] = lambda: sr.run(examples)
    times: dict[str, list[float]] = {k: [] for k in systems}
    for fn in systems.values():
        fn()
    for _ in range(args.repeats):
        for name, fn in systems.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    rows: dict[str, dict[str, Any]] = {}
    for name, ts in times.items():
        seconds = statistics.median(ts)
        rows[name] = {"median_seconds": round(seconds, 3), "pairs_per_second": round(len(pairs) / seconds, 1)}
    base_st = rows["sentence-transformers CrossEncoder"]["pairs_per_second"]
    base_mono = rows["sieveqa monolithic"]["pairs_per_second"]
    for row in rows.values():
        row["vs_sentence_transformers"] = round(row["pairs_per_second"] / base_st, 2)
        row["vs_monolithic"] = round(row["pairs_per_second"] / base_mono, 2)
    _, mono_cost = mono.score_matrix(questions, texts)
    for name, ranker in rankers.items():
        result = ranker.run(examples)
        expected = simulate(
            ranker.model.exit_scores(questions, texts), groups_of(examples), ranker.drop_ratios
        )
        rows[name].update(
            {
                "relative_cost": round(result.relative_cost, 4),
                "flops_vs_monolithic": round(result.cost.flops / (mono_cost.flops or 1), 4),
                "real_run_matches_simulation": result.trace.orders() == expected.orders(),
            }
        )
    payload = {
        "dataset": args.dataset,
        "n_questions": len(examples),
        "n_pairs": len(pairs),
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "results": rows,
    }
    for name, row in rows.items():
        print(f"{name:60s} {row}")
    _finish(args, "throughput", payload)


def thresholds(args: argparse.Namespace) -> None:
    """The paper's objection to score thresholds: batch sizes become unpredictable.

    Thresholds are set on dev so that each exit drops the same share of rows overall as α does;
    then, on test, the per-question share kept at each exit is compared for both policies.
    """
    cascade = CascadeTransformer.from_pretrained(args.cascade)
    n_exits = len(cascade.exits)
    alpha = float(args.alpha)
    dev = load_dataset(args.dev)
    dev_scores = score_matrix(args.cascade, args.dev, dev)
    dev_trace = simulate(dev_scores, groups_of(dev), [alpha] * (n_exits - 1))
    cuts = []
    for i in range(n_exits - 1):
        reached = dev_scores[~torch.isnan(dev_trace.scores[:, i]), i]
        cuts.append(float(torch.quantile(reached, alpha)))
    test = load_dataset(args.test)
    test_scores = score_matrix(args.cascade, args.test, test)
    groups = groups_of(test)
    sizes = torch.bincount(groups).double()
    out: dict[str, Any] = {"alpha": alpha, "thresholds_from_dev": [round(c, 4) for c in cuts], "policies": {}}
    for name, trace in {
        "fixed ratio": simulate(test_scores, groups, [alpha] * (n_exits - 1)),
        "threshold": simulate(test_scores, groups, thresholds=cuts),
    }.items():
        per_exit = []
        for i in range(n_exits):
            kept = (
                torch.bincount(groups[~torch.isnan(trace.scores[:, i])], minlength=len(sizes)).double()
                / sizes
            )
            per_exit.append(
                {
                    "exit": cascade.exits[i],
                    "mean_kept": round(float(kept.mean()), 3),
                    "std_kept": round(float(kept.std()), 3),
                    "min_kept": round(float(kept.min()), 3),
                    "max_kept": round(float(kept.max()), 3),
                }
            )
        metrics = evaluate_trace(test, trace).mean
        units = cascade_layer_units(trace.survivors, cascade.exits)
        out["policies"][name] = {
            "per_exit": per_exit,
            "p@1": round(metrics["p@1"], 4),
            "map": round(metrics["map"], 4),
            "relative_cost": round(relative_cost(units, len(groups), cascade.exits[-1]), 4),
        }
        print(name, out["policies"][name])
    _finish(args, "thresholds", {"cascade": args.cascade, "dev": args.dev, "test": args.test, **out})


def replot(args: argparse.Namespace) -> None:
    """Redraw tune-cascade's Pareto plot from its grid.json (no model pass)."""
    report = json.loads(args.grid.read_text())
    points = [GridPoint(tuple(p["drop_ratios"]), p["relative_cost"], p) for p in report["grid"]]
    chosen = GridPoint(
        tuple(report["chosen"]["drop_ratios"]), report["chosen"]["relative_cost"], report["chosen"]
    )
    title = args.title or f"{report['model']} on {report['dataset']}: {len(points)} configurations"
    plot_pareto(points, args.out or args.grid.with_name("pareto.png"), chosen=chosen, title=title)


def _add_models(parser: argparse.ArgumentParser) -> None:
    """The models table2 and table3 compare."""
    parser.add_argument("--cascade", required=True)
    parser.add_argument("--retrofit", action="append", default=[], help="retrofitted cascade(s) to compare")
    parser.add_argument(
        "--other", action="append", default=[], help="LABEL=MODEL: another cascade (e.g. all-exit training)"
    )
    parser.add_argument("--mono", action="append", default=[], help="DEPTH=MODEL, repeatable")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p2 = sub.add_parser("table2", help=table2.__doc__)
    _add_models(p2)
    p2.add_argument("--datasets", default="wikiqa:test,trecqa:test-clean")
    p2.add_argument("--out", type=Path, default=Path("bench/results/cascade/table2.json"))
    p3 = sub.add_parser("table3", help=table3.__doc__)
    _add_models(p3)
    p3.add_argument("--dataset", default="squad-as2:test")
    p3.add_argument("--alphas", default="0.3,0.4,0.5")
    p3.add_argument(
        "--tuning", action="append", default=[], help="MODEL=GRID_JSON: tune-cascade's dev grid for a cascade"
    )
    p3.add_argument("--tolerances", default="0.01,0.02", help="P@1 losses allowed on dev when choosing")
    p3.add_argument("--out", type=Path, default=Path("bench/results/cascade/table3.json"))
    pt = sub.add_parser("throughput", help=throughput.__doc__)
    pt.add_argument(
        "--cascade", action="append", required=True, help="MODEL[@ALPHA or @A1/A2/..]; repeatable"
    )
    pt.add_argument(
        "--mono",
        action="append",
        required=True,
        help="DEPTH=MODEL; the deepest is the baseline, all form the SR",
    )
    pt.add_argument("--sr-alpha", default="0.3", help="drop ratio of the sequential ranker")
    pt.add_argument("--dataset", default="squad-as2:test")
    pt.add_argument("--limit", type=int, default=100)
    pt.add_argument("--batch-size", type=int, default=64)
    pt.add_argument("--repeats", type=int, default=3)
    pt.add_argument("--out", type=Path, default=Path("bench/results/cascade/throughput.json"))
    ph = sub.add_parser("thresholds", help=thresholds.__doc__)
    ph.add_argument("--cascade", required=True)
    ph.add_argument("--alpha", default="0.3")
    ph.add_argument("--dev", default="squad-as2:dev")
    ph.add_argument("--test", default="squad-as2:test")
    ph.add_argument("--out", type=Path, default=Path("bench/results/cascade/thresholds.json"))
    pp = sub.add_parser("replot", help=replot.__doc__)
    pp.add_argument("--grid", type=Path, required=True)
    pp.add_argument("--title", default="")
    pp.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.command == "table3":
        args.tuning = dict(spec.split("=", 1) for spec in args.tuning)
        args.tolerances = [float(t) for t in args.tolerances.split(",")]
    commands = {"table2": table2, "table3": table3, "throughput": throughput, "thresholds": thresholds}
    {**commands, "replot": replot}[args.command](args)


if __name__ == "__main__":
    main()
