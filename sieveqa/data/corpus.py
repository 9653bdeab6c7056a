"""A corpus index: documents, sentences and passages with their offsets in SQLite, BM25 over the
passages (bm25s, saved with its own format) and, optionally, dense vectors in FAISS.

Layout of an index folder: ``manifest.json`` (format, options, counts, the tokenizer and embedder
that built it, sha256 of each file) names the generation folder ``gen-NNNNN`` that holds
``corpus.sqlite``, ``bm25/`` and ``dense/``. A build or an append writes a new generation in full,
then the manifest (atomically), then removes the old generation once no reader holds it (an open
index holds a shared lock on its generation, so a server keeps answering from it while ``index add``
runs, and ``latest()`` moves it to the new one): a kill at any point leaves either the old index or the
new one, and a killed first build leaves no index, so running it again starts over. Appending
re-encodes nothing already stored; only BM25, whose statistics are global, is rebuilt.

This module opens, writes and searches an index; what it stores is ``sieveqa.data.corpus_format``'s
and how a generation is written and swept is ``sieveqa.data.corpus_generations``'s.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from sieveqa.data.corpus_format import (
    DB,
    FORMAT,
    MANIFEST,
    RETRIEVERS,
    VERSION,
    CorpusOptions,
    Embedder,
    IndexedPassage,
    check_ids,
)
from sieveqa.data.corpus_generations import is_leftover, manifest_stamp, sweep_generations, write_generation
from sieveqa.data.corpus_sync import plan
from sieveqa.data.documents import Document, Place
from sieveqa.data.passages import tokenizer_signature
from sieveqa.data.sentences import SPLITTER_VERSION
from sieveqa.errors import BusyError, ConfigError, DataFormatError, StoreError
from sieveqa.fields import typed
from sieveqa.io import ReadLease, exclusive, file_sha256, read_manifest
from sieveqa.retrieval import BM25Index
from sieveqa.retrieval.dense import DenseIndex
from sieveqa.retrieval.fusion import fuse

log = logging.getLogger(__name__)
_SAID_CJK: set[Path] = set()  # the indexes whose BM25 predates CJK splitting, said once a process

__all__ = ["FORMAT", "RETRIEVERS", "CorpusIndex", "CorpusOptions", "Embedder", "IndexedPassage"]


class CorpusIndex:
    """An opened corpus index (read-only; ``append`` writes a new generation and reopens). It holds a
    :class:`~sieveqa.io.ReadLease` on its generation until ``close`` or garbage collection."""

    def __init__(
        self,
        path: Path,
        manifest: dict[str, Any],
        lease: ReadLease | None = None,
        stamp: tuple[int, int] | None = None,
    ) -> None:
        self.path = path
        self.manifest = manifest
        # An index from before cut_sentences kept long sentences whole; appends keep doing so.
        options = {"cut_sentences": False, **manifest["options"]}
        self.options = CorpusOptions(**typed(CorpusOptions, options, f"{path}/{MANIFEST}"))
        gen = path / manifest["generation"]
        self._lease = lease or ReadLease(gen)
        # The stamp of the manifest read, not of a later one.
        self._stamp = stamp if stamp is not None else manifest_stamp(path)
        self._db_path = gen / DB
        self._has_places: bool | None = None  # an index from before places has none: asked once
        #: What the ``append`` that returned this index changed (counts; empty otherwise).
        self.changes: dict[str, int] = {}
        self._bm25 = BM25Index.load(gen / "bm25")
        if not self._bm25.splits_cjk and path not in _SAID_CJK:
            _SAID_CJK.add(path)
            log.warning(
                "%s: its BM25 was built before Chinese, Japanese and Korean text was split into words, "
                "so questions in those scripts find nothing; `sieveqa index corpus --input INPUT --out %s "
                "--sync` with its input again rebuilds it (and rereads its files as this version reads them)",
                path,
                path,
            )
        self._dense = DenseIndex.load(gen / "dense") if (gen / "dense").is_dir() else None

    # -- opening ---------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, verify: bool = True) -> CorpusIndex:
        """Open an index; ``verify`` checks every file's sha256 against the manifest."""
        path = Path(path)
        for attempt in range(3):  # a writer may replace the generation between manifest and lease
            stamp = manifest_stamp(path) if (path / MANIFEST).is_file() else None
            manifest = read_manifest(path, FORMAT, VERSION, "a corpus index", "sieveqa index corpus")
            if manifest.get("tokenizer") != tokenizer_signature():
                raise StoreError(f"{path}: built with another tokenizer than the installed one; rebuild it")
            gen = path / str(manifest.get("generation"))
            try:
                lease = ReadLease(gen)
            except (FileNotFoundError, NotADirectoryError):
                if attempt < 2:
                    continue
                raise StoreError(f"{path}: {manifest.get('generation')} is missing") from None
            break
        for name, sha in manifest.get("files", {}).items():
            file = gen / name
            if not file.is_file():
                raise StoreError(f"{path}: {manifest['generation']}/{name} is missing")
            if verify and file_sha256(file) != sha:
                raise StoreError(f"{path}: {manifest['generation']}/{name} is damaged (sha256 differs)")
        return cls(path, manifest, lease, stamp)

    def latest(self) -> CorpusIndex:
        """This index, or the newer generation a writer has added since it was opened (cheap when
        nothing changed: one ``stat`` of the manifest). This object stays usable until closed; an
        index moved, deleted or damaged since is a BusyError naming it (a server answers 503)."""
        try:
            if manifest_stamp(self.path) == self._stamp:
                return self
            fresh = CorpusIndex.open(self.path, verify=False)
        except (OSError, StoreError, DataFormatError) as err:
            name = self.path.name
            if not (self.path / MANIFEST).is_file():
                raise BusyError(
                    f"index {name}: not there (moved, deleted or replaced?); try again when it is back"
                ) from err
            # Damaged since it was opened: said by the index's name, not the path (a server's client
            # reads this), with what is wrong.
            why = str(err).replace(f"{self.path}/", "").replace(str(self.path), name)
            raise BusyError(
                f"index {name} cannot be read now ({why}); rebuild it with sieveqa index corpus"
            ) from err
        if fresh.manifest["generation"] == self.manifest["generation"]:
            self._stamp = fresh._stamp
            fresh.close()
            return self
        return fresh

    def sweep(self) -> None:
        """Remove the generations older than the current one that no reader holds."""
        sweep_generations(self.path)

    def close(self) -> None:
        """Release this generation, and remove the generations no reader holds any more."""
        self._lease.close()
        self.sweep()

    # -- writing ---------------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        documents: Iterable[Document],
        path: str | Path,
        options: CorpusOptions | None = None,
        embedder: Embedder | None = None,
        progress: bool = False,
        source: str | None = None,
    ) -> CorpusIndex:
        """Index ``documents`` (any iterable: read once) into a new index at ``path`` (BM25, and dense
        vectors with ``embedder``); ``source`` names the input they were read from."""
        documents = list(documents)  # checking a generator consumed it: "the corpus is empty"
        path = Path(path)
        if (path / MANIFEST).exists():
            raise StoreError(
                f"{path} already holds an index; add documents with CorpusIndex.open(path).append "
                "or `sieveqa index corpus --out PATH`"
            )
        if path.is_dir() and (other := [p.name for p in path.iterdir() if not is_leftover(p.name)]):
            raise StoreError(f"{path} is not empty ({', '.join(sorted(other)[:3])}) and holds no index")
        check_ids(documents, set())
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "options": asdict(options or CorpusOptions()),
            "tokenizer": tokenizer_signature(),
            "splitter": SPLITTER_VERSION,
            "embedder": embedder.signature() if embedder is not None else None,
            "inputs": [source] if source is not None else [],
            "generation": None,
        }
        with exclusive(path, "corpus index"):
            if (path / MANIFEST).exists():
                raise StoreError(f"{path} already holds an index (another build finished first)")
            write_generation(path, manifest, None, documents, embedder, progress)
        return cls.open(path, verify=False)

    def append(
        self,
        documents: Iterable[Document],
        embedder: Embedder | None = None,
        progress: bool = False,
        sync: bool = False,
        keep: Iterable[str] = (),
        source: str | None = None,
    ) -> CorpusIndex:
        """Add the documents the index does not hold yet; returns the reopened index (the same one when
        nothing changes), whose ``changes`` count what was ``added``, ``replaced`` and ``removed``, and
        the stored documents the input did not have (``missing``). A document whose id is stored with
        the same title and text is skipped, so the same command run twice adds nothing; with another
        text it is refused, unless ``sync``: then it is replaced, and the documents the input no longer
        has are removed (a folder's edited, deleted and renamed files), but those in ``keep`` (there,
        but not read this time). ``source`` names the input (``corpus_sync``: a sync is refused where it
        would remove what another input, or another folder, put there)."""
        documents = list(documents)
        with exclusive(self.path, "corpus index"):
            current = CorpusIndex.open(self.path, verify=False)  # another writer may have added
            if (current._dense is None) != (embedder is None):
                has = "has" if current._dense is not None else "has no"
                raise StoreError(
                    f"{self.path}: the index {has} dense vectors; append with the same --retriever"
                )
            if embedder is not None:
                current.check_embedder(embedder)
            check_ids(documents, set())
            with contextlib.closing(current._connect()) as db:
                stored = {
                    row[0]: (row[1] or "", row[2])
                    for row in db.execute("SELECT id, title, text FROM documents")
                }
            change = plan(self.path, stored, documents, sync, keep, current.manifest.get("inputs"), source)
            if not current._bm25.splits_cjk:
                change.changes["rebuilt"] = 1  # a new generation, if only for its BM25
            if not change.documents and not change.removed and not change.changes.get("rebuilt"):
                current.close()
                self.changes = change.changes
                return self
            manifest = {k: v for k, v in current.manifest.items() if k not in ("files", "counts")}
            manifest["inputs"] = change.inputs
            write_generation(
                self.path, manifest, current.generation, change.documents, embedder, progress, change.removed
            )
            current.close()
        self.close()  # readers elsewhere keep the old generation until they move on
        fresh = CorpusIndex.open(self.path, verify=False)
        fresh.changes = change.changes
        return fresh

    def check_embedder(self, embedder: Embedder) -> None:
        stored, ours = self.manifest.get("embedder"), embedder.signature()
        if stored != ours:
            raise StoreError(
                f"{self.path}: its dense vectors come from another model ({_describe(stored)}) than "
                f"the one given ({_describe(ours)}); rebuild the index or use --retriever bm25"
            )

    # -- reading ---------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        # One connection per call, read-only: safe from any thread.
        return sqlite3.connect(f"file:{self._db_path}?mode=ro", uri=True)

    def __len__(self) -> int:
        return int(self.manifest["counts"]["passages"])

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.manifest["counts"])

    @property
    def retrievers(self) -> tuple[str, ...]:
        return RETRIEVERS if self._dense is not None else ("bm25",)

    @property
    def generation(self) -> Path:
        """The generation folder this index reads."""
        return self.path / self.manifest["generation"]

    def disk_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.generation.rglob("*") if f.is_file())

    def passages(self, ids: Sequence[str]) -> list[IndexedPassage]:
        """The passages with these ids, in the order asked."""
        rows = [int(i) for i in ids]
        if not rows:
            return []
        marks = ",".join("?" * len(rows))
        with contextlib.closing(self._connect()) as db:
            found = {
                r[0]: r[1:]
                for r in db.execute(
                    "SELECT p.row, p.doc, p.start, p.end, d.id, d.title, d.text FROM passages p "
                    f"JOIN documents d ON d.row = p.doc WHERE p.row IN ({marks})",
                    rows,
                )
            }
            sents: dict[int, list[tuple[int, int]]] = {}
            docs = sorted({v[0] for v in found.values()})
            in_docs = f"doc IN ({','.join('?' * len(docs))})"
            for doc, start, end in db.execute(
                f"SELECT doc, start, end FROM sentences WHERE {in_docs} ORDER BY doc, position", docs
            ):
                sents.setdefault(doc, []).append((start, end))
            places: dict[int, list[Place]] = {}
            if self._has_places is None:  # threads that race here find the same answer
                found_table = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'places'"
                self._has_places = db.execute(found_table).fetchone() is not None
            if self._has_places:
                for doc, *where in db.execute(
                    f"SELECT doc, start, end, section, page, line FROM places WHERE {in_docs} "
                    "ORDER BY doc, start",
                    docs,
                ):
                    places.setdefault(doc, []).append(Place(*where))
        out = []
        for row in rows:
            doc, start, end, doc_id, title, text = found[row]
            spans = tuple(
                (max(a, start) - start, min(b, end) - start) for a, b in sents[doc] if a < end and b > start
            )
            where = tuple(
                replace(p, start=max(p.start, start) - start, end=min(p.end, end) - start)
                for p in places.get(doc, ())
                if p.start < end and p.end > start
            )
            out.append(IndexedPassage(str(row), doc_id, title, text[start:end], spans, where))
        return out

    def search_many(
        self,
        queries: Sequence[str],
        k: int,
        retriever: str = "bm25",
        embedder: Embedder | None = None,
        matching_only: bool = True,
    ) -> list[list[tuple[str, float]]]:
        """The best ``k`` ``(passage id, score)`` per query, best first; ``dense`` and ``hybrid``
        (reciprocal rank fusion of both) need the ``embedder`` the index was built with. BM25 keeps
        only passages sharing a word with the query unless ``matching_only`` is off (then ``k``
        passages, zero scores ordered by id, as the benchmark builders have it)."""
        if retriever not in RETRIEVERS:
            raise ConfigError(f"--retriever must be one of {', '.join(RETRIEVERS)}, got {retriever!r}")
        if retriever == "bm25":
            hits = self._bm25.search_many(queries, k)
            return [[h for h in q if h[1] > 0] for q in hits] if matching_only else hits
        if self._dense is None:
            raise StoreError(
                f"{self.path}: built without dense vectors; rebuild with --retriever {retriever}"
            )
        if embedder is None:
            raise ConfigError(f"--retriever {retriever} needs the embedder the index was built with")
        self.check_embedder(embedder)
        dense = self._dense.search_many(embedder.embed(queries), k if retriever == "dense" else 2 * k)
        if retriever == "dense":
            return dense
        lexical = [[hit for hit in hits if hit[1] > 0] for hits in self._bm25.search_many(queries, 2 * k)]
        return [fuse([a, b], k) for a, b in zip(lexical, dense, strict=True)]


def _describe(signature: Any) -> str:
    if not isinstance(signature, dict):
        return "none"
    return f"{signature.get('name')}, fingerprint {str(signature.get('fingerprint'))[:12]}"
