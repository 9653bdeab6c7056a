"""Dev curves of training runs: a metric of each run's dev evaluations (its ``train_log.json``)
against the training pairs seen, one line per run, the best point of each marked.

    python bench/dev_curves.py --run "whole=bench/results/large/transfer-train_log.json" \\
        --run "rank 16=bench/results/large/lora-transfer-train_log.json" --batch-size 32 \\
        --title "MPNet-12 teacher, transfer" --out docs/img/large-transfer-dev.png

A run's step 0 (``train --eval-at-start``) is its start; an entry logged at an epoch's end is placed at
the steps it took (its ``step``). Runs of different batch sizes: give ``--batch-size`` per run as
``LABEL=PATH@32``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def points(log: list[dict[str, Any]], metric: str) -> list[tuple[int, float]]:
    """(step, metric) of every dev evaluation in a train log, in step order (one per step)."""
    found = {int(e["step"]): float(e[metric]) for e in log if metric in e and "step" in e}
    return sorted(found.items())


def parse_run(spec: str, batch_size: int) -> tuple[str, Path, int]:
    """``LABEL=PATH`` or ``LABEL=PATH@BATCH``."""
    label, sep, rest = spec.partition("=")
    if not sep or not label or not rest:
        raise SystemExit(f"--run {spec!r}: give LABEL=PATH (PATH a train_log.json)")
    path, at, size = rest.rpartition("@") if "@" in rest else (rest, "", "")
    if at and not size.isdigit():
        raise SystemExit(f"--run {spec!r}: the batch size after @ is a number")
    return label, Path(path), int(size) if at else batch_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", default=[], required=True, help="LABEL=PATH[@BATCH]")
    parser.add_argument("--metric", default="map")
    parser.add_argument("--batch-size", type=int, default=32, help="pairs a step (x axis: pairs seen)")
    parser.add_argument("--title", default="")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    runs = [parse_run(spec, args.batch_size) for spec in args.run]
    for label, path, _ in runs:
        if not path.is_file():
            raise SystemExit(f"--run {label}: {path}: no such file")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, path, size in runs:
        curve = points(json.loads(path.read_text(encoding="utf-8")), args.metric)
        if not curve:
            raise SystemExit(f"--run {label}: {path} has no dev {args.metric}")
        xs, ys = [s * size for s, _ in curve], [v for _, v in curve]
        line = ax.plot(xs, ys, marker="o", markersize=3, label=label)[0]
        best = max(range(len(ys)), key=ys.__getitem__)
        ax.plot(xs[best], ys[best], marker="*", markersize=12, color=line.get_color())
    ax.set_xlabel("training pairs seen")
    ax.set_ylabel(f"dev {args.metric.upper()}")
    ax.set_title(args.title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
