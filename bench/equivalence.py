"""Do two sieveqa versions score the shipped models identically? Dump under each, then compare.

The dump uses only calls both the 0.1 API and the current one have (``CrossEncoder.from_pretrained``,
``CascadeRanker(model, alpha).run``), so the same file runs under an older checkout too:

    git worktree add /tmp/old a3d0539
    (cd /tmp/old && PYTHONPATH=/tmp/old python /path/to/bench/equivalence.py dump --out /tmp/old.pt)
    python bench/equivalence.py dump --out /tmp/new.pt
    python bench/equivalence.py compare /tmp/old.pt /tmp/new.pt --out bench/results/core-v2/equivalence.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

DATASETS = ("wikiqa:test", "trecqa:test-clean")


def dump(out: Path) -> None:
    """Scores of ``default``; the ``default-cascade`` trace with its saved ratios and at α = 0."""
    from sieveqa.data.registry import load_dataset
    from sieveqa.models.cascade import CascadeTransformer
    from sieveqa.models.cross_encoder import CrossEncoder
    from sieveqa.runtime.cascade import CascadeRanker

    default = CrossEncoder.from_pretrained("default")
    cascade = CascadeTransformer.from_pretrained("default-cascade")
    results: dict[str, Any] = {}
    for name in DATASETS:
        examples = load_dataset(name)
        results[f"default {name}"] = {"scores": default.score(examples)}
        for alpha in (None, 0.0):
            run = CascadeRanker(cascade, alpha).run(examples)
            cost = getattr(run, "cost", run)  # the 0.1 API kept layer-units on the result itself
            results[f"default-cascade {name} alpha={alpha}"] = {
                "scores": run.trace.scores,
                "orders": run.trace.orders(),
                "survivors": run.trace.survivors,
                "layer_units": cost.layer_units,
            }
    torch.save(results, out)
    print(f"wrote {out}")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.equal(torch.isnan(a), torch.isnan(b)) and torch.equal(a.nan_to_num(), b.nan_to_num())
    return bool(a == b)


def compare(first: Path, second: Path, out: Path) -> None:
    from _common import finish

    a, b = torch.load(first, weights_only=False), torch.load(second, weights_only=False)
    rows = {key: {field: _same(value, b[key][field]) for field, value in a[key].items()} for key in a}
    for key, fields in rows.items():
        print(f"{key:45s} {fields}")
    finish(out, "equivalence", {"first": str(first), "second": str(second), "bitwise_identical": rows})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    pd = sub.add_parser("dump")
    pd.add_argument("--out", type=Path, required=True)
    pc = sub.add_parser("compare")
    pc.add_argument("first", type=Path)
    pc.add_argument("second", type=Path)
    pc.add_argument("--out", type=Path, default=Path("bench/results/core-v2/equivalence.json"))
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out)
    else:
        compare(args.first, args.second, args.out)


if __name__ == "__main__":
    main()
