"""What a corpus index stores: its format constants, how documents become sentences and passages
(:class:`CorpusOptions`), a stored passage (:class:`IndexedPassage`) and the SQLite rows one build
or append inserts. The generations that hold these files are ``sieveqa.data.corpus_generations``'s;
the index that reads and searches them is ``sieveqa.data.corpus``'s.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from tqdm.auto import tqdm

from sieveqa.data.documents import Document, Place
from sieveqa.data.passages import passage_spans, word_chunks
from sieveqa.data.sentences import sentence_spans
from sieveqa.errors import ConfigError, DataFormatError

__all__ = [
    "DB",
    "FORMAT",
    "MANIFEST",
    "PLACES",
    "RETRIEVERS",
    "SCHEMA",
    "VERSION",
    "CorpusOptions",
    "Embedder",
    "IndexedPassage",
    "check_ids",
    "insert_documents",
]

FORMAT = "sieveqa-corpus-index"
VERSION = 1
MANIFEST = "manifest.json"
DB = "corpus.sqlite"
RETRIEVERS = ("bm25", "dense", "hybrid")
SCHEMA = """
CREATE TABLE documents (row INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, title TEXT NOT NULL,
                        text TEXT NOT NULL);
CREATE TABLE sentences (doc INTEGER NOT NULL, position INTEGER NOT NULL, start INTEGER NOT NULL,
                        end INTEGER NOT NULL, PRIMARY KEY (doc, position));
CREATE TABLE passages (row INTEGER PRIMARY KEY, doc INTEGER NOT NULL, start INTEGER NOT NULL,
                       end INTEGER NOT NULL);
"""
#: Where each block of a file's text comes from (section, page, line); an index built before it gets
#: the table (empty for its documents) when appended to.
PLACES = """
CREATE TABLE IF NOT EXISTS places (doc INTEGER NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,
                                   section TEXT NOT NULL, page INTEGER, line INTEGER);
CREATE INDEX IF NOT EXISTS places_doc ON places (doc, start);
CREATE INDEX IF NOT EXISTS passages_doc ON passages (doc);
"""


class Embedder(Protocol):
    """What turns texts into unit vectors for dense retrieval (``sieveqa.models.embedder``)."""

    def embed(self, texts: Sequence[str], progress: bool = False) -> np.ndarray: ...

    def signature(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class CorpusOptions:
    """How documents become passages."""

    passage_tokens: int = field(
        default=200, metadata={"help": "passages: consecutive sentences up to this many tokens"}
    )
    chunk_words: int | None = field(
        default=None, metadata={"help": "instead, passages of this many words (e.g. 100)"}
    )
    chunk_stride: int | None = field(
        default=None, metadata={"help": "word chunks start every N words (default: no overlap)"}
    )
    cut_sentences: bool = field(
        default=True,
        metadata={"help": "cut a sentence longer than passage_tokens into word windows (indexes built "
                  "before this option kept it whole: one passage)"},
    )  # fmt: skip

    def __post_init__(self) -> None:
        if self.passage_tokens < 8:
            raise ConfigError(f"passage_tokens must be >= 8, got {self.passage_tokens}")
        if self.chunk_stride is not None and self.chunk_words is None:
            raise ConfigError("chunk_stride needs chunk_words")
        if self.chunk_words is not None:
            word_chunks("a", self.chunk_words, self.chunk_stride)  # validates the pair


@dataclass(frozen=True)
class IndexedPassage:
    """A passage as stored: its text, its document, its sentences' spans inside the text and, for a
    file's passage, its blocks' places (their offsets inside the passage's text)."""

    id: str
    doc_id: str
    title: str
    text: str
    spans: tuple[tuple[int, int], ...]
    places: tuple[Place, ...] = ()

    @property
    def sentences(self) -> list[str]:
        return [self.text[a:b] for a, b in self.spans]

    def place(self, at: int = 0) -> Place | None:
        """The place in its file of character ``at`` of the passage (None: the format has none)."""
        return next((p for p in self.places if p.start <= at < p.end), None)

    def location(self, at: int = 0) -> str:
        """Where character ``at`` of the passage is in its file: ``page 3, § Options`` (``""``: the
        format has no places)."""
        place = self.place(at)
        return place.label if place is not None else ""

    @property
    def heading(self) -> str:
        """The document's title and the passage's section (``ls › OPTIONS``): what a reader sees
        above the passage in its file."""
        place = self.place(0)
        return " › ".join(part for part in (self.title, place.section if place else "") if part)


def _sentences(doc: Document) -> list[tuple[int, int]]:
    try:
        spans = sentence_spans(doc.text, list(doc.sentences) if doc.sentences is not None else None)
    except ValueError as err:
        raise DataFormatError(f"document {doc.id!r}: {err}") from None
    if not spans:
        raise DataFormatError(f"document {doc.id!r} has no text")
    return spans


def check_ids(documents: Sequence[Document], stored: set[str]) -> None:
    """Refuse an empty corpus, an item that is no Document (or whose id, title or text is no string),
    and a document id repeated or already ``stored``."""
    if not documents:
        raise DataFormatError("the corpus is empty: no documents to index")
    seen: set[str] = set()
    for i, doc in enumerate(documents):
        if not isinstance(doc, Document):
            raise DataFormatError(
                f"documents[{i}]: expected a sieveqa Document(id=..., text=...), got {type(doc).__name__} "
                "(read_documents() makes them from files)"
            )
        for name in ("id", "title", "text"):
            if not isinstance(value := getattr(doc, name), str):
                raise DataFormatError(f"documents[{i}]: {name} must be a string, got {type(value).__name__}")
        if doc.id in seen or doc.id in stored:
            where = "already in the index" if doc.id in stored else "repeated"
            raise DataFormatError(f"document id {doc.id!r} is {where}")
        seen.add(doc.id)


def insert_documents(
    db: sqlite3.Connection,
    documents: Sequence[Document],
    options: CorpusOptions,
    progress: bool,
    next_row: int = 1,
) -> set[int]:
    """Insert documents, their sentences and passages (rows from ``next_row`` on); returns the new
    passages' rows."""
    new_rows: set[int] = set()
    rows = itertools.count(next_row)
    for doc in tqdm(documents, desc="splitting documents", unit="doc", disable=not progress):
        spans = _sentences(doc)
        cur = db.execute(
            "INSERT INTO documents (id, title, text) VALUES (?, ?, ?)", (doc.id, doc.title, doc.text)
        )
        row = cur.lastrowid
        db.executemany(
            "INSERT INTO sentences (doc, position, start, end) VALUES (?, ?, ?, ?)",
            [(row, i, a, b) for i, (a, b) in enumerate(spans)],
        )
        db.executemany(
            "INSERT INTO places (doc, start, end, section, page, line) VALUES (?, ?, ?, ?, ?, ?)",
            [(row, p.start, p.end, p.section, p.page, p.line) for p in doc.places],
        )
        # A passage stays inside one section of its file.
        breaks = [b.start for a, b in itertools.pairwise(doc.places) if a.section != b.section]
        for a, b in passage_spans(
            doc.text,
            spans,
            options.passage_tokens,
            options.chunk_words,
            options.chunk_stride,
            options.cut_sentences,
            breaks,
        ):
            new_rows.add(passage := next(rows))
            db.execute("INSERT INTO passages VALUES (?, ?, ?, ?)", (passage, row, a, b))
    return new_rows
