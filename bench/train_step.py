"""Time a training step of a pair ranker in fp32 and under bf16 autocast, on the same batches.

Each precision trains its own copy of the model from the same initial weights on the same
length-sorted batches (real (question, sentence) pairs), after a warm-up; precisions take turns so
that a change in machine load hits both. Reports seconds per optimizer step, pairs per second and
the mean loss of the timed steps (a sanity check that bf16 learns the same thing).

    python bench/train_step.py --steps 30 --out bench/results/tanda/train-step.json
"""

from __future__ import annotations

import argparse
import copy
import random
import statistics
import time
from pathlib import Path

import torch
from _common import finish

from sieveqa.batching import length_batches
from sieveqa.data.registry import load_datasets
from sieveqa.device import autocast
from sieveqa.training.batches import PairTensors
from sieveqa.training.objectives import PointwiseBCE
from sieveqa.training.pairs import make_pairs
from sieveqa.training.run import init_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", default="minilm-l6")
    parser.add_argument("--dataset", default="wikiqa:train,trecqa:train-all")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30, help="timed steps per precision and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--out", type=Path, default=Path("bench/results/tanda/train-step.json"))
    args = parser.parse_args()

    torch.manual_seed(0)
    base = init_model(args.init, "cross-encoder")
    pairs = make_pairs(load_datasets(args.dataset), max_negatives=6, seed=0)
    data = PairTensors(
        base.featurize(pairs.questions, pairs.texts),
        torch.tensor(pairs.labels, dtype=torch.float32),
        base.pad_id,
    )
    batches = length_batches(data.lengths, args.batch_size, rng=random.Random(0))[: args.steps + 3]
    objective = PointwiseBCE()
    models = {p: copy.deepcopy(base).train() for p in args.precisions.split(",")}
    optims = {p: torch.optim.AdamW(m.parameters(), lr=3e-5) for p, m in models.items()}
    times: dict[str, list[float]] = {p: [] for p in models}
    losses: dict[str, list[float]] = {p: [] for p in models}
    tokens = sum(max(data.lengths[r] for r in rows) * len(rows) for rows in batches[3:])
    for round_ in range(args.rounds):
        for precision, model in models.items():
            for i, rows in enumerate(batches):
                start = time.perf_counter()
                with autocast(torch.device("cpu"), precision):
                    loss = objective(model, data.batch(rows))
                loss.backward()
                optims[precision].step()
                optims[precision].zero_grad(set_to_none=True)
                if i >= 3:  # the first batches warm up oneDNN's kernels for each shape
                    times[precision].append(time.perf_counter() - start)
                    if round_ == 0:
                        losses[precision].append(loss.item())
    rows_per_step = args.batch_size
    result = {
        p: {
            "seconds_per_step": round(statistics.median(t), 4),
            "pairs_per_second": round(rows_per_step / statistics.median(t), 1),
            "mean_loss_first_round": round(statistics.fmean(losses[p]), 4),
        }
        for p, t in times.items()
    }
    if "fp32" in result:
        for p in result:
            result[p]["speedup_over_fp32"] = round(
                result["fp32"]["seconds_per_step"] / result[p]["seconds_per_step"], 2
            )
    print(result)
    finish(
        args.out,
        "train_step",
        {
            "init": args.init,
            "dataset": args.dataset,
            "batch_size": args.batch_size,
            "steps": args.steps,
            "rounds": args.rounds,
            "padded_tokens_per_round": tokens,
            "threads": torch.get_num_threads(),
            "result": result,
        },
    )


if __name__ == "__main__":
    main()
