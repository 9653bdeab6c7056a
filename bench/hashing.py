"""HAS benchmarks: the paper's Table 5 (accuracy against BERT-pooling / BERT-attention), Table 6
(accuracy, time per question and memory over large candidate pools) and the β / δ sensitivity.

    python bench/hashing.py table5 --dataset wikiqa:test --model bert-pooling=P --model has=H ...
    python bench/hashing.py table6 --dataset wikiqa:test --pool 500 --model bert-pooling=P \
        --model bert-attention=A --model has=H
    python bench/hashing.py sensitivity --model beta=1:PATH ... --model delta=0:PATH ...

Table 6 builds every store in one temporary folder and times the methods question by question,
alternating, in one process: BERT-pooling over stored vectors, BERT-attention recomputing its 500
answer matrices per question, BERT-attention over stored float32 matrices, HAS over stored bits.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import finish, labelled, markdown, pct

from sieveqa.data.records import Candidate, RankingExample
from sieveqa.data.registry import load_dataset
from sieveqa.evaluation.metrics import evaluate_scores
from sieveqa.io import atomic_write_json, file_sha256
from sieveqa.models.hashing import HashingModel
from sieveqa.runtime.store.answer_store import AnswerStore
from sieveqa.runtime.store.ranker import StoreRanker

METRICS = ("map", "mrr", "p@1")
RESULTS = Path(__file__).resolve().parent / "results" / "hashing"


def table5(args: argparse.Namespace) -> None:
    """MAP / MRR / P@1 of each model on the dataset (every candidate scored, answers hashed for HAS)."""
    examples = load_dataset(args.dataset)
    rows = []
    for label, path in labelled(args.model, "--model").items():
        model = HashingModel.from_pretrained(path)
        report = evaluate_scores(examples, model.score(examples, progress=True))
        rows.append({"model": label, "path": path, **pct(report.mean, METRICS)})
        print(rows[-1])
    table = markdown(rows, ["model", *METRICS])
    print(table)
    finish(args.out, "hashing-table5", {"dataset": args.dataset, "rows": rows, "markdown": table})


def make_pools(examples: Sequence[RankingExample], size: int, seed: int) -> list[RankingExample]:
    """Each question's own candidates plus answers drawn from the other questions' candidates, up to
    ``size`` (the added ones count as wrong: they answer other questions)."""
    everything = {c.id: c.text for ex in examples for c in ex.candidates}
    ids = sorted(everything)
    if len(ids) < size:
        raise SystemExit(f"the dataset holds only {len(ids)} distinct answers, fewer than --pool {size}")
    rng = random.Random(seed)
    pools = []
    for ex in examples:
        own = {c.id for c in ex.candidates}
        texts = {c.text for c in ex.candidates}
        extra = [
            i for i in rng.sample(ids, min(len(ids), 2 * size)) if i not in own and everything[i] not in texts
        ]
        added = [Candidate(i, everything[i], 0) for i in extra[: size - len(ex.candidates)]]
        pools.append(RankingExample(ex.question, [*ex.candidates, *added]))
    return pools


_RSS_PROBE = """
import sys
import numpy as np
from sieveqa.runtime.store.answer_store import AnswerStore

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * {page}

