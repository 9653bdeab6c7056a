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
``test-all``; ``dev0-unindexed``, ``dev1-unindexed`` and ``test-unindexed`` ask the same questions of
the split's index without their own article (for abstention: nothing there answers them);
``manifest.json`` holds parameters, BM25 Hits@k per split and every file's sha256.
Rebuilding gives byte-identical files.

``squad-open-train`` is the same recipe on SQuAD v1.1 *train*, split by article as squad-train-as2 is
(430 articles train, 12 dev): ``train`` holds every training question with the top ``top_k`` (5) chunks
BM25 retrieves from the training articles, the first chunk of its own paragraph holding an answer
appended when BM25 found none (so the reader sees its gold span and answerless chunks of the same
articles); ``dev-all`` the dev articles' questions over their top 30, and ``dev`` 300 of them
(``random.Random(7).sample`` over sorted qids). Files in ``cache_root()/squad-open-train/``.

``squad-gold`` reads SQuAD v1.1 dev the closed way: each question with its own paragraph only (the
reader's EM/F1 on gold paragraphs, comparable with published SQuAD readers).
"""

from __future__ import annotations

import random
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from sieveqa.data.corpus import CorpusIndex, CorpusOptions
from sieveqa.data.documents import squad_document
from sieveqa.data.jsonl import read_jsonl
from sieveqa.data.open_qa import (
    OpenExample,
    RetrievedPassage,
    answer_spans,
    read_open_jsonl,
    write_open_jsonl,
)
from sieveqa.data.passage_sets import passage_names
from sieveqa.data.squad import SquadArticle, default_squad_path, read_squad
from sieveqa.data.squad_as2 import SUBSET_SEED, cached_manifest, ensure_squad_as2, split_articles
from sieveqa.errors import ConfigError
from sieveqa.io import atomic_write_json, file_sha256
from sieveqa.paths import cache_root

__all__ = [
    "SPLITS",
    "TRAIN_SPLITS",
    "build_squad_open",
    "build_squad_open_train",
    "squad_gold",
    "squad_open",
    "squad_open_train",
    "write_open_files",
]

BUILDER_VERSION = 2  # 2: a chunk's #n counts every chunk of its paragraph, not the retrieved ones
TOP_K = 30
CHUNK_WORDS = 100
CHUNK_STRIDE = 50
HALF_SEED = 11
HITS_AT = (1, 5, 10, 20, 30)
MANIFEST = "manifest.json"
SPLITS = (
    "train",
    "dev0",
    "dev1",
    "dev-all",
    "test",
    "test-all",
    "dev0-unindexed",
    "dev1-unindexed",
    "test-unindexed",
)
TRAIN_NAME = "squad-open-train"
TRAIN_TOP_K = 5
TRAIN_SPLITS = ("train", "dev", "dev-all")
GOLD_SPLITS = ("dev-all", "test-all", "test")


def _retrieve(
    articles: list[SquadArticle], top_k: int, gold: bool = False, unindexed: bool = False
) -> list[OpenExample]:
    """Each question with the top ``top_k`` chunks of ``articles``; with ``gold``, the first chunk of
    its own paragraph that holds an answer is appended when none retrieved does; ``unindexed``
    retrieves as if the question's own article were not in the index."""
    docs = [squad_document(p, a.title) for a in articles for p in a.paragraphs]
    questions = [q for a in articles for p in a.paragraphs for q in p.questions]
    owners = [p.pid for a in articles for p in a.paragraphs for _ in p.questions]
    titles = [a.title.replace("_", " ") for a in articles for p in a.paragraphs for _ in p.questions]
    options = CorpusOptions(chunk_words=CHUNK_WORDS, chunk_stride=CHUNK_STRIDE)
    with tempfile.TemporaryDirectory(prefix="sieveqa-open-") as tmp:
        index = CorpusIndex.build(docs, Path(tmp) / "index", options)
        stored = {p.id: p for p in index.passages([str(i) for i in range(1, len(index) + 1)])}
        # Leaving an article out: retrieve deep enough that top_k of the others remain.
        deepest = max(Counter(p.title for p in stored.values()).values()) if unindexed else 0
        ranked = index.search_many([q.question for q in questions], top_k + deepest, matching_only=False)
    if unindexed:
        ranked = [
            [(pid, score) for pid, score in hits if stored[pid].title != title][:top_k]
            for hits, title in zip(ranked, titles, strict=True)
        ]
    names = passage_names(list(stored.values()))  # "{paragraph id}#{n}": the n-th chunk of the paragraph
    chunks: dict[str, list[str]] = {}
    for pid in stored:  # each paragraph's chunks, in order
        chunks.setdefault(names[pid].rsplit("#", 1)[0], []).append(pid)
    out = []
    for q, owner, hits in zip(questions, owners, ranked, strict=True):
        passages = [
            RetrievedPassage(names[pid], stored[pid].text, stored[pid].title, score) for pid, score in hits
        ]
        if gold and not any(answer_spans(p.text, q.answers) for p in passages):
            own = next((c for c in chunks.get(owner, []) if answer_spans(stored[c].text, q.answers)), None)
            if own is not None:
                passages.append(RetrievedPassage(names[own], stored[own].text, stored[own].title, 0.0))
        out.append(OpenExample(q.qid, q.question, list(q.answers), passages))
    return out


def _hits(examples: list[OpenExample]) -> dict[str, float]:
    firsts = [ex.first_hit() for ex in examples if not ex.impossible]  # of the answerable questions
    return {
        f"hits@{k}": round(sum(f is not None and f <= k for f in firsts) / max(len(firsts), 1), 4)
        for k in HITS_AT
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
    gone = {
        split: _retrieve([by_title[t] for t in splits[split]], top_k, unindexed=True)
        for split in ("dev", "test")
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
        # The same questions with their own article left out of the index (nothing there answers them).
        "dev0-unindexed": [ex for ex in gone["dev"] if ex.qid in dev0],
        "dev1-unindexed": [ex for ex in gone["dev"] if ex.qid not in dev0],
        "test-unindexed": [ex for ex in gone["test"] if ex.qid in test_subset],
    }
    return write_open_files(out_dir, "squad-open-mini", params, files)


def write_open_files(
    out_dir: Path, name: str, params: dict[str, Any], files: dict[str, list[OpenExample]]
) -> dict[str, Any]:
    """Write each split's file, then the manifest (counts, BM25 Hits@k, sha256); return it."""
    info: dict[str, dict[str, Any]] = {}
    for split, examples in files.items():
        path = out_dir / f"{split}.jsonl.gz"
        write_open_jsonl(path, examples)
        info[path.name] = {
            "questions": len(examples),
            "passages": sum(len(ex.passages) for ex in examples),
            "with_answer": sum(sum(ex.has_answer()) for ex in examples),
            "sha256": file_sha256(path),
        }
    manifest = {
        "name": name,
        "params": params,
        "bm25_hits_at_k": {split: _hits(examples) for split, examples in files.items()},
        "files": dict(sorted(info.items())),
    }
    atomic_write_json(out_dir / MANIFEST, manifest)
    return manifest


def squad_open(split: str) -> list[OpenExample]:
    """The examples of one split (built on first use)."""
    out_dir = cache_root() / "squad-open-mini"
    build_squad_open(out_dir)
    return read_open_jsonl(out_dir / f"{split}.jsonl.gz")


def build_squad_open_train(
    out_dir: Path | None = None,
    top_k: int = TRAIN_TOP_K,
    progress: bool = True,
    *,
    squad_path: Path | None = None,
    max_articles: int | None = None,
    dev_articles: int | None = None,
    dev_size: int = 300,
) -> dict[str, Any]:
    """Build (or find cached) squad-open-train into ``out_dir``; returns its manifest.
    ``max_articles``, ``dev_articles`` and ``dev_size`` make a slice (tests)."""
    from sieveqa.data import squad_train_as2 as as2

    out_dir = Path(out_dir) if out_dir is not None else cache_root() / TRAIN_NAME
    if top_k < 1:
        raise ConfigError(f"--top-k must be >= 1, got {top_k}")
    squad_path, source = as2.train_source(squad_path)
    dev_articles = dev_articles or as2.DEV_ARTICLES
    params = {
        "builder_version": BUILDER_VERSION,
        "source": source,
        "top_k": {"train": top_k, "dev": TOP_K},
        "chunk_words": CHUNK_WORDS,
        "chunk_stride": CHUNK_STRIDE,
        "dev_articles": dev_articles,
        "max_articles": max_articles,
        "split_seed": as2.SPLIT_SEED,
        "dev_size": dev_size,
        "subset_seed": SUBSET_SEED,
    }
    names = {f"{s}.jsonl.gz" for s in TRAIN_SPLITS}
    if (manifest := cached_manifest(out_dir, params, names)) is not None:
        return manifest
    articles = read_squad(squad_path)[:max_articles]
    by_title = {a.title: a for a in articles}
    splits = as2.split_train_articles(by_title, dev_articles)
    bar = tqdm(total=2, desc=TRAIN_NAME, disable=not progress)
    train = _retrieve([by_title[t] for t in splits["train"]], top_k, gold=True)
    bar.update()
    dev_all = _retrieve([by_title[t] for t in splits["dev"]], TOP_K)
    bar.update()
    bar.close()
    qids = sorted(ex.qid for ex in dev_all)
    subset = set(random.Random(SUBSET_SEED).sample(qids, min(dev_size, len(qids))))
    files = {"train": train, "dev": [ex for ex in dev_all if ex.qid in subset], "dev-all": dev_all}
    return write_open_files(out_dir, TRAIN_NAME, params, files)


def squad_open_train(split: str) -> list[OpenExample]:
    """The examples of one squad-open-train split (built on first use)."""
    out_dir = cache_root() / TRAIN_NAME
    build_squad_open_train(out_dir)
    return read_open_jsonl(out_dir / f"{split}.jsonl.gz")


def squad_gold(split: str) -> list[OpenExample]:
    """SQuAD v1.1 dev questions, each with its own (gold) paragraph as its one passage: ``dev-all``
    (all of dev), ``test-all`` (SQuAD-AS2's held-out test articles) or ``test`` (its fixed 500)."""
    if split not in GOLD_SPLITS:
        raise ConfigError(f"squad-gold has no split {split!r}: use one of {', '.join(GOLD_SPLITS)}")
    articles = read_squad(default_squad_path())
    if split != "dev-all":
        by_title = {a.title: a for a in articles}
        articles = [by_title[t] for t in split_articles(by_title)["test"]]
    keep = {ex.qid for ex in read_jsonl(ensure_squad_as2() / "test.jsonl.gz")} if split == "test" else None
    return [
        OpenExample(q.qid, q.question, list(q.answers), [RetrievedPassage(p.pid, p.context, a.title)])
        for a in articles
        for p in a.paragraphs
        for q in p.questions
        if keep is None or q.qid in keep
    ]
