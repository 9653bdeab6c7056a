"""The abstention curves of ``sieveqa calibrate-confidence --json`` reports: share of answerable test
questions answered against the accuracy of those answered, with the share of unanswerable questions
(on topic, or whose article is not indexed) that abstain, one line per method; the dev-chosen
min-confidence marked.

    python bench/abstention_plot.py bench/results/abstention/skyline-judge.json \\
        bench/results/abstention/peasi.json --out bench/results/abstention/curves.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--split", default="check", help="the report's part to draw (dev or check)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for path in args.reports:
        report = json.loads(path.read_text(encoding="utf-8"))
        part = report[args.split]
        curve = part["curve"]
        answering = [p for p in curve if p["answered"] > 0]  # no accuracy where nothing is answered
        line = left.plot([p["answered"] for p in answering], [p["accuracy_answered"] for p in answering],
                         marker="o", markersize=3, label=report["method"])[0]  # fmt: skip
        at = part["at_min_confidence"]
        left.plot(at["answered"], at["accuracy_answered"], marker="*", markersize=12, color=line.get_color())
        abstain = [p.get("unanswerable_abstain", p.get("unindexed_abstain")) for p in curve]  # older reports
        right.plot([p["threshold"] for p in curve], abstain,
                   color=line.get_color(), label=f"{report['method']}: unanswerable abstain")  # fmt: skip
        right.plot([p["threshold"] for p in curve], [p["right_kept"] for p in curve], linestyle="--",
                   color=line.get_color(), label=f"{report['method']}: right answers kept")  # fmt: skip
    left.set_xlabel("answerable questions answered (%)")
    left.set_ylabel("accuracy of the answered (%)")
    left.legend(fontsize=8)
    left.grid(alpha=0.3)
    right.axhline(80, color="grey", linestyle=":")
    right.axhline(90, color="grey", linestyle=":")
    right.set_xlabel("min-confidence")
    right.set_ylabel("%")
    right.legend(fontsize=7)
    right.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
