"""What the per-row encoder state costs: advancing rows one layer at a time against a plain forward.

The same pairs (the first WikiQA test candidates) are run, in one process and alternating:

- *plain*: one padded batch through embeddings and every layer (``SteppableEncoder.forward``);
- *per-row, all together*: ``start`` then ``advance`` of every row, once per layer;
- *per-row, groups of g*: every layer given to ``g`` rows per ``advance`` call (g = 1 is what a
  tower scheduler pays when it gives one passage one layer at a time).

Each figure is the median of ``--repeats`` timed passes after a warm-up.

    python bench/encoder.py --out bench/results/encoder.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from _common import finish, markdown

from sieveqa.backbones import load_backbone
from sieveqa.batching import collate
from sieveqa.data.registry import load_dataset
from sieveqa.encoder import Cost, SteppableEncoder
from sieveqa.features import Featurizer


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="minilm-l6")
    parser.add_argument("--dataset", default="wikiqa:test")
    parser.add_argument("--rows", type=int, default=30)
    parser.add_argument("--groups", default="1,4,8,30")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("bench/results/encoder.json"))
    args = parser.parse_args()

    backbone = load_backbone(args.backbone)
    backbone.model.eval()
    encoder = SteppableEncoder(backbone.model)
    examples = load_dataset(args.dataset)
    pairs = [(ex.question.text, c.text) for ex in examples for c in ex.candidates][: args.rows]
    features = Featurizer(backbone.tokenizer).pairs([q for q, _ in pairs], [t for _, t in pairs], 128)
    pad = backbone.tokenizer.pad_token_id
    batch = collate(features, list(range(len(features))), pad)
    rows = list(range(len(features)))
    depth = encoder.num_layers

    def plain() -> torch.Tensor:
        return encoder(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"], cost=Cost())

    def per_row(group: int) -> Callable[[], object]:
        def run() -> object:
            state = encoder.start(features, pad, batch_size=len(rows), cost=Cost())
            for _ in range(depth):
                for lo in range(0, len(rows), group):
                    encoder.advance(state, rows[lo : lo + group], batch_size=group)
            return state

        return run

    groups = [int(g) for g in args.groups.split(",")]
    systems = {"plain forward": plain, **{f"per-row, groups of {g}": per_row(g) for g in groups}}
    with torch.inference_mode():
        # The per-row state must compute what the plain forward does.
        state = per_row(len(rows))()
        reference = plain()
        worst = max(float((state.hidden[r] - reference[r, : features.lengths[r]]).abs().max()) for r in rows)
        for fn in systems.values():
            fn()  # warm-up
        times: dict[str, list[float]] = {name: [] for name in systems}
        for _ in range(args.repeats):
            for name, fn in systems.items():
                times[name].append(_seconds(fn))
    units = len(rows) * depth
    base = statistics.median(times["plain forward"])
    table = []
    for name, ts in times.items():
        seconds = statistics.median(ts)
        table.append(
            {
                "system": name,
                "median_ms": round(1000 * seconds, 2),
                "vs_plain": round(seconds / base, 3),
                "ms_per_layer_unit": round(1000 * seconds / units, 3),
            }
        )
    print(markdown(table, ["system", "median_ms", "vs_plain", "ms_per_layer_unit"]))
    finish(
        args.out,
        "encoder",
        {
            "backbone": args.backbone,
            "dataset": args.dataset,
            "rows": len(rows),
            "layers": depth,
            "mean_tokens": round(sum(features.lengths) / len(rows), 1),
            "max_tokens": max(features.lengths),
            "repeats": args.repeats,
            "max_abs_diff_per_row_vs_plain": worst,
            "results": table,
        },
    )


if __name__ == "__main__":
    main()
