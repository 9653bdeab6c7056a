"""A corpus index's generations: every build or append writes a new ``gen-NNNNN`` folder in full
(SQLite, BM25, dense vectors), then the manifest naming it (atomically); an old generation is removed
once no reader holds its :class:`~sieveqa.io.ReadLease`. A kill at any point leaves the old index or
the new one, never half of one.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sieveqa.data.corpus_format import DB, MANIFEST, PLACES, SCHEMA, CorpusOptions, Embedder, insert_documents
from sieveqa.data.documents import Document
from sieveqa.errors import StoreError
from sieveqa.io import (
    LOCK_NAME,
    atomic_dir,
    atomic_write_json,
    file_sha256,
    read_json_object,
    remove_unleased,
)
from sieveqa.retrieval import BM25Index
from sieveqa.retrieval.dense import DenseIndex

__all__ = ["is_leftover", "manifest_stamp", "sweep_generations", "write_generation"]


def manifest_stamp(path: Path) -> tuple[int, int]:
    """What changes when the manifest is replaced (a new file: another inode and mtime)."""
    stat = (path / MANIFEST).stat()
    return stat.st_ino, stat.st_mtime_ns


def sweep_generations(path: Path) -> None:
    """Remove the generations older than the manifest's that no reader holds (a newer one may be a
    writer's, not yet in the manifest)."""
    try:
        current = str(read_json_object(path / MANIFEST, StoreError).get("generation"))
    except (StoreError, OSError):
        return
    for gen in path.glob("gen-*"):
        if gen.name < current and gen.is_dir():
            remove_unleased(gen)


def is_leftover(name: str) -> bool:
    """A name a build may find in a folder it starts in: the lock, a generation or its temporary."""
    return name == LOCK_NAME or name.startswith(("gen-", ".gen-"))


def write_generation(
    path: Path,
    manifest: dict[str, Any],
    current: Path | None,
    documents: Sequence[Document],
    embedder: Embedder | None,
    progress: bool,
    removed: Sequence[str] = (),
) -> None:
    """Write a new generation of the index at ``path`` holding ``current``'s rows (the generation
    folder it grows from; None for a first build) but those of the ``removed`` document ids, and
    ``documents``, then the manifest naming it. A passage's row (its id) is never given again, so an
    id a client kept cannot name another passage after a removal."""
    number = 0 if current is None else int(current.name.split("-")[1]) + 1
    name = f"gen-{number:05d}"
    options = CorpusOptions(**{"cut_sentences": False, **manifest["options"]})
    with atomic_dir(path / name) as tmp:
        if current is not None:
            shutil.copyfile(current / DB, tmp / DB)
        db = sqlite3.connect(tmp / DB)
        try:
            if current is None:
                db.executescript(SCHEMA)
            db.executescript(PLACES)
            top = db.execute("SELECT MAX(row) FROM passages").fetchone()[0] or 0
            next_row = max(int(manifest.get("next_row", 0)), top + 1)
            gone = _remove_documents(db, removed)
            new_rows = insert_documents(db, documents, options, progress, next_row)
            next_row = max([next_row, *(r + 1 for r in new_rows)])
            db.commit()
            sections = _sections(db)
            texts = [
                (str(row), "\n".join(filter(None, (title, sections.get((doc, start)), text[start:end]))))
                for row, doc, title, text, start, end in db.execute(
                    "SELECT p.row, p.doc, d.title, d.text, p.start, p.end FROM passages p "
                    "JOIN documents d ON d.row = p.doc ORDER BY p.row"
                )
            ]
            counts = {
                table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for table in ("documents", "sentences", "passages")
            }
        finally:
            db.close()
        BM25Index.build([i for i, _ in texts], [t for _, t in texts]).save(tmp / "bm25")
        if embedder is not None:
            fresh = [(i, t) for i, t in texts if int(i) in new_rows]
            vectors = embedder.embed([t for _, t in fresh], progress=progress)
            if current is not None and (current / "dense").is_dir():
                dense = DenseIndex.load(current / "dense")
                dense.remove(str(row) for row in gone)
                dense.add([i for i, _ in fresh], vectors)
            else:
                dense = DenseIndex.build([i for i, _ in fresh], vectors)
            dense.save(tmp / "dense")
        files = {f.relative_to(tmp).as_posix(): file_sha256(f) for f in sorted(tmp.rglob("*")) if f.is_file()}
    manifest = {**manifest, "generation": name, "counts": counts, "files": files, "next_row": next_row}
    atomic_write_json(path / MANIFEST, manifest)


def _remove_documents(db: sqlite3.Connection, ids: Sequence[str]) -> list[int]:
    """Delete the documents ``ids`` with their sentences, places and passages (a few hundred at a time,
    by the indexes on ``doc``); returns the passages' rows."""
    rows: list[int] = []
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        found = db.execute(f"SELECT row FROM documents WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        docs = [doc for (doc,) in found]
        if not docs:
            continue
        marks = ",".join("?" * len(docs))
        rows += [r for (r,) in db.execute(f"SELECT row FROM passages WHERE doc IN ({marks})", docs)]
        for table in ("sentences", "places", "passages"):
            db.execute(f"DELETE FROM {table} WHERE doc IN ({marks})", docs)
        db.execute(f"DELETE FROM documents WHERE row IN ({marks})", docs)
    return rows


def _sections(db: sqlite3.Connection) -> dict[tuple[int, int], str]:
    """The section each passage starts in, by (document row, passage start): BM25 reads it with the
    passage, as it reads the title (a passage stays inside one section)."""
    out: dict[tuple[int, int], str] = {}
    rows = db.execute(
        "SELECT p.doc, p.start, s.section FROM passages p JOIN places s "
        "ON s.doc = p.doc AND s.start <= p.start AND p.start < s.end WHERE s.section != ''"
    )
    for doc, start, section in rows:
        out[(doc, start)] = section
    return out
