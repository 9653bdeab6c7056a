"""Throughput of `sieveqa eval`'s scoring path against sentence-transformers' CrossEncoder.

Both score the same pairs with the same weights in one process, alternating, so the ratio is fair.
sentence-transformers' CrossEncoder runs a Hugging Face ``BertForSequenceClassification``, whose head
is ``classifier(tanh(pooler(h_cls)))``; sieveqa's is ``linear(h_cls)``. The export below sets the
pooler to ``eps·I`` and the classifier to ``w/eps``: since tanh(z) = z - z³/3 + ..., the scores agree
to about (eps·|h|)² relative error, and the ranking agreement is measured rather than assumed.
sentence-transformers runs in fp32 and, with ``--st-precisions fp32,bf16``, with bf16 weights too.
sieveqa's systems are ``BACKEND:PRECISION`` (a bare precision is torch's): ``onnx:int8`` and
``openvino:int8`` need ``sieveqa export MODEL --format F --int8`` first; fp32 exports are made on use.

    python bench/throughput.py --model default --dataset wikiqa:test --out bench/results/throughput.json
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from _common import finish
from transformers import BertConfig, BertForSequenceClassification

from sieveqa.data.registry import load_dataset
from sieveqa.errors import require_extra
from sieveqa.evaluation.metrics import evaluate_scores
from sieveqa.models.base import regroup
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.runtime.policy import load_ranker


def export_for_sentence_transformers(model: CrossEncoder, path: Path, eps: float = 1e-3) -> Path:
    """Write ``model`` as a BertForSequenceClassification folder that sentence-transformers can load."""
    if model.config.pooling != "cls":
        raise ValueError("only CLS-pooled cross-encoders map onto BertForSequenceClassification")
    backbone = model.encoder.backbone
    config = BertConfig(**{**backbone.config.to_dict(), "num_labels": 1})
    hf = BertForSequenceClassification(config).eval()
    missing = hf.bert.load_state_dict(backbone.state_dict(), strict=False)
    assert missing.missing_keys == ["pooler.dense.weight", "pooler.dense.bias"], missing
    linear = model.head.output
    with torch.no_grad():
        hf.bert.pooler.dense.weight.copy_(torch.eye(config.hidden_size) * eps)
        hf.bert.pooler.dense.bias.zero_()
        hf.classifier.weight.copy_(linear.weight / eps)
        hf.classifier.bias.copy_(linear.bias)
    hf.save_pretrained(path)
    model.tokenizer.save_pretrained(path)
    return path


def as_sentence_transformers(model: CrossEncoder, precision: str = "fp32") -> Any:
    """The same weights loaded by sentence-transformers' CrossEncoder, on the CPU (bf16 weights when
    ``precision`` is bf16)."""
    st = require_extra("sentence_transformers", "bench", "comparing with sentence-transformers")
    kwargs = {"model_kwargs": {"torch_dtype": torch.bfloat16}} if precision == "bf16" else {}
    with tempfile.TemporaryDirectory() as tmp:
        path = export_for_sentence_transformers(model, Path(tmp) / "st")
        return st.CrossEncoder(str(path), device="cpu", max_length=model.config.max_length, **kwargs)


def agreement(a: list[list[float]], b: list[list[float]]) -> float:
    """Share of questions whose top-ranked candidate is the same under both score lists."""
    same = sum(
        max(range(len(x)), key=x.__getitem__) == max(range(len(y)), key=y.__getitem__)
        for x, y in zip(a, b, strict=True)
    )
    return same / len(a)


def timed(fn: Callable[[], list[float]]) -> Callable[[], tuple[list[float] | None, float]]:
    """An in-process system as the race calls it: ``(scores, seconds)``."""

    def run() -> tuple[list[float] | None, float]:
        start = time.perf_counter()
        scores = fn()
        return scores, time.perf_counter() - start

    return run


def st_workers(args: argparse.Namespace, model: CrossEncoder, pairs: list[tuple[str, str]]) -> list[Any]:
    """One sentence-transformers worker per ``--st-backends`` system, over the same weights."""
    from _st_race import StWorker, calibration_folder

    if not Path(args.st_python).is_file():
        raise SystemExit(f"--st-python {args.st_python}: not found (make race-env builds it)")
    root = Path(tempfile.mkdtemp(prefix="st-race-"))
    folder = export_for_sentence_transformers(model, root / "st")
    sentences = [c.text for ex in load_dataset(args.calibrate) for c in ex.candidates][:300]
    calibration = calibration_folder(sentences, root)
    workers = []
    for system in args.st_backends.split(","):
        print(f"starting sentence-transformers {system} ...", flush=True)
        worker = StWorker(
            args.st_python,
            folder,
            system,
            pairs,
            max_length=model.config.max_length,
            batch_size=args.batch_size,
            threads=args.threads or torch.get_num_threads(),
            calibration=calibration if system == "openvino:int8" else None,
        )
        workers.append(worker)
    return workers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--dataset", default="wikiqa:test")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument(
        "--precisions",
        default="fp32,auto,int8",
        help="sieveqa systems to time: PRECISION or BACKEND:PRECISION ('' for none: a --cascade alone)",
    )
    parser.add_argument("--st-precisions", default="fp32", help="sentence-transformers: fp32 and/or bf16")
    parser.add_argument(
        "--st-backends",
        default=None,
        help="sentence-transformers systems run by --st-python instead (BACKEND:PRECISION, e.g. "
        "torch:fp32,torch:bf16,onnx:fp32,onnx:int8,openvino:fp32,openvino:int8)",
    )
    parser.add_argument("--st-python", default=".venv-race/bin/python", help="python of make race-env")
    parser.add_argument("--calibrate", default="wikiqa:dev", help="sentences calibrating ST's OpenVINO int8")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument(
        "--cascade",
        default=None,
        help="a cascade raced too (e.g. default-cascade, at its saved drop ratios): it ranks each "
        "question whole, pruning at its exits, on each of --cascade-systems",
    )
    parser.add_argument(
        "--cascade-systems", default="torch:bf16,openvino:int8", help="BACKEND:PRECISION list"
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/throughput.json"))
    parser.add_argument(
        "--choose",
        action="store_true",
        help="record the systems at no loss against torch:fp32, fastest first, as --backend auto's choice "
        "for this CPU kind (sieveqa/resources/backends.json); run it on a dev set",
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    examples = load_dataset(args.dataset)[: args.limit]
    questions = [ex.question.text for ex in examples for _ in ex.candidates]
    texts = [c.text for ex in examples for c in ex.candidates]
    pairs = list(zip(questions, texts, strict=True))
    models = {
        p: CrossEncoder.from_pretrained(args.model).configure(
            precision=p.rpartition(":")[2],
            backend=p.rpartition(":")[0] or "torch",
            batch_size=args.batch_size,
        )
        for p in filter(None, args.precisions.split(","))
    }
    systems: dict[str, Callable[[], tuple[list[float] | None, float]]] = {}
    workers = []
    first = next(iter(models.values()), None) or CrossEncoder.from_pretrained(args.model)
    if args.st_backends:
        workers = st_workers(args, first, pairs)
        systems |= {f"sentence-transformers-{w.system}": w for w in workers}
    else:
        for p in args.st_precisions.split(","):
            st = as_sentence_transformers(first, p)
            systems[f"sentence-transformers-{p}"] = timed(
                lambda st=st: [
                    float(s) for s in st.predict(pairs, batch_size=args.batch_size, show_progress_bar=False)
                ]
            )
    for p, model in models.items():
        name = f"sieveqa-{p}" + (f" ({model.precision})" if p.endswith("auto") else "")
        systems[name] = timed(lambda m=model: m.score_pairs(questions, texts))
    costs: dict[str, float] = {}
    for system in args.cascade_systems.split(",") if args.cascade else []:
        backend, _, precision = system.rpartition(":")
        ranker = load_ranker(
            args.cascade, precision=precision, backend=backend or "torch", batch_size=args.batch_size
        )
        name = f"{args.cascade}-{system}"

        def ranked(r: Any = ranker, name: str = name) -> list[float]:
            result = r.run(examples)
            costs[name] = result.relative_cost
            return [s for group in result.scores for s in group]

        systems[name] = timed(ranked)

    times: dict[str, list[float]] = {name: [] for name in systems}
    scores = {name: fn()[0] for name, fn in systems.items()}  # warm-up (and the scores compared below)
    for _ in range(args.repeats):
        for name, fn in systems.items():
            times[name].append(fn()[1])
    for worker in workers:
        worker.close()

    reference_name = next(iter(systems))
    reference = regroup(examples, scores[reference_name])
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
            f"top1_agreement_with_{reference_name}": round(agreement(reference, per_q), 4),
        }
        if name in costs:
            rows[name]["relative_cost"] = round(costs[name], 4)
    for st_name in (n for n in systems if n.startswith("sentence-transformers")):
        base = rows[st_name]["pairs_per_second"]
        for row in rows.values():
            row[f"speedup_vs_{st_name}"] = round(row["pairs_per_second"] / base, 2)
    finish(
        args.out,
        "throughput",
        {"dataset": args.dataset, "n_pairs": len(pairs), "n_questions": len(examples), "results": rows},
    )
    for name, row in rows.items():
        print(f"{name:32s} {row}")
    if args.choose:
        record_choice(rows, args.dataset)


def record_choice(rows: dict[str, dict[str, Any]], dataset: str) -> None:
    """Write this CPU kind's ``--backend auto`` choice from sieveqa's rows (``sieveqa-BACKEND:PRECISION``)."""
    from sieveqa.device import cpu_info
    from sieveqa.exported.choice import CHOICES, cpu_kind, load_choices, rank_systems
    from sieveqa.io import atomic_write_json

    ours = {
        (name.removeprefix("sieveqa-") if ":" in name else f"torch:{name.removeprefix('sieveqa-')}"): row
        for name, row in rows.items()
        if name.startswith("sieveqa-") and "auto" not in name
    }
    if "torch:fp32" not in ours:
        raise SystemExit("--choose needs torch:fp32 (or fp32) among --precisions, as the reference")
    chosen = rank_systems(ours, "torch:fp32")
    choices = load_choices()
    choices[cpu_kind()] = {
        "fastest_at_no_loss": chosen,
        "measured_on": dataset,
        "cpu": cpu_info()[0],
        "date": time.strftime("%Y-%m-%d"),
        "rows": {name: {k: row[k] for k in ("pairs_per_second", "p@1", "map")} for name, row in ours.items()},
    }
    atomic_write_json(CHOICES, choices)
    print(f"--backend auto on {cpu_kind()}: {', '.join(chosen)} (written to {CHOICES})")


if __name__ == "__main__":
    main()
