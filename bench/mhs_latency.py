"""Like the MHS paper's Table 5: latency per pair at batch 128 and parameters, for every architecture
a teacher, student or multi-head student has (issue 13).

Latency does not depend on the weights, so the models are built over their pip-installed backbones
with untrained heads; each scores the same pairs (WikiQA test, length-sorted batches of 128, as
``sieveqa eval`` does) in one process, taking turns, ``--repeats`` times after a warm-up, and the table
reports the mean and standard deviation of microseconds per pair over the repeats.

    python bench/mhs_latency.py --out bench/results/mhs/latency.json
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _common import finish, markdown

from sieveqa.data.registry import load_dataset
from sieveqa.errors import BackboneError
from sieveqa.models.base import flatten_pairs
from sieveqa.models.cross_encoder import CrossEncoder, CrossEncoderConfig
from sieveqa.models.multihead import MultiHeadConfig, MultiHeadStudent
from sieveqa.models.pair_model import PairModel


class Ensemble:
    """Members scoring one after another, summed, as ``EnsembleRanker`` runs them (weights cost nothing)."""

    def __init__(self, *members: PairModel) -> None:
        self.members = members

    def configure(self, **settings: Any) -> Ensemble:
        for member in self.members:
            member.configure(**settings)
        return self

    def parameters(self) -> Iterator[Any]:
        return itertools.chain.from_iterable(m.parameters() for m in self.members)

    def score_pairs(self, questions: list[str], texts: list[str]) -> list[float]:
        return [sum(s) for s in zip(*(m.score_pairs(questions, texts) for m in self.members), strict=True)]


def _plain(backbone: str = "minilm-l6") -> CrossEncoder:
    return CrossEncoder(CrossEncoderConfig(backbone=backbone))


MODELS: dict[str, Callable[[], Any]] = {
    "MiniLM-L6 (plain student, the default's shape)": _plain,
    "MHS B5 2H1 (MiniLM-L6)": lambda: MultiHeadStudent(MultiHeadConfig(heads=2, head_depth=1)),
    "MHS B5 3H1 (MiniLM-L6)": lambda: MultiHeadStudent(MultiHeadConfig(heads=3, head_depth=1)),
    "MHS B4 3H2 (MiniLM-L6)": lambda: MultiHeadStudent(MultiHeadConfig(heads=3, head_depth=2)),
    "MHS B3 3H3 (MiniLM-L6)": lambda: MultiHeadStudent(MultiHeadConfig(heads=3, head_depth=3)),
    "MiniLM-L3 (teacher)": lambda: _plain("minilm-l3"),
    "MPNet-12 (teacher)": lambda: _plain("mpnet-12"),
    "Ensemble of 3 MiniLM-L6 students": lambda: Ensemble(_plain(), _plain(), _plain()),
    "Ensemble of the 3 teachers": lambda: Ensemble(_plain("mpnet-12"), _plain(), _plain("minilm-l3")),
}


def timed(
    models: dict[str, Any], questions: list[str], texts: list[str], repeats: int
) -> dict[str, list[float]]:
    """Microseconds per pair of each model in each repeat. The models take turns within a repeat (after
    one warm-up pass each), so a drift of the machine's speed reaches all of them alike."""
    for model in models.values():
        model.score_pairs(questions[:256], texts[:256])
    out: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(repeats):
        for name, model in models.items():
            started = time.perf_counter()
            model.score_pairs(questions, texts)
            out[name].append(1e6 * (time.perf_counter() - started) / len(questions))
    return out


def main() -> None:
    """Time every architecture of ``MODELS`` (or those named by ``--only``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="wikiqa:test")
    parser.add_argument("--pairs", type=int, default=1024, help="pairs scored per repeat")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", nargs="*", help="substrings of the model names to run (default: all)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/mhs/latency.json"))
    args = parser.parse_args()
    questions, texts = flatten_pairs(load_dataset(args.dataset))
    questions, texts = questions[: args.pairs], texts[: args.pairs]
    models: dict[str, Any] = {}
    for name, build in MODELS.items():
        if args.only and not any(o in name for o in args.only):
            continue
        try:
            models[name] = build().configure(device="cpu", precision="fp32", batch_size=128)
        except BackboneError as err:
            print(f"{name}: skipped ({err})")
    runs = timed(models, questions, texts, args.repeats)
    rows: list[dict[str, Any]] = [
        {"model": name, "parameters_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
         "us_per_pair": round(statistics.mean(runs[name]), 1), "std": round(statistics.stdev(runs[name]), 1)}
        for name, model in models.items()
    ]  # fmt: skip
    base = rows[0]["us_per_pair"]
    for row in rows:
        row["vs_plain"] = round(row["us_per_pair"] / base, 2)
    print(markdown(rows, ["model", "parameters_m", "us_per_pair", "std", "vs_plain"]))
    finish(
        args.out,
        "mhs_latency",
        {"dataset": args.dataset, "pairs": len(questions), "batch_size": 128, "rows": rows},
    )


if __name__ == "__main__":
    main()
