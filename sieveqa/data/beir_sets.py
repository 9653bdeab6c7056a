"""Passage ranking sets in BEIR's format made from the data this project holds (issue 65), so a reranker
is judged as RAG users judge one: BM25's top 100 of a corpus reranked, nDCG@10.

- ``squad-beir:{dev,test}``: the 2,067 paragraphs of SQuAD v1.1 dev (title = the article) as the
  corpus; the questions of SQuAD-AS2's dev (300) and test (500) sets, each judged relevant to its own
  paragraph. Wikipedia, in the domain of everything the project trained on.
- ``wikiqa-beir:{dev,test}``: every WikiQA document (a Wikipedia summary: its sentences in order) of
  every split as the corpus; the dev and test questions that have a correct sentence, each judged
  relevant to the document that holds it. Bing queries, written without seeing the passage.

Each is built on first use into ``cache_root()/beir-sets/NAME`` (whole or not at all) and read by
:func:`~sieveqa.data.beir.load_beir`; ``write_beir`` writes any set in the format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from sieveqa.data.records import RankingExample
from sieveqa.errors import DatasetNotFoundError
from sieveqa.io import atomic_dir
from sieveqa.paths import cache_root, data_root

#: Bumped when a builder changes what it writes: a folder built by another version is made anew.
VERSION = 1
SPLITS = ("dev", "test")


def write_beir(
    folder: Path,
    corpus: Mapping[str, tuple[str, str]],
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, Mapping[str, int]]],
    about: Mapping[str, object] | None = None,
) -> Path:
    """Write a BEIR folder (``qrels`` by split) whole, replacing any older one; ``about`` goes into
    its ``manifest.json``."""
    with atomic_dir(folder) as tmp:
        with (tmp / "corpus.jsonl").open("w", encoding="utf-8") as f:
            for doc, (title, text) in corpus.items():
                f.write(json.dumps({"_id": doc, "title": title, "text": text}, ensure_ascii=False) + "\n")
        with (tmp / "queries.jsonl").open("w", encoding="utf-8") as f:
            for qid, text in queries.items():
                f.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
        (tmp / "qrels").mkdir()
        for split, judged in qrels.items():
            lines = [f"{q}\t{d}\t{s}\n" for q, docs in judged.items() for d, s in docs.items()]
            (tmp / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(lines))
        manifest = {"version": VERSION, "documents": len(corpus), **(about or {})}
        manifest["queries"] = {split: len(judged) for split, judged in qrels.items()}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return folder


def _squad(folder: Path) -> Path:
    from sieveqa.data.jsonl import read_jsonl
    from sieveqa.data.squad import default_squad_path, read_squad
    from sieveqa.data.squad_as2 import ensure_squad_as2

    corpus = {
        p.pid: (article.title.replace("_", " "), p.context)
        for article in read_squad(default_squad_path())
        for p in article.paragraphs
    }
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    for split in SPLITS:
        qrels[split] = {}
        for ex in read_jsonl(ensure_squad_as2() / f"{split}.jsonl.gz"):
            own = {c.passage_id or c.id.rsplit(":", 1)[0] for c in ex.candidates if c.label == 1}
            queries[ex.qid] = ex.question.text
            qrels[split][ex.qid] = dict.fromkeys(sorted(own), 1)
    return write_beir(folder, corpus, queries, qrels, {"source": "SQuAD v1.1 dev; SQuAD-AS2's questions"})


def _wikiqa_documents(examples: list[RankingExample], corpus: dict[str, tuple[str, str]]) -> None:
    for ex in examples:
        by_doc: dict[str, list[tuple[int, str, str]]] = {}
        for c in ex.candidates:
            by_doc.setdefault(c.passage_id or "", []).append(
                (int(c.id.rsplit("-", 1)[1]), c.text, c.doc_id or "")
            )
        for doc, sentences in by_doc.items():
            sentences.sort()
            corpus.setdefault(doc, (sentences[0][2], " ".join(s for _, s, _ in sentences)))


def _wikiqa(folder: Path) -> Path:
    from sieveqa.data.readers import read_wikiqa

    every = {
        split: read_wikiqa(data_root() / "wikiqa" / f"WikiQA-{split}.tsv.gz")
        for split in ("train", "dev", "test")
    }
    corpus: dict[str, tuple[str, str]] = {}
    for examples in every.values():
        _wikiqa_documents(examples, corpus)
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    for split in SPLITS:
        qrels[split] = {}
        for ex in (ex for ex in every[split] if ex.has_positive()):  # wikiqa:SPLIT's questions
            queries[ex.qid] = ex.question.text
            qrels[split][ex.qid] = {c.passage_id or "": 1 for c in ex.candidates if c.label == 1}
    return write_beir(folder, corpus, queries, qrels, {"source": "WikiQA, every split's documents"})


BUILDERS: dict[str, Callable[[Path], Path]] = {"squad-beir": _squad, "wikiqa-beir": _wikiqa}


def ensure_beir_set(name: str) -> Path:
    """The folder of the built set ``name``, built first when missing or of another version."""
    folder = cache_root() / "beir-sets" / name
    manifest = folder / "manifest.json"
    if not manifest.is_file() or json.loads(manifest.read_text()).get("version") != VERSION:
        data_root()  # no data: one line saying where it was looked for
        BUILDERS[name](folder)
    return folder


def beir_set_loader(name: str) -> Callable[[str], list[RankingExample]]:
    """The registry's loader of ``NAME:SPLIT`` for a built set."""

    def load(split: str) -> list[RankingExample]:
        from sieveqa.data.beir import load_beir

        if split not in SPLITS:
            raise DatasetNotFoundError(f"{name} has no split {split!r}: use one of {', '.join(SPLITS)}")
        return load_beir(f"{ensure_beir_set(name)}:{split}")

    return load
