"""Retrievers of a corpus index on SQuAD: Hits@k of BM25, dense (all-MiniLM-L6-v2 in FAISS) and hybrid
(reciprocal rank fusion), index build time and size on disk (``index_memory.py`` measures memory).

A passage is a hit when it holds a correct answer sentence (the ASNQ rule of SQuAD-AS2: a sentence of
the question's own paragraph that contains a gold answer). Each split's paragraphs are indexed on
their own, as in squad-passages; questions: every question of the split.

    python bench/retrieval.py --splits dev,test --out bench/results/peasi/retrieval.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import finish, markdown

from sieveqa.data.corpus import CorpusIndex
from sieveqa.data.formats import read_documents
from sieveqa.data.squad import default_squad_path, read_squad
from sieveqa.data.squad_as2 import split_articles
from sieveqa.models.embedder import SentenceEmbedder

HITS = (1, 5, 10, 20, 50)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="dev,test")
    parser.add_argument("--out", type=Path, default=Path("bench/results/peasi/retrieval.json"))
    args = parser.parse_args()
    embedder = SentenceEmbedder()
    articles = read_squad(default_squad_path())
    splits = split_articles(a.title for a in articles)
    by_title = {a.title: a for a in articles}
    rows, results = [], {}
    for split in args.splits.split(","):
        questions = [(q, p.pid) for t in splits[split] for p in by_title[t].paragraphs for q in p.questions]
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            index = CorpusIndex.build(read_documents(f"squad:{split}"), Path(tmp) / "i", embedder=embedder)
            build = time.perf_counter() - started
            passages = {p.id: p for p in index.passages([str(i) for i in range(1, len(index) + 1)])}
            size = index.disk_bytes()
            texts = [q.question for q, _ in questions]
            out = {
                "passages": len(index),
                "questions": len(questions),
                "build_seconds": round(build, 1),
                "disk_mib_per_1000_passages": round(size / len(index) * 1000 / 2**20, 3),
            }
            for retriever in ("bm25", "dense", "hybrid"):
                started = time.perf_counter()
                hits = index.search_many(texts, max(HITS), retriever, embedder)
                seconds = time.perf_counter() - started
                first = []
                for (q, gold), ranked in zip(questions, hits, strict=True):
                    answers = {a.strip() for a in q.answers} - {""}
                    rank = next(
                        (
                            r
                            for r, (pid, _) in enumerate(ranked, start=1)
                            if passages[pid].doc_id == gold
                            and any(a in s for s in passages[pid].sentences for a in answers)
                        ),
                        None,
                    )
                    first.append(rank)
                hit = {
                    f"hits@{k}": round(100 * sum(r is not None and r <= k for r in first) / len(first), 1)
                    for k in HITS
                }
                out[retriever] = {**hit, "ms_per_question": round(1000 * seconds / len(texts), 2)}
                rows.append(
                    {"split": split, "retriever": retriever, **hit, "ms/q": out[retriever]["ms_per_question"]}
                )
            results[split] = out
    print(markdown(rows, ["split", "retriever", *(f"hits@{k}" for k in HITS), "ms/q"]))
    finish(args.out, "retrieval", {"results": results, "embedder": embedder.signature()})


if __name__ == "__main__":
    main()
