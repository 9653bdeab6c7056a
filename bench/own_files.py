"""Answers over a user's own files: the own-files benchmark (bench/own_docs: 40 real files in five
formats, 143 questions written blind to the system, 35 of them unanswerable), indexed and answered
with defaults, scored per format and split.

    python bench/own_files.py --out bench/results/own-files/peasi.json

For each question: whether the best sentence holds an answer string (the reader and the ranker), and
where the answerer abstains: answered right, answered wrong, right answers thrown away, unanswerable
questions abstained, and the overall score (right answers plus right abstentions, SQuAD 2.0's). Once
at the threshold the answerer uses (shipped, or --confidence's), once at the threshold that is best
on the dev half, scored on the test half.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import finish, markdown
from tqdm.auto import tqdm

from sieveqa.data.corpus import CorpusIndex
from sieveqa.data.formats import scan_documents
from sieveqa.data.questions import AskedQuestion, read_questions
from sieveqa.evaluation.abstention import holds_answer
from sieveqa.runtime.answer.answerer import load_answerer
from sieveqa.runtime.answer.confidence import best_threshold

ROOT = Path(__file__).resolve().parent / "own_docs"


def score(rows: Sequence[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """The counts and shares of ``rows`` (one per question) answering at ``threshold``."""
    can = [r for r in rows if r["answerable"]]
    cannot = [r for r in rows if not r["answerable"]]
    answered = [r for r in rows if r["confidence"] is not None and r["confidence"] >= threshold]
    said = {r["id"] for r in answered}
    right = sum(1 for r in answered if r["right"])
    abstained = sum(1 for r in cannot if r["id"] not in said)
    return {
        "questions": len(rows),
        "answerable": len(can),
        "unanswerable": len(cannot),
        "best_contains": round(sum(r["right"] for r in can) / max(len(can), 1), 4),
        "answered_right": right,
        "answered_wrong": len(answered) - right,
        "right_thrown_away": sum(1 for r in can if r["right"] and r["id"] not in said),
        "unanswerable_abstained": abstained,
        "overall": round((right + abstained) / max(len(rows), 1), 4),
    }


def fitted(rows: Sequence[dict[str, Any]]) -> float:
    """The threshold with the best overall score on ``rows``."""
    values = [r["confidence"] if r["confidence"] is not None else float("-inf") for r in rows]
    gains = [float(r["right"]) for r in rows]
    losses = [float(not r["answerable"]) for r in rows]
    return min(best_threshold(values, gains, losses)[0], 1.0)


def answer_all(answerer: Any, asked: Sequence[AskedQuestion]) -> list[dict[str, Any]]:
    rows = []
    for q in tqdm(asked, desc="questions", unit="q"):
        started = time.perf_counter()
        result = answerer.answer(q.question)
        best = result.best
        rows.append(
            {
                "id": q.id,
                "format": q.fields["format"],
                "split": q.fields["split"],
                "file": q.fields["file"],
                "answerable": bool(q.answers),
                "right": bool(q.answers) and best is not None and holds_answer(best.text, q.answers),
                "confidence": result.confidence,
                "answer": best.text if best is not None else None,
                "document": best.passage.doc_id if best is not None else None,
                "location": best.passage.location(best.bounds[0]) if best is not None else None,
                "seconds": round(time.perf_counter() - started, 3),
            }
        )
    return rows


def report(rows: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    formats = sorted({r["format"] for r in rows})
    out: dict[str, Any] = {}
    for split in ("dev", "test", "all"):
        part = [r for r in rows if split == "all" or r["split"] == split]
        out[split] = {"overall": score(part, threshold)} | {
            f: score([r for r in part if r["format"] == f], threshold) for f in formats
        }
    return out


def _option(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` (a number or true/false where it reads as one)."""
    name, _, value = text.partition("=")
    if value.lower() in ("true", "false"):
        return name, value.lower() == "true"
    for kind in (int, float):
        try:
            return name, kind(value)
        except ValueError:
            pass
    return name, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="peasi")
    parser.add_argument("--confidence", default=None, help="a confidence file (default: the shipped one)")
    parser.add_argument("--questions", type=Path, default=ROOT / "questions.jsonl")
    parser.add_argument("--files", type=Path, default=ROOT / "files")
    parser.add_argument("--retriever", default="bm25", help="bm25, dense or hybrid (the index gets vectors)")
    parser.add_argument("--option", action="append", default=[], help="a method option, NAME=VALUE")
    parser.add_argument("--split", default=None, help="only the questions of this split (dev)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/own-files/peasi.json"))
    args = parser.parse_args()
    asked = [q for q in read_questions(args.questions) if args.split in (None, q.fields["split"])]
    options = dict(_option(o) for o in args.option)
    with tempfile.TemporaryDirectory() as tmp:
        reading = scan_documents(args.files)
        started = time.perf_counter()
        embedder = None
        if args.retriever != "bm25":
            from sieveqa.models.embedder import SentenceEmbedder

            embedder = SentenceEmbedder()
        index = CorpusIndex.build(reading.documents, Path(tmp) / "index", embedder=embedder)
        seconds = time.perf_counter() - started
        answerer = load_answerer(
            args.method, str(index.path), confidence=args.confidence, retriever=args.retriever, **options
        )
        rows = answer_all(answerer, asked)
    shipped = answerer.min_confidence if answerer.min_confidence is not None else float("-inf")
    dev_cut = fitted([r for r in rows if r["split"] == "dev"] or rows)
    results = {"shipped": {"threshold": shipped, **report(rows, shipped)}}
    results["fitted_on_dev"] = {"threshold": dev_cut, **report(rows, dev_cut)}
    table = [
        {"threshold": name, "format": fmt, **{k: v for k, v in results[name]["test"][fmt].items()}}
        for name in results
        for fmt in results[name]["test"]
    ]
    print(f"test half; shipped threshold {shipped:.3f}, fitted on dev {dev_cut:.3f}")
    print(markdown(table, ["threshold", "format", *score([], 0.0)]))
    finish(
        args.out,
        "own-files",
        {
            "method": args.method,
            "retriever": args.retriever,
            "options": options,
            "split": args.split,
            "models": answerer.method.model_names,
            "read": dict(reading.read),
            "skipped": reading.skipped,
            "index_seconds": round(seconds, 1),
            "results": results,
            "questions": rows,
        },
    )


if __name__ == "__main__":
    main()
