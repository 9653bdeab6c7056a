"""What an append to a corpus index changes: the documents it adds, replaces and (with ``sync``)
removes, and the refusals that keep a sync from emptying an index given the wrong input.

An index remembers the inputs it was built and appended from (``manifest["inputs"]``: a folder's or a
file's resolved path, or a dataset's name). A sync follows one input: it is refused where the index
holds other inputs' documents, or where none of the documents given is in the index (another folder,
a subfolder: their ids differ), since either would remove what the user did not mean to. A document
whose file is there but was not read this time (``keep``: a reader missing, a file being written) is
kept as it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sieveqa.data.documents import Document
from sieveqa.errors import DataFormatError, StoreError

__all__ = ["Plan", "input_name", "plan"]


def input_name(source: str | Path) -> str:
    """How an index records an input: a folder's or a file's resolved path, else the dataset name."""
    path = Path(source).expanduser()
    return str(path.resolve()) if path.exists() else str(source)


@dataclass
class Plan:
    """The documents to write (new and replaced), the ids to remove, and their counts."""

    documents: list[Document]
    removed: list[str]
    changes: dict[str, int] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)


def plan(
    path: Path,
    stored: dict[str, tuple[str, str]],
    documents: Sequence[Document],
    sync: bool,
    keep: Iterable[str],
    inputs: list[str] | None,
    source: str | None,
) -> Plan:
    """The change an append makes to an index holding ``stored`` (id -> (title, text)), recorded as
    coming from ``inputs`` (None: an index from before they were kept), given ``documents`` read from
    ``source``."""
    changed = [d.id for d in documents if d.id in stored and stored[d.id] != (d.title, d.text)]
    if changed and not sync:
        raise DataFormatError(
            f"document id {changed[0]!r} is already in the index with another text (changed since it "
            "was indexed? `sieveqa index corpus --sync` or append(..., sync=True) replaces it and "
            "removes the documents the input no longer has; or give it a new id)"
        )
    given = {d.id for d in documents} | set(keep)
    missing = [i for i in stored if i not in given]
    others = [i for i in inputs or [] if source is not None and i != source]
    if sync and missing:
        if others:
            raise StoreError(
                f"{path} holds documents of other inputs too ({', '.join(others[:3])}): --sync would "
                "remove them (it follows one input: index each into a folder of its own)"
            )
        if not given & stored.keys():
            raise StoreError(
                f"none of the {len(given)} document{'s' * (len(given) != 1)} given is in {path}: --sync "
                f"would remove all "
                f"{len(stored)} of its documents (is this the input it was built from? its documents' "
                "ids are their paths inside the folder indexed)"
            )
    replacing = set(changed)
    fresh = [d for d in documents if d.id not in stored or d.id in replacing]
    removed = [*changed, *missing] if sync else list(changed)
    recorded = list(inputs or [])
    if source is not None and source not in recorded:
        recorded.append(source)
    changes = {
        "added": len(fresh) - len(changed),
        "replaced": len(changed),
        "removed": len(missing) if sync else 0,
        # the documents the input no longer has, said where a sync would remove them (one input)
        "missing": 0 if sync or others else len(missing),
    }
    return Plan(fresh, removed, changes, recorded)
