"""The settings ``--budget-ms`` chooses from: for each sentence method, P@1 and p50 latency on SQuAD
passages dev over a grid of passages retrieved, drop ratios of its cascade and backends, measured in
one run on this machine (docs/RESULTS.md, "One budget across the pipeline").

Latency per question is BM25 retrieval of N passages from an index of the dev articles (timed here)
plus the method on the question's first N retrieved passages (as ``eval-answers`` times it); P@1 is on
those same passages, so a question whose answer BM25 ranked below N is one the setting misses.

    python bench/budget.py --limit 200 --record --out bench/results/budget/dev-amx.json
    python bench/budget.py --plot bench/results/budget/dev-amx.json --png bench/results/budget/curve.png

``--record`` writes the grid under this CPU's kind in ``sieveqa/resources/budgets.json``. A system
whose export is missing (``openvino:int8`` needs ``sieveqa export MODEL --format openvino --int8``) is
skipped with a line saying so.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _common import finish, markdown

from sieveqa.data.corpus import CorpusIndex
from sieveqa.data.formats import read_documents
from sieveqa.data.passage_sets import group_passages
from sieveqa.data.records import RankingExample
from sieveqa.data.registry import load_dataset
from sieveqa.errors import MissingExtraError, ModelFormatError
from sieveqa.evaluation.answers import evaluate_answers
from sieveqa.exported.choice import cpu_kind
from sieveqa.io import atomic_write_json
from sieveqa.runtime.answer.answerer import Answerer, load_answerer
from sieveqa.runtime.answer.budget import BUDGETS


@dataclass(frozen=True)
class Arm:
    """One loaded configuration: a method with its model options on a system; alphas to sweep; the
    lighter ways a budget runs it once loaded (``AnswerMethod.lightened``), each measured too."""

    method: str
    options: tuple[tuple[str, Any], ...]
    alphas: tuple[float | None, ...]
    lighter: tuple[tuple[tuple[str, Any], ...], ...] = ()


#: PEASI's stages a budget may shorten or drop on the loaded default (the second look, passages EASI
#: reads, the judge): each measured apart, so a budget knows what each costs and gives.
LIGHTER = (
    (("second_look", 0),),
    (("read", 1), ("second_look", 0)),
    (("judge", "none"),),
    (("judge", "none"), ("read", 1), ("second_look", 0)),
)

ARMS = [
    Arm("peasi", (), (None,), LIGHTER),
    Arm("peasi", (("reranker", "peasi-cascade"),), (None, 0.3, 0.5), LIGHTER[1:2]),  # None: tuned ratios
    Arm("cascade", (), (None, 0.0, 0.3, 0.5)),
    Arm("pointwise", (), (None,)),
    Arm("peasi-all", (), (None,)),
]


def ways(arm: Arm, answerer: Answerer) -> list[tuple[dict[str, Any], Answerer]]:
    """The arm's answerer as loaded, then each lighter way of running it, with the options that load
    it so (the judge named where it stays: a default judge loads only where the calibration says)."""
    out = [(dict(arm.options), answerer)]
    for levers in arm.lighter:
        lighter = answerer.method.lightened(**dict(levers))
        judge = lighter.model_names.get("judge")
        options = dict(arm.options) | dict(levers) | ({"judge": judge} if judge else {})
        out.append((options, answerer.with_method(lighter)))
    return out


def first_passages(example: RankingExample, n: int) -> RankingExample:
    """The example with the sentences of its first ``n`` retrieved passages only."""
    keep = {pid for pid, _ in group_passages(example)[:n]}
    return RankingExample(
        example.question, [c for c in example.candidates if (c.passage_id or c.doc_id or "") in keep]
    )


def retrieval_ms(questions: list[str], depths: list[int], split: str) -> dict[int, list[float]]:
    """Milliseconds BM25 takes to retrieve each question's top N passages of the split's articles."""
    out: dict[int, list[float]] = {n: [] for n in depths}
    with tempfile.TemporaryDirectory() as tmp:
        index = CorpusIndex.build(read_documents(f"squad:{split}"), Path(tmp) / "index")
        index.search_many(questions[:1], max(depths), "bm25", None)  # warm-up
        for n in depths:
            for q in questions:
                started = time.perf_counter()
                index.search_many([q], n, "bm25", None)
                out[n].append((time.perf_counter() - started) * 1000)
    return out


def ratios_of(answerer: Answerer, alpha: float | None) -> list[float] | None:
    """The drop ratios the setting runs at: ``alpha`` at every exit, or the cascade's tuned ones (None
    for a method without a cascade)."""
    method = answerer.method
    ranker = getattr(method, "reranker", None) or getattr(method, "ranker", None)
    ratios = getattr(ranker, "drop_ratios", None)
    if ratios is None:
        return None
    return list(ratios) if alpha is None else [alpha] * len(ratios)


def measure(
    answerer: Answerer, examples: list[RankingExample], alpha: float | None, retrieval: list[float]
) -> dict[str, Any]:
    method = answerer.method if alpha is None else answerer.method.with_settings(alpha=alpha)
    run = answerer.with_method(method)
    evaluate_answers(run, examples[:3], progress=False)  # warm-up
    report = evaluate_answers(run, examples, progress=False)
    total = np.asarray([r["seconds"] * 1000 for r in report.per_question]) + np.asarray(retrieval)
    return {
        "p_at_1": round(report.metrics["p@1"], 4),
        "p50_ms": round(float(np.percentile(total, 50)), 1),
        "p95_ms": round(float(np.percentile(total, 95)), 1),
        "inferences": round(report.cost["inferences_per_question"], 1),
        "layer_units": round(report.cost["layer_units_per_question"], 1),
    }


def sweep(args: argparse.Namespace) -> list[dict[str, Any]]:
    examples = load_dataset(f"squad-passages:{args.split}-sentences")[: args.limit]
    depths = [int(n) for n in args.retrieve.split(",")]
    retrieval = retrieval_ms([ex.question.text for ex in examples], depths, args.split)
    rows = []
    for system in args.systems.split(","):
        backend, _, precision = system.partition(":")
        for arm in ARMS:
            if args.methods and arm.method not in args.methods.split(","):
                continue
            try:
                answerer = load_answerer(
                    arm.method, None, backend=backend, precision=precision, **dict(arm.options)
                )
            except (ModelFormatError, MissingExtraError) as err:
                print(f"skipped {arm.method} {dict(arm.options)} on {system}: {err}")
                continue
            concrete = answerer.method.system
            for options, way in ways(arm, answerer):
                for n in depths:
                    cut = [first_passages(ex, n) for ex in examples]
                    for alpha in arm.alphas[:1] if args.tuned_only else arm.alphas:
                        row = {
                            "method": arm.method, "retrieve": n, "system": concrete,
                            "drop_ratios": ratios_of(way, alpha),
                            "options": options, "models": way.method.model_names,
                            **measure(way, cut, alpha, retrieval[n]),
                        }  # fmt: skip
                        print(json.dumps(row), flush=True)
                        rows.append(row)
    return rows


def record(rows: list[dict[str, Any]], payload: dict[str, Any]) -> None:
    """Write ``rows`` as this CPU kind's settings, in place of those measured before for the same
    method, system and models; the others stay, each row naming the run (``runs``: dataset, date,
    command) it was measured in."""
    table = json.loads(BUDGETS.read_text()) if BUDGETS.is_file() else {}
    keys = ("method", "retrieve", "system", "drop_ratios", "options", "models", "p50_ms", "p_at_1")
    old = table.get(cpu_kind(), {})
    runs = old.get("runs") or ([_provenance(old)] if old.get("settings") else [])
    measured = {_key(r) for r in rows}
    kept = [{**r, "run": r.get("run", 0)} for r in old.get("settings", []) if _key(r) not in measured]
    runs.append({
        "measured_on": payload["dataset"], "questions": payload["questions"], "cpu": payload["cpu"],
        "date": time.strftime("%Y-%m-%d"), "command": payload["command"],
    })  # fmt: skip
    settings = kept + [{**{k: r[k] for k in keys}, "run": len(runs) - 1} for r in rows]
    used = sorted({r["run"] for r in settings})  # a run none of whose rows is left goes
    renumbered = {before: after for after, before in enumerate(used)}
    table[cpu_kind()] = {
        "runs": [runs[i] for i in used],
        "settings": [{**r, "run": renumbered[r["run"]]} for r in settings],
    }
    atomic_write_json(BUDGETS, table)
    print(f"recorded {len(rows)} settings for {cpu_kind()} in {BUDGETS} ({len(kept)} kept from earlier runs)")


def _key(row: dict[str, Any]) -> tuple[str, str, str]:
    """What a row measured: its method and system, on which models."""
    return row["method"], row["system"], json.dumps(row["models"], sort_keys=True)


def _provenance(entry: dict[str, Any]) -> dict[str, Any]:
    """The provenance of a table written before each row named its run (one run made every row)."""
    return {k: v for k, v in entry.items() if k not in ("settings", "runs")}


def plot(path: Path, png: Path) -> None:
    """P@1 against p50 latency, one colour per method, its Pareto front joined."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(path.read_text())
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for i, method in enumerate(dict.fromkeys(r["method"] for r in data["rows"])):
        mine = sorted((r for r in data["rows"] if r["method"] == method), key=lambda r: r["p50_ms"])
        colour = f"C{i}"
        for r in mine:
            marker = "s" if r["system"].startswith("openvino") else "o"
            ax.scatter(r["p50_ms"], 100 * r["p_at_1"], color=colour, marker=marker, alpha=0.55, s=28)
        front, best = [], -1.0
        for r in mine:
            if r["p_at_1"] > best:
                front.append(r)
                best = r["p_at_1"]
        xs, ys = [r["p50_ms"] for r in front], [100 * r["p_at_1"] for r in front]
        ax.plot(xs, ys, color=colour, marker="*", markersize=9, label=method)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks([50, 75, 100, 150, 200, 300, 400])
    ax.set_xlabel("p50 ms per question (BM25 retrieval + method), 2 threads")
    ax.set_ylabel(f"answer P@1 (%), {data['dataset']}, {data['questions']} questions")
    ax.set_title("What each millisecond buys: dev P@1 against p50 (circles torch, squares OpenVINO int8)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(title="method (line: its Pareto front)")
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--retrieve", default="5,10,15,20", help="passages retrieved, comma-separated")
    parser.add_argument("--systems", default="torch:auto,openvino:int8", help="BACKEND:PRECISION list")
    parser.add_argument("--methods", default="", help="only these methods (default: every arm)")
    parser.add_argument("--tuned-only", action="store_true", help="each cascade at its tuned ratios only")
    parser.add_argument("--record", action="store_true", help="write the grid to resources/budgets.json")
    parser.add_argument("--out", type=Path, default=Path("bench/results/budget/dev.json"))
    parser.add_argument("--plot", type=Path, help="draw a finished run's JSON instead of measuring")
    parser.add_argument("--png", type=Path, default=Path("bench/results/budget/curve.png"))
    args = parser.parse_args()
    if args.plot:
        plot(args.plot, args.png)
        return
    rows = sweep(args)
    keys = ["method", "retrieve", "system", "drop_ratios", "p_at_1", "p50_ms", "p95_ms", "layer_units"]
    print(markdown(rows, keys))
    dataset = f"squad-passages:{args.split}-sentences"
    questions = len(load_dataset(dataset)[: args.limit])
    finish(args.out, "budget", {"dataset": dataset, "questions": questions, "rows": rows})
    if args.record:
        payload = json.loads(args.out.read_text())
        record(rows, {**payload, "cpu": str(payload.get("machine", ""))})


if __name__ == "__main__":
    main()
