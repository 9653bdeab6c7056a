"""``sieveqa export MODEL --format hf``: how close sentence-transformers' CrossEncoder, loading the
exported folder, scores to sieveqa (fp32 both) over every pair of a dataset: the largest difference of
the probabilities and of the logits, over all pairs and over those within the model's max_length
(longer ones are cut differently: sieveqa cuts the candidate, Hugging Face the longer side), and
MAP / P@1 of each.

    python bench/hf_export.py --models default,peasi-pr --out bench/results/backends/hf-export.json
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch
from _common import finish

from sieveqa.data.registry import load_dataset
from sieveqa.evaluation.metrics import evaluate_scores
from sieveqa.exported.hf import export_hf
from sieveqa.models.base import flatten_pairs, regroup
from sieveqa.models.zoo import load_model


def compare(name: str, dataset: str) -> dict[str, object]:
    from sentence_transformers import CrossEncoder

    examples = [e for e in load_dataset(dataset) if e.candidates]
    questions, texts = flatten_pairs(examples)
    pairs = list(zip(questions, texts, strict=True))
    model = load_model(name).configure(precision="fp32")
    ours = model.predict(pairs, activation_fn=torch.nn.Identity())
    lengths = model.featurizer.pairs(questions, texts, 10_000).lengths
    within = np.array([n <= model.config.max_length for n in lengths])
    with tempfile.TemporaryDirectory() as tmp:
        st = CrossEncoder(str(export_hf(model, Path(tmp) / "hf")), device="cpu")
        theirs = st.predict(pairs, activation_fn=torch.nn.Identity(), batch_size=64)
    sigmoid = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    logit_diff, prob_diff = np.abs(ours - theirs), np.abs(sigmoid(ours) - sigmoid(theirs))
    report = {}
    for label, scores in (("sieveqa", ours), ("sentence_transformers", theirs)):
        mean = evaluate_scores(examples, regroup(examples, scores.tolist())).mean
        report[label] = {"map": round(mean["map"], 4), "p@1": round(mean["p@1"], 4)}
    return {
        "model": name,
        "dataset": dataset,
        "pairs": len(pairs),
        "pairs_over_max_length": int((~within).sum()),
        "max_abs_prob_diff": float(prob_diff.max()),
        "max_abs_prob_diff_within_max_length": float(prob_diff[within].max()),
        "max_abs_logit_diff_within_max_length": float(logit_diff[within].max()),
        **report,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default="default,peasi-pr")
    parser.add_argument("--dataset", default="wikiqa:test")
    parser.add_argument("--out", type=Path, default=Path("bench/results/backends/hf-export.json"))
    args = parser.parse_args()
    rows = [compare(name, args.dataset) for name in args.models.split(",")]
    for row in rows:
        print(row)
    finish(args.out, "hf_export", {"rows": rows})


if __name__ == "__main__":
    main()
