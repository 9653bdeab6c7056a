"""SQuAD-Open-mini: open-domain QA over the SQuAD v1.1 dev articles, one article split at a time.

The adaptive computation paper reads SQuAD-Open (all of Wikipedia, 100-word chunks, BM25 top 30).
Here the corpus of each SQuAD-AS2 article split is its own paragraphs, cut into 100-word chunks with a
50-word stride (a paragraph is a document; the chunk keeps its article title), and BM25 retrieves the
top 30 chunks of the question's split for each question. A chunk has an answer when a gold answer string
occurs in it verbatim (so chunks of other paragraphs can hold an answer too, as in the paper).

Files in ``cache_root()/squad-open-mini/`` (the :mod:`~sieveqa.data.open_qa` JSONL, gzipped):
``train`` (the 34 training articles' questions), ``dev0`` / ``dev1`` (the dev articles' questions cut
in two halves by ``random.Random(11)`` over sorted qids: the reader is chosen on dev0, calibrated and
the scheduler trained on dev1), ``dev-all``, ``test`` (SQuAD-AS2's fixed 500 test questions) and
``test-all``; ``manifest.json`` holds parameters, BM25 Hits@k per split and every file's sha256.
Rebuilding gives byte-identical files.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from sieveqa.data.corpus import CorpusIndex, CorpusOptions
from sieveqa.data.documents import Document
from sieveqa.data.jsonl import read_jsonl
from sieveqa.data.open_qa import OpenExample, RetrievedPassage, read_open_jsonl, write_open_jsonl
from sieveqa.data.passage_sets import passage_names
from sieveqa.data.squad import SquadArticle, default_squad_path, read_squad
from sieveqa.data.squad_as2 import cached_manifest, ensure_squad_as2, split_articles
from sieveqa.io import atomic_write_json, file_sha256
from sieveqa.paths import cache_root

__all__ = ["SPLITS", "build_squad_open", "squad_open"]

BUILDER_VERSION = 2  # 2: a chunk's #n counts every chunk of its paragraph, not the retrieved ones
TOP_K = 30
CHUNK_WORDS = 100
CHUNK_STRIDE = 50
HALF_SEED = 11
HITS_AT = (1, 5, 10, 20, 30)
MANIFEST = "manifest.json"
SPLITS = ("train", "dev0", "dev1", "dev-all", "test", "test-all")


def _retrieve(articles: list[SquadArticle], top_k: int) -> list[OpenExample]:
    docs = [Document(p.pid, p.context, a.title.replace("_", " ")) for a in articles for p in a.paragraphs]
    questions = [q for a in articles for p in a.paragraphs for q in p.questions]
    options = CorpusOptions(chunk_words=CHUNK_WORDS, chunk_stride=CHUNK_STRIDE)
    with tempfile.TemporaryDirectory(prefix="sieveqa-open-") as tmp:
        index = CorpusIndex.build(docs, Path(tmp) / "index", options)
        ranked = index.search_many([q.question for q in questions], top_k, matching_only=False)
        stored = {p.id: p for p in index.passages([str(i) for i in range(1, len(index) + 1)])}
    names = passage_names(list(stored.values()))  # "{paragraph id}#{n}": the n-th chunk of the paragraph
    out = []
    for q, hits in zip(questions, ranked, strict=True):
        passages = [
            RetrievedPassage(names[pid], stored[pid].text, stored[pid].title, score) for pid, score in hits
        ]
        out.append(OpenExample(q.qid, q.question, list(q.answers), passages))
    return out


def _hits(examples: list[OpenExample]) -> dict[str, float]:
    firsts = [ex.first_hit() for ex in examples]
    return {
        f"hits@{k}": round(sum(f is not None and f <= k for f in firsts) / len(firsts), 4) for k in HITS_AT
    }


def build_squad_open(
    out_dir: Path | None = None, top_k: int = TOP_K, progress: bool = True
) -> dict[str, Any]:
    """Build (or find cached) SQuAD-Open-mini into ``out_dir``; returns its manifest."""
    out_dir = Path(out_dir) if out_dir is not None else cache_root() / "squad-open-mini"
    squad_path = default_squad_path()
    as2 = ensure_squad_as2()
    params = {
        "builder_version": BUILDER_VERSION,
        "source": {"file": squad_path.name, "sha256": file_sha256(squad_path)},
        "test_subset_from": file_sha256(as2 / "test.jsonl.gz"),
        "top_k": top_k,
        "chunk_words": CHUNK_WORDS,
        "chunk_stride": CHUNK_STRIDE,
        "half_seed": HALF_SEED,
    }
    names = {f"{s}.jsonl.gz" for s in SPLITS}
    if (manifest := cached_manifest(out_dir, params, names)) is not None:
        return manifest
    articles = read_squad(squad_path)
    by_title = {a.title: a for a in articles}
    splits = split_articles(by_title)
    built = {
        split: _retrieve([by_title[t] for t in splits[split]], top_k)
        for split in tqdm(("train", "dev", "test"), desc="squad-open-mini", disable=not progress)
    }
    qids = sorted(ex.qid for ex in built["dev"])
    random.Random(HALF_SEED).shuffle(qids)
    dev0 = set(qids[: len(qids) // 2])
    test_subset = {ex.qid for ex in read_jsonl(as2 / "test.jsonl.gz")}
    files = {
        "train": built["train"],
        "dev0": [ex for ex in built["dev"] if ex.qid in dev0],
        "dev1": [ex for ex in built["dev"] if ex.qid not in dev0],
        "dev-all": built["dev"],
        "test": [ex for ex in built["test"] if ex.qid in test_subset],
        "test-all": built["test"],
    }
    info: dict[str, dict[str, Any]] = {}
    for name, examples in files.items():
        path = out_dir / f"{name}.jsonl.gz"
        write_open_jsonl(path, examples)
        info[path.name] = {
            "questions": len(examples),
            "passages": sum(len(ex.passages) for ex in examples),
            "with_answer": sum(sum(ex.has_answer()) for ex in examples),
            "sha256": file_sha256(path),
        }
    manifest = {
        "name": "squad-open-mini",
        "params": params,
        "bm25_hits_at_k": {name: _hits(examples) for name, examples in files.items()},
        "files": dict(sorted(info.items())),
    }
    atomic_write_json(out_dir / MANIFEST, manifest)
    return manifest


def squad_open(split: str) -> list[OpenExample]:
    """The examples of one split (built on first use)."""
    out_dir = cache_root() / "squad-open-mini"
    build_squad_open(out_dir)
    return read_open_jsonl(out_dir / f"{split}.jsonl.gz")
