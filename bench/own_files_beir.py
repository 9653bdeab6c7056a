"""The own-files benchmark (bench/own_docs) as a passage ranking set in BEIR's format (issue 65): the
corpus is every passage ``sieveqa index corpus`` makes of its 40 files (five formats, defaults), the
queries its answerable questions, each judged relevant to the passages of its own file that hold one
of its answer strings (as ``bench/own_files.py`` judges a sentence). Documentation, not Wikipedia:
the set where a reranker's transfer shows. Splits are the benchmark's halves (dev, test).

    python bench/own_files_beir.py --out runs/beir/own-files
    sieveqa eval --dataset beir:runs/beir/own-files:dev
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from sieveqa.data.beir_sets import write_beir
from sieveqa.data.corpus import CorpusIndex
from sieveqa.data.formats import scan_documents
from sieveqa.data.questions import read_questions
from sieveqa.evaluation.abstention import holds_answer
from sieveqa.retrieval.bm25 import BM25Index

ROOT = Path(__file__).resolve().parent / "own_docs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=Path, default=ROOT / "files")
    parser.add_argument("--questions", type=Path, default=ROOT / "questions.jsonl")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        index = CorpusIndex.build(scan_documents(args.files).documents, Path(tmp) / "index")
        ids = BM25Index.load(index.generation / "bm25").ids
        passages = index.passages(ids)
        index.close()
    corpus = {p.id: (p.title, p.text) for p in passages}
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, dict[str, int]]] = {"dev": {}, "test": {}}
    unjudged = []
    for q in read_questions(args.questions):
        if not q.answers:
            continue
        own = q.fields["file"]  # a path under --files, as the index's document ids are
        judged = {p.id: 1 for p in passages if p.doc_id == own and holds_answer(p.text, q.answers)}
        if not judged:
            unjudged.append(q.id)
            continue
        queries[q.id] = q.question
        qrels[q.fields["split"]][q.id] = judged
    about = {"source": "bench/own_docs, indexed with defaults", "left_out_no_passage_holds_answer": unjudged}
    write_beir(args.out, corpus, queries, qrels, about)
    counts = {split: len(judged) for split, judged in qrels.items()}
    print(f"wrote {args.out}: {len(corpus)} passages, queries {counts}; left out (no passage holds")
    print(f"the answer): {unjudged}")


if __name__ == "__main__":
    main()
