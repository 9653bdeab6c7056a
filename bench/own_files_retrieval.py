"""Retrieval alone on the own-files benchmark: how often a passage of the right file holding the answer
is among the top k that BM25, dense vectors or both (hybrid) retrieve for each answerable question.

    python bench/own_files_retrieval.py --split dev --out bench/results/own-files/retrieval-dev.json

``--embedder mpnet-12`` embeds with all-mpnet-base-v2 through the same mean-pooled embedder instead of
all-MiniLM-L6-v2 (the index's dense vectors are made anew: minutes on a CPU).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import finish
from own_files import ROOT

from sieveqa.data.corpus import CorpusIndex
from sieveqa.data.formats import scan_documents
from sieveqa.data.questions import read_questions
from sieveqa.evaluation.abstention import holds_answer
from sieveqa.models.embedder import EmbedderConfig, SentenceEmbedder

DEPTHS = (1, 3, 5, 10, 20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default=None, help="only the questions of this split (dev)")
    parser.add_argument("--embedder", default=None, help="a backbone name for the dense vectors (mpnet-12)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/own-files/retrieval-dev.json"))
    args = parser.parse_args()
    asked = [
        q
        for q in read_questions(ROOT / "questions.jsonl")
        if q.answers and args.split in (None, q.fields["split"])
    ]
    embedder = (
        SentenceEmbedder(EmbedderConfig(backbone=args.embedder)) if args.embedder else SentenceEmbedder()
    )
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        index = CorpusIndex.build(
            scan_documents(ROOT / "files").documents, Path(tmp) / "index", embedder=embedder
        )
        seconds = time.perf_counter() - started
        for retriever in ("bm25", "dense", "hybrid"):
            hits = index.search_many([q.question for q in asked], max(DEPTHS), retriever, embedder)
            ranks = []
            for q, found in zip(asked, hits, strict=True):
                passages = index.passages([pid for pid, _ in found])
                ranks.append(
                    next(
                        (
                            k
                            for k, p in enumerate(passages, 1)
                            if p.doc_id == q.fields["file"] and holds_answer(p.text, q.answers or ())
                        ),
                        None,
                    )
                )
            results[retriever] = {
                f"recall@{k}": round(sum(1 for r in ranks if r is not None and r <= k) / len(ranks), 4)
                for k in DEPTHS
            }
            print(retriever, results[retriever])
    finish(
        args.out,
        "own-files-retrieval",
        {
            "split": args.split,
            "questions": len(asked),
            "embedder": embedder.signature(),
            "index_seconds": round(seconds, 1),
            "results": results,
        },
    )


if __name__ == "__main__":
    main()