store = AnswerStore.open(sys.argv[1], verify=False)  # ids and texts loaded, values only mapped
before = rss()
# every value read into RAM (not mapped: mapped file pages would count as resident too)
arrays = [np.fromfile(store.path / seg.name / "values.bin", dtype=np.uint8) for seg in store.segments]
print(rss() - before)
"""


def _store_memory(path: Path) -> dict[str, int]:
    """Bytes of the stored representations: on disk, as arrays, and the resident memory a fresh
    process gains by reading them into RAM (in a subprocess, so no freed memory is reused; ids and
    texts are loaded before the measurement starts)."""
    store = AnswerStore.open(path)
    probe = _RSS_PROBE.format(page=os.sysconf("SC_PAGE_SIZE"))
    done = subprocess.run(
        [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True
    )
    return {
        "disk_bytes": store.disk_bytes(),
        "ram_bytes": store.ram_bytes(),
        "rss_delta_bytes": int(done.stdout.strip().splitlines()[-1]),
    }


def table6(args: argparse.Namespace) -> None:
    """Accuracy, time per question and memory over pools of ``--pool`` candidates per question."""
    torch.set_num_threads(args.threads)
    examples = [ex for ex in load_dataset(args.dataset) if any(c.label == 1 for c in ex.candidates)]
    pools = make_pools(examples, args.pool, args.seed)
    answers = sorted({(c.id, c.text) for ex in pools for c in ex.candidates})
    models = {
        label: HashingModel.from_pretrained(path) for label, path in labelled(args.model, "--model").items()
    }
    rows: dict[str, dict[str, Any]] = {}
    rankers: dict[str, StoreRanker] = {}
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for label, model in models.items():
            started = time.perf_counter()
            AnswerStore.build(model, answers, Path(tmp) / label, progress=True)
            build_seconds = time.perf_counter() - started
            rankers[label] = StoreRanker(model, AnswerStore.open(Path(tmp) / label))
            memory = _store_memory(Path(tmp) / label)
            report = evaluate_scores(pools, rankers[label].score(pools, progress=True))
            rows[label] = {
                "method": f"{label} ({model.config.store_kind} store)",
                "store": model.config.store_kind,
                **pct(report.mean, METRICS),
                **memory,
                "build_seconds": round(build_seconds, 1),
            }
        recompute = [label for label, m in models.items() if m.config.store_kind == "float"]
        times: dict[str, list[float]] = {
            label: [] for label in [*models, *(f"{r} recompute" for r in recompute)]
        }
        max_diff = 0.0
        for ex in pools[: args.time_questions]:
            ids = [c.id for c in ex.candidates]
            for label, ranker in rankers.items():
                started = time.perf_counter()
                stored = ranker.score_ids(ex.question.text, ids)
                times[label].append(time.perf_counter() - started)
            for label in recompute:
                model = models[label]
                started = time.perf_counter()
                question = model.encode_questions([ex.question.text])[0]
                fresh = model.score_encoded(question, model.encode_answers([c.text for c in ex.candidates]))
                times[f"{label} recompute"].append(time.perf_counter() - started)
                stored = rankers[label].score_ids(ex.question.text, ids)
                max_diff = max(max_diff, float((fresh - stored).abs().max()))
        with_stats = []
        for label, values in times.items():
            base = rows[label.removesuffix(" recompute")]
            row = (
                dict(base)
                if label in rows
                else {**base, "method": f"{label} (nothing stored)", "store": "none"}
            )
            if label not in rows:
                row.update(disk_bytes=0, ram_bytes=0, rss_delta_bytes=0)
            row["seconds_per_question"] = round(statistics.mean(values), 4)
            with_stats.append(row)
    slowest = max(r["seconds_per_question"] for r in with_stats)
    floats = [r for r in with_stats if r["store"] == "float"]
    for row in with_stats:
        row["speedup_vs_slowest"] = round(slowest / row["seconds_per_question"], 1)
        if floats and row["ram_bytes"]:
            row["ram_vs_float_store"] = round(row["ram_bytes"] / floats[0]["ram_bytes"], 4)
            row["disk_vs_float_store"] = round(row["disk_bytes"] / floats[0]["disk_bytes"], 4)
    keys = [
        "method",
        *METRICS,
        "seconds_per_question",
        "speedup_vs_slowest",
        "disk_bytes",
        "ram_bytes",
        "rss_delta_bytes",
        "ram_vs_float_store",
    ]
    table = markdown(with_stats, keys)
    print(table)
    payload = {
        "dataset": args.dataset,
        "pool": args.pool,
        "questions": len(pools),
        "distinct_answers": len(answers),
        "timed_questions": min(args.time_questions, len(pools)),
        "threads": args.threads,
        "recompute_vs_float_store_max_abs_diff": max_diff,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "models": labelled(args.model, "--model"),
        "rows": with_stats,
        "markdown": table,
    }
    finish(args.out, "hashing-table6", payload)


def sensitivity(args: argparse.Namespace) -> None:
    """MAP / MRR on dev and test for models trained with other β or δ; one PNG with two panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    datasets = {"dev": load_dataset(args.dev), "test": load_dataset(args.test)}
    # Metrics per model, keyed by its weights and the splits, so a re-run only scores new models.
    cache_file = args.out.with_suffix(".cache.json")
    cache = json.loads(cache_file.read_text()) if cache_file.is_file() else {}
    for spec in args.model:
        name, _, rest = spec.partition("=")
        value, _, path = rest.partition(":")
        if name not in ("beta", "delta") or not path:
            raise SystemExit(f"--model needs beta=VALUE:PATH or delta=VALUE:PATH, got {spec!r}")
        key = f"{file_sha256(Path(path) / 'model.safetensors')}|{args.dev}|{args.test}"
        if key not in cache:
            model = HashingModel.from_pretrained(path)
            cache[key] = {}
            for split, examples in datasets.items():
                mean = evaluate_scores(examples, model.score(examples)).mean
                cache[key].update({f"{split}_{m}": round(100 * mean[m], 1) for m in ("map", "mrr")})
            atomic_write_json(cache_file, cache)
        rows.append({"param": name, "value": float(value), "path": path, **cache[key]})
        print(rows[-1])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, param in zip(axes, ("beta", "delta"), strict=True):
        points = sorted((r for r in rows if r["param"] == param), key=lambda r: r["value"])
        if not points:
            continue
        xs = list(range(len(points)))
        for key, style in (("test_map", "o-"), ("test_mrr", "s-"), ("dev_map", "o--")):
            ax.plot(xs, [p[key] for p in points], style, label=key.replace("_", " ").upper())
        ax.set_xticks(xs, [f"{p['value']:g}" for p in points])
        fixed = "δ = 1e-6" if param == "beta" else "β = 5"
        ax.set_xlabel("β" if param == "beta" else "δ")
        ax.set_title(f"sensitivity of {'β' if param == 'beta' else 'δ'} ({fixed})")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    png = args.out.with_suffix(".png")
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=120)
    table = markdown(rows, ["param", "value", "dev_map", "dev_mrr", "test_map", "test_mrr"])
    print(table)
    finish(
        args.out,
        "hashing-sensitivity",
        {"dev": args.dev, "test": args.test, "rows": rows, "plot": png.name, "markdown": table},
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p5 = sub.add_parser("table5", help=table5.__doc__)
    p5.add_argument("--dataset", default="wikiqa:test")
    p5.add_argument("--model", action="append", required=True, help="LABEL=PATH, repeatable")
    p5.add_argument("--out", type=Path)
    p6 = sub.add_parser("table6", help=table6.__doc__)
    p6.add_argument("--dataset", default="wikiqa:test")
    p6.add_argument("--model", action="append", required=True, help="LABEL=PATH, repeatable")
    p6.add_argument("--pool", type=int, default=500, help="candidates per question")
    p6.add_argument("--time-questions", type=int, default=50, help="questions timed per method")
    p6.add_argument("--threads", type=int, default=torch.get_num_threads())
    p6.add_argument("--seed", type=int, default=0)
    p6.add_argument("--tmp", type=Path, default=None, help="where the temporary stores go")
    p6.add_argument("--out", type=Path, default=RESULTS / "table6.json")
    ps = sub.add_parser("sensitivity", help=sensitivity.__doc__)
    ps.add_argument("--model", action="append", required=True, help="beta=VALUE:PATH or delta=VALUE:PATH")
    ps.add_argument("--dev", default="wikiqa:dev")
    ps.add_argument("--test", default="wikiqa:test")
    ps.add_argument("--out", type=Path, default=RESULTS / "sensitivity.json")
    args = parser.parse_args()
    if args.command == "table5" and args.out is None:
        args.out = RESULTS / f"table5-{args.dataset.replace(':', '-')}.json"
    {"table5": table5, "table6": table6, "sensitivity": sensitivity}[args.command](args)


if __name__ == "__main__":
    main()
