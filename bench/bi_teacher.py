"""A bi-encoder teacher alone, as a ranker (issue 65): the cosine of a sentence embedder's vectors
(``embedder:mpnet-12``: all-mpnet-base-v2) on answer-selection sets, scored as ``sieveqa eval`` scores.

    python bench/bi_teacher.py --out bench/results/mhs/bi-teacher.json
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import finish

from sieveqa.data.registry import load_dataset
from sieveqa.evaluation.metrics import evaluate_scores
from sieveqa.training.teachers import cosines, load_embedder_teacher


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teacher", default="embedder:mpnet-12")
    parser.add_argument("--dataset", default="wikiqa:dev,trecqa:dev-clean,wikiqa:test,trecqa:test-clean")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    embedder = load_embedder_teacher(args.teacher).configure(precision="auto")
    results = {}
    for name in args.dataset.split(","):
        examples = load_dataset(name)
        started = time.perf_counter()
        flat = cosines(embedder, [e.question.text for e in examples for _ in e.candidates],
                       [c.text for e in examples for c in e.candidates], progress=False)  # fmt: skip
        scores, at = [], 0
        for e in examples:
            scores.append(flat[at : at + len(e.candidates)].tolist())
            at += len(e.candidates)
        results[name] = {
            **evaluate_scores(examples, scores).as_dict(),
            "seconds": round(time.perf_counter() - started, 1),
        }
        print(name, results[name], flush=True)
    finish(
        args.out, "bi-teacher", {"teacher": args.teacher, "precision": embedder.precision, "results": results}
    )


if __name__ == "__main__":
    main()
