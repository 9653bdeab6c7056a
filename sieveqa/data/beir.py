"""Passage ranking sets in BEIR's format, and the BM25 first stage that makes them ranking examples.

A BEIR folder holds ``corpus.jsonl`` (``{"_id", "title", "text"}`` a line), ``queries.jsonl``
(``{"_id", "text"}``) and ``qrels/SPLIT.tsv`` (a ``query-id corpus-id score`` header, then one
judgement a line; a score above 0 is relevant, graded where it is above 1). The queries of a split are
those its qrels judge. BEIR's reranking protocol: BM25's top 100 over the whole corpus for each
query, reranked; nDCG@10 counts every judged document, retrieved or not, so a relevant document the
first stage missed still lowers it (``RankingExample.judged``). Dataset names: ``beir:PATH`` (the
``test`` qrels) or ``beir:PATH:SPLIT``.

The first stage is the project's own BM25 (:class:`~sieveqa.retrieval.bm25.BM25Index`: no stemming,
English stopwords), over ``title`` and ``text`` joined, cached by the corpus's size and time.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import logging
from collections.abc import Container, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import DataFormatError, DatasetNotFoundError
from sieveqa.io import atomic_open
from sieveqa.paths import cache_root

log = logging.getLogger(__name__)

#: Documents the first stage keeps per query (BEIR's reranking setting).
FIRST_STAGE_K = 100


@dataclass(frozen=True)
class BeirSet:
    """A BEIR folder's corpus (id -> (title, text)), the queries of one split and their judgements."""

    folder: Path
    split: str
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def passage_text(title: str, text: str) -> str:
    """What a ranker reads of a document: its title, then its text (BEIR's rerankers do the same)."""
    return f"{title}. {text}" if title and not text.startswith(title) else text


def found(path: Path) -> Path:
    """``path``, or ``path.gz`` where only that is there (BEIR's sets are often shipped gzipped)."""
    zipped = path.with_name(path.name + ".gz")
    return zipped if not path.is_file() and zipped.is_file() else path


def _open(path: Path) -> Any:
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")


def _lines(path: Path) -> Iterator[tuple[int, dict]]:
    path = found(path)
    if not path.is_file():
        raise DatasetNotFoundError(
            f"{path}: no such file, nor {path.name}.gz (a BEIR folder holds corpus.jsonl, queries.jsonl, "
            "qrels/)"
        )
    with _open(path) as f:
        for number, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataFormatError(
                    f"{path}, line {number}: not UTF-8 text (byte {err.start + 1})"
                ) from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataFormatError(f"{path}, line {number}: invalid JSON ({err.msg})") from None
            if not isinstance(row, dict) or "_id" not in row:
                raise DataFormatError(f"{path}, line {number}: needs an '_id' field")
            yield number, row


def _by_id(path: Path, empty: bool = True, only: Container[str] | None = None) -> dict[str, dict]:
    """A JSONL file's rows by ``_id`` (those ``only`` holds, where given: a split's queries): each with
    a ``text`` string (not blank unless ``empty``); an id given twice with another row is a
    DataFormatError naming both lines (a dict would keep the last one silently), the same row again is
    kept once (some published sets repeat rows)."""
    rows: dict[str, dict] = {}
    lines: dict[str, int] = {}
    for number, row in _lines(path):
        key, text = str(row["_id"]), row.get("text")
        if only is not None and key not in only:
            continue
        if not isinstance(text, str) or not (empty or text.strip()):
            what = "a 'text' string" if not isinstance(text, str) else "a 'text' that is not blank"
            raise DataFormatError(f"{path}, line {number}: needs {what}")
        if key in lines and rows[key] == row:
            continue
        if key in lines:
            raise DataFormatError(
                f"{path}, line {number}: '_id' {key!r} again, another row (first on line {lines[key]})"
            )
        rows[key], lines[key] = row, number
    return rows


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    """A qrels file's judgements; the same judgement twice is kept once, two scores for one pair
    (the last one won, silently) are a DataFormatError naming both lines, and so is a file of none."""
    path = found(path)
    if not path.is_file():
        there = sorted(p.name.split(".")[0] for p in path.parent.glob("*.tsv*"))
        raise DatasetNotFoundError(f"{path}: no such file; its splits: {', '.join(there) or 'none'}")
    qrels: dict[str, dict[str, int]] = {}
    lines: dict[tuple[str, str], int] = {}
    try:
        with _open(path) as f:
            text = f.read().decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataFormatError(f"{path}: not UTF-8 text (byte {err.start + 1})") from None
    for number, row in enumerate(csv.reader(text.splitlines(), delimiter="\t"), 1):
        if number == 1 and len(row) >= 3 and not row[-1].lstrip("-").isdigit():
            continue  # the header
        if len(row) < 3 or not row[-1].lstrip("-").isdigit():
            raise DataFormatError(
                f"{path}, line {number}: needs query-id, corpus-id and an integer score, tab-separated"
            )
        pair, score = (row[0], row[-2]), int(row[-1])
        given = qrels.setdefault(pair[0], {}).get(pair[1])
        if given is not None and given != score:
            raise DataFormatError(
                f"{path}, line {number}: query {pair[0]!r} and document {pair[1]!r} judged again, "
                f"{score} where line {lines[pair]} says {given}"
            )
        qrels[pair[0]][pair[1]] = score
        lines.setdefault(pair, number)
    if not qrels:
        raise DataFormatError(f"{path}: judges no query (a header at most)")
    return qrels


