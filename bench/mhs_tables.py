"""Like the MHS paper's Tables 2 and 4: P@1, MAP and MRR of every teacher, student and ensemble on the
test sets, with parameters (issue 13).

Each model scores each dataset once (``cached_scores``: fp32 on the CPU, cached under
~/.cache/sieveqa/scores), so adding a row or a dataset costs only the new scores. An ensemble folder
(``sieveqa tune-ensemble``) is its members' cached scores summed with its tuned weights; its
parameters are its members' together. A row whose folder does not exist yet is listed as missing.

    python bench/mhs_tables.py --row "MiniLM-L6 (default)=default" --row "MHS B5 3H1=runs/mhs/b5-3h1/best" \
        --dataset wikiqa:test --dataset trecqa:test-clean --out bench/results/mhs/table2.json
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from _common import finish, labelled, markdown, pct

from sieveqa.data.registry import load_dataset
from sieveqa.evaluation.ensemble_search import member_columns
from sieveqa.evaluation.metrics import evaluate_scores
from sieveqa.models.base import flatten_pairs, regroup
from sieveqa.models.zoo import SHIPPED, load_model
from sieveqa.runtime.ensemble import EnsembleSpec, is_ensemble, weighted_sum
from sieveqa.training.pairs import LabelledPairs
from sieveqa.training.teachers import is_model_free_teacher, load_embedder_teacher, own_scores

METRICS = ("p@1", "map", "mrr")


def parameters(model: str) -> int:
    """Every parameter a model (or all members of an ensemble) holds, frozen embeddings included."""
    if is_ensemble(model):
        return sum(parameters(m) for m, _ in EnsembleSpec.load(model).active)
    if model == "bm25":
        return 0
    if model.startswith("embedder:"):
        return sum(p.numel() for p in load_embedder_teacher(model).parameters())
    return sum(p.numel() for p in load_model(model.removeprefix("reader:")).parameters())


def scores(model: str, dataset: str, examples: list[Any]) -> list[float]:
    """The final score of every candidate: a model's own, a model-free teacher's (``bm25``,
    ``embedder:mpnet-12``, ``reader:reader``, as ``teacher-scores`` takes them, before they are made
    logits), or an ensemble's weighted sum."""
    if is_model_free_teacher(model):
        questions, texts = flatten_pairs(examples)
        return own_scores(model, LabelledPairs(questions, texts, [math.nan] * len(texts)))
    if is_ensemble(model):
        members, weights = zip(*EnsembleSpec.load(model).active, strict=True)
        return weighted_sum(member_columns(members, dataset, examples), weights)
    return member_columns([model], dataset, examples)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", action="append", default=[], help="LABEL=MODEL (a name or folder)")
    parser.add_argument("--dataset", action="append", default=[], help="test set(s), e.g. wikiqa:test")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows_in = labelled(args.row, "--row")
    data = {name: load_dataset(name) for name in args.dataset}
    rows: list[dict[str, Any]] = []
    for label, model in rows_in.items():
        if model not in SHIPPED and not Path(model).is_dir() and not is_model_free_teacher(model):
            print(f"{label}: {model} missing, skipped")
            rows.append({"model": label, "path": model, "missing": True})
            continue
        row: dict[str, Any] = {
            "model": label,
            "path": model,
            "parameters_m": round(parameters(model) / 1e6, 1),
        }
        for name, examples in data.items():
            report = evaluate_scores(examples, regroup(examples, scores(model, name, examples)))
            row[name] = pct(report.mean, METRICS)
        rows.append(row)
        print(label, {k: v for k, v in row.items() if k not in ("model", "path")})
    flat = [
        {"model": r["model"], "params (M)": r.get("parameters_m", "")}
        | {f"{d} {m}": r[d][m] for d in data if d in r for m in METRICS}
        for r in rows
        if not r.get("missing")
    ]
    keys = ["model", "params (M)", *(f"{d} {m}" for d in data for m in METRICS)]
    print(markdown(flat, keys))
    finish(args.out, "mhs_tables", {"datasets": list(data), "metrics": list(METRICS), "rows": rows})


if __name__ == "__main__":
    main()
