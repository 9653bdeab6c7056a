"""End-to-end ``sieveqa answer`` latency over a corpus index: retrieval, reranking and selection per
question, p50 and p95, for each method, on the SQuAD-AS2 test questions over the test articles' index.

    python bench/answer_latency.py --reranker runs/peasi/pr/best --selector runs/peasi/easi-pooled/best \\
        --limit 200 --out bench/results/peasi/answer_latency.json

``--judges A,B`` times each method once per judge (a row each, ``skyline judge=A``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import finish, markdown

from sieveqa.data.corpus import CorpusIndex
from sieveqa.data.formats import read_documents
from sieveqa.data.registry import load_dataset
from sieveqa.runtime.answer.answerer import load_answerer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reranker", default="peasi-pr")
    parser.add_argument("--selector", default=None)
    parser.add_argument("--methods", default="peasi,peasi-all,pointwise,cascade")
    parser.add_argument("--judges", default=None, help="judges to time each method with (none: without)")
    parser.add_argument("--limit", type=int, default=200, help="questions (the first N of squad-as2:test)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/peasi/answer_latency.json"))
    args = parser.parse_args()
    questions = [ex.question.text for ex in load_dataset("squad-as2:test")[: args.limit]]
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        index = CorpusIndex.build(read_documents("squad:test"), Path(tmp) / "index")
        methods, judges = args.methods.split(","), (args.judges or "").split(",")
        runs = [(f"{m} judge={j}", {"judge": j}) for m in methods for j in judges if j]
        runs = runs or [(m, {}) for m in methods]
        for method, options in runs:
            name = method.split()[0]
            models = {"reranker": args.reranker, "selector": args.selector} if name == "peasi" else {}
            answerer = load_answerer(name, str(index.path), **models, **options)
            answerer.answer(questions[0])  # warm-up
            seconds, inferences, flops = [], [], []
            for question in questions:
                started = time.perf_counter()
                answer = answerer.answer(question)
                seconds.append(time.perf_counter() - started)
                inferences.append(answer.inferences)
                flops.append(answer.cost.flops)
            s = np.asarray(seconds) * 1000
            results[method] = {
                "questions": len(questions),
                "p50_ms": round(float(np.percentile(s, 50)), 1),
                "p95_ms": round(float(np.percentile(s, 95)), 1),
                "mean_ms": round(float(s.mean()), 1),
                "inferences_per_question": round(float(np.mean(inferences)), 1),
                "gflops_per_question": round(float(np.mean(flops)) / 1e9, 2),
            }
            rows.append({"method": method, **results[method]})
    print(
        markdown(
            rows,
            [
                "method",
                "questions",
                "inferences_per_question",
                "gflops_per_question",
                "p50_ms",
                "p95_ms",
                "mean_ms",
            ],
        )
    )
    finish(
        args.out,
        "answer_latency",
        {"passages": len(index), "reranker": args.reranker, "selector": args.selector, "results": results},
    )


if __name__ == "__main__":
    main()