def read_beir(folder: str | Path, split: str = "test") -> BeirSet:
    """Read a BEIR folder's corpus, and the queries and judgements of ``split`` (each file plain or
    gzipped); a judged query the files do not hold is a DataFormatError naming it. A judged document
    the corpus does not hold counts as BEIR's evaluation counts it, relevant and never retrieved, and
    a warning says how many (a corpus cut down without its qrels)."""
    folder = Path(folder)
    qrels = _qrels(folder / "qrels" / f"{split}.tsv")
    corpus = {
        key: (str(row.get("title") or ""), row["text"])
        for key, row in _by_id(folder / "corpus.jsonl").items()
    }
    if not corpus:
        raise DataFormatError(f"{found(folder / 'corpus.jsonl')}: holds no document")
    queries = {
        key: row["text"] for key, row in _by_id(folder / "queries.jsonl", empty=False, only=qrels).items()
    }
    missing = sorted({d for judged in qrels.values() for d in judged if d not in corpus})
    for qid in qrels:
        if qid not in queries:
            raise DataFormatError(f"{folder}: qrels/{split}.tsv judges query {qid!r}, not in queries.jsonl")
    if missing:
        log.warning(
            "%s: qrels/%s.tsv judges %d documents not in corpus.jsonl (first %r): they count as relevant "
            "where judged so, and are never retrieved", folder, split, len(missing), missing[0]
        )  # fmt: skip
    return BeirSet(folder, split, corpus, queries, qrels)


def _first_stage_file(data: BeirSet, k: int) -> Path:
    files = [found(data.folder / "corpus.jsonl"), found(data.folder / "queries.jsonl")]
    stamps = "|".join(f"{s.st_size}:{s.st_mtime_ns}" for s in (f.stat() for f in files))
    key = f"{data.folder.resolve()}|{stamps}|{data.split}|{k}"
    return cache_root() / "beir-bm25" / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.json"


def _read_cached(path: Path, data: BeirSet) -> dict[str, list[tuple[str, float]]] | None:
    """A cached first stage that is whole and fits ``data`` (its queries, its documents), else None:
    a damaged or foreign file is made anew, never read into an error."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        runs = {str(q): [(str(d), float(s)) for d, s in hits] for q, hits in raw.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    fits = set(runs) == set(data.queries) and all(d in data.corpus for hits in runs.values() for d, _ in hits)
    return runs if fits else None


def first_stage(data: BeirSet, k: int = FIRST_STAGE_K) -> dict[str, list[tuple[str, float]]]:
    """BM25's ``k`` best ``(document id, score)`` for each query, best first (cached while the
    files stay as they were)."""
    cached = _first_stage_file(data, k)
    runs = _read_cached(cached, data)
    if runs is not None:
        return runs
    from sieveqa.retrieval.bm25 import BM25Index

    ids = list(data.corpus)
    index = BM25Index.build(ids, [passage_text(*data.corpus[i]) for i in ids])
    qids = list(data.queries)
    hits = index.search_many([data.queries[q] for q in qids], k)
    runs = {q: [(doc, float(score)) for doc, score in found] for q, found in zip(qids, hits, strict=True)}
    cached.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(cached) as f:
        json.dump(runs, f)
    return runs


def beir_examples(data: BeirSet, k: int = FIRST_STAGE_K) -> list[RankingExample]:
    """One example a query: BM25's top ``k`` as candidates in BM25's order with its scores, labelled
    by the qrels (0 where unjudged), with every judgement kept in ``judged``."""
    runs = first_stage(data, k)
    examples = []
    for qid, text in data.queries.items():
        judged = data.qrels[qid]
        candidates = [
            Candidate(
                doc, passage_text(*data.corpus[doc]), judged.get(doc, 0), doc_id=doc, retrieval_score=score
            )
            for doc, score in runs[qid]
        ]
        examples.append(RankingExample(Question(qid, text), candidates, judged=dict(judged)))
    return examples


def load_beir(spec: str) -> list[RankingExample]:
    """``PATH`` (its test qrels) or ``PATH:SPLIT``, as the ``beir:`` dataset names give them."""
    folder, split = Path(spec), "test"
    if not folder.is_dir() and ":" in spec:
        head, _, split = spec.rpartition(":")
        folder = Path(head)
    if not folder.is_dir():
        raise DatasetNotFoundError(f"beir:{spec}: no such folder")
    return beir_examples(read_beir(folder, split))
