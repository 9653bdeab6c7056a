"""Throughput of `sieveqa eval`'s scoring path against sentence-transformers' CrossEncoder.

Both score the same pairs with the same weights in one process, alternating, so the ratio is fair.
sentence-transformers' CrossEncoder runs a Hugging Face ``BertForSequenceClassification``, whose head
is ``classifier(tanh(pooler(h_cls)))``; sieveqa's is ``linear(h_cls)``. The export below sets the
pooler to ``eps·I`` and the classifier to ``w/eps``: since tanh(z) = z - z³/3 + ..., the scores agree
to about (eps·|h|)² relative error, and the ranking agreement is measured rather than assumed.

    python bench/throughput.py --model default --dataset wikiqa:test --out bench/results/throughput.json
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
from transformers import BertConfig, BertForSequenceClassification

from sieveqa.data.registry import load_dataset
from sieveqa.evaluation.metrics import evaluate_scores
from sieveqa.evaluation.provenance import run_info
from sieveqa.io import atomic_write_json
from sieveqa.models.base import regroup
from sieveqa.models.cross_encoder import CrossEncoder


def export_for_sentence_transformers(model: CrossEncoder, path: Path, eps: float = 1e-3) -> Path:
    """Write ``model`` as a BertForSequenceClassification folder that sentence-transformers can load."""
    if model.config.pooling != "cls":
        raise ValueError("only CLS-pooled cross-encoders map onto BertForSequenceClassification")
    backbone = model.encoder.backbone
    config = BertConfig(**{**backbone.config.to_dict(), "num_labels": 1})
    hf = BertForSequenceClassification(config).eval()
    missing = hf.bert.load_state_dict(backbone.state_dict(), strict=False)
    assert missing.missing_keys == ["pooler.dense.weight", "pooler.dense.bias"], missing
    linear = model.head[1]
    with torch.no_grad():
        hf.bert.pooler.dense.weight.copy_(torch.eye(config.hidden_size) * eps)
        hf.bert.pooler.dense.bias.zero_()
        hf.classifier.weight.copy_(linear.weight / eps)
        hf.classifier.bias.copy_(linear.bias)
    hf.save_pretrained(path)
    model.tokenizer.save_pretrained(path)
    return path


def as_sentence_transformers(model: CrossEncoder):  # -> sentence_transformers.CrossEncoder
    """The same weights loaded by sentence-transformers' CrossEncoder, on the CPU."""
    from sentence_transformers import CrossEncoder as STCrossEncoder

    with tempfile.TemporaryDirectory() as tmp:
        path = export_for_sentence_transformers(model, Path(tmp) / "st")
        return STCrossEncoder(str(path), device="cpu", max_length=model.config.max_length)


def agreement(a: list[list[float]], b: list[list[float]]) -> float:
    """Share of questions whose top-ranked candidate is the same under both score lists."""
    same = sum(
        max(range(len(x)), key=x.__getitem__) == max(range(len(y)), key=y.__getitem__)
        for x, y in zip(a, b, strict=True)
    )
    return same / len(a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--dataset", default="wikiqa:test")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--precisions", default="fp32,bf16,int8")
    parser.add_argument("--out", type=Path, default=Path("bench/results/throughput.json"))
    args = parser.parse_args()

    examples = load_dataset(args.dataset)[: args.limit]
    pairs = [(ex.question.text, c.text) for ex in examples for c in ex.candidates]
    ours = CrossEncoder.from_pretrained(args.model)
    ours.batch_size = args.batch_size
    st = as_sentence_transformers(ours)

    def run_st() -> list[float]:
        return [float(s) for s in st.predict(pairs, batch_size=args.batch_size, show_progress_bar=False)]

    def run_ours(precision: str) -> list[float]:
        ours.precision = precision
        return ours.score_pairs([q for q, _ in pairs], [t for _, t in pairs])

    systems = {
        "sentence-transformers": run_st,
        **{f"sieveqa-{p}": (lambda p=p: run_ours(p)) for p in args.precisions.split(",")},
    }
    times: dict[str, list[float]] = {name: [] for name in systems}
    scores: dict[str, list[float]] = {}
    for name, fn in systems.items():
        scores[name] = fn()  # warm-up (and the scores compared below)
    for _ in range(args.repeats):
        for name, fn in systems.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)

    reference = regroup(examples, scores["sentence-transformers"])
    rows = {}
    for name in systems:
        per_q = regroup(examples, scores[name])
        metrics = evaluate_scores(examples, per_q).as_dict()
        seconds = statistics.median(times[name])
        rows[name] = {
            "pairs_per_second": round(len(pairs) / seconds, 1),
            "median_seconds": round(seconds, 3),
            "map": metrics["map"],
            "p@1": metrics["p@1"],
            "top1_agreement_with_st": round(agreement(reference, per_q), 4),
        }
    base = rows["sentence-transformers"]["pairs_per_second"]
    for row in rows.values():
        row["speedup_vs_st"] = round(row["pairs_per_second"] / base, 2)
    command = "python bench/throughput.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v is not None
    )
    result = {
        "bench": "throughput",
        **run_info(command),
        "dataset": args.dataset,
        "n_pairs": len(pairs),
        "n_questions": len(examples),
        "results": rows,
    }
    atomic_write_json(args.out, result)
    for name, row in rows.items():
        print(f"{name:24s} {row}")


if __name__ == "__main__":
    main()
