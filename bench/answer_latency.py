"""End-to-end ``sieveqa answer`` latency over a corpus index: retrieval, reranking and selection per
question, p50 and p95, for each method, on the SQuAD-AS2 test questions over the test articles' index.

    python bench/answer_latency.py --reranker runs/peasi/pr/best --selector runs/peasi/easi-pooled/best \\
        --limit 200 --out bench/results/peasi/answer_latency.json

``--judges A,B`` times each method once per judge (a row each, ``skyline judge=A``). ``--dataset
squad2-open:dev`` asks SQuAD 2.0 dev's questions (half unanswerable: where the confidence matters) of
the index of its articles' paragraphs; ``--defaults`` loads each method with its shipped models and
settings (confidence on where calibrated); ``--profile`` adds where a question's time went, by stage
(``sieveqa answer --profile``), to each row.

    python bench/answer_latency.py --dataset squad2-open:dev --defaults --methods peasi --limit 40 \
        --profile --out bench/results/latency/answer-profile.json
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from _common import finish, markdown

from sieveqa.data.corpus import CorpusIndex
from sieveqa.data.formats import read_documents
from sieveqa.data.registry import load_dataset, load_open_dataset
from sieveqa.data.squad2 import squad2_index
from sieveqa.profiling import Profile, profiled
from sieveqa.runtime.answer.answerer import load_answerer


@contextlib.contextmanager
def _questions(dataset: str, limit: int) -> Iterator[tuple[list[str], Path]]:
    """The first ``limit`` questions of ``dataset`` and the index they are asked of."""
    if dataset == "squad-as2:test":  # SQuAD-AS2's test questions over an index of the test articles
        with tempfile.TemporaryDirectory() as tmp:
            index = CorpusIndex.build(read_documents("squad:test"), Path(tmp) / "index")
            yield [ex.question.text for ex in load_dataset(dataset)[:limit]], index.path
        return
    if dataset != "squad2-open:dev":
        raise SystemExit(f"--dataset: squad-as2:test or squad2-open:dev, got {dataset!r}")
    yield [ex.question for ex in load_open_dataset(dataset)[:limit]], squad2_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reranker", default="peasi-pr")
    parser.add_argument("--selector", default=None)
    parser.add_argument("--methods", default="peasi,peasi-all,pointwise,cascade")
    parser.add_argument("--judges", default=None, help="judges to time each method with (none: without)")
    parser.add_argument("--limit", type=int, default=200, help="questions (the first N of --dataset)")
    parser.add_argument("--dataset", default="squad-as2:test", help="squad-as2:test or squad2-open:dev")
    parser.add_argument("--defaults", action="store_true", help="each method's shipped models and settings")
    parser.add_argument("--profile", action="store_true", help="add each stage's ms and GFLOPs a question")
    parser.add_argument("--out", type=Path, default=Path("bench/results/peasi/answer_latency.json"))
    args = parser.parse_args()
    rows, results = [], {}
    with _questions(args.dataset, args.limit) as (questions, folder):
        index = CorpusIndex.open(folder)
        methods, judges = args.methods.split(","), (args.judges or "").split(",")
        runs = [(f"{m} judge={j}", {"judge": j}) for m in methods for j in judges if j]
        runs = runs or [(m, {}) for m in methods]
        for method, options in runs:
            name = method.split()[0]
            peasi = name == "peasi" and not args.defaults
            models = {"reranker": args.reranker, "selector": args.selector} if peasi else {}
            answerer = load_answerer(name, str(index.path), **models, **options)
            answerer.answer(questions[0])  # warm-up
            seconds, inferences, flops, spent = [], [], [], Profile()
            for question in questions:
                started = time.perf_counter()
                with profiled(spent) if args.profile else contextlib.nullcontext():
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
                "models": getattr(answerer.method, "model_names", {}),
                "confidence": answerer.confidence is not None,
            }
            if args.profile:
                results[method]["profile"] = spent.as_dict()
                print(
                    markdown(
                        spent.as_dict()["stages"],
                        ["stage", "ms", "gflops", "tokenize", "collate", "model", "other"],
                    )
                )
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
        {
            "dataset": args.dataset,
            "passages": len(index),
            "reranker": "shipped" if args.defaults else args.reranker,
            "selector": "shipped" if args.defaults else args.selector,
            "results": results,
        },
    )


if __name__ == "__main__":
    main()
