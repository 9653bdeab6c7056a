"""Documents to index, from the files people have: a folder, a file, or a dataset name.

One reader module per format turns a file into :class:`~sieveqa.data.formats.blocks.Block` s (plain
text, Markdown, HTML, PDF, Word); :func:`~sieveqa.data.formats.blocks.assemble` makes them a document
the same way for all. A JSONL file of ``{"id", "title"?, "text"}`` is read as documents, and the
dataset names ``demo`` (eight short articles written for sieveqa's examples),
``squad:{train,dev,test,all}`` and ``wikiqa:{train,dev,test,all}`` name benchmark corpora.

A compressed file (``.gz``, ``.bz2``, ``.xz``: how /usr/share/doc keeps its READMEs and changelogs) is
read as the file inside, by the name without that ending (``README.md.gz`` as Markdown, ``README.gz``
as text). In a folder, a file no reader takes, or one a reader cannot read (a scanned PDF, a damaged
file), is skipped and reported with its reason (:class:`Reading`); given by itself, it is refused in
one line. Everything is read and checked before indexing starts.
"""

from __future__ import annotations

import importlib
import logging
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sieveqa.data.documents import Document, squad_documents, wikiqa_documents
from sieveqa.data.formats.blocks import Block, assemble
from sieveqa.data.formats.jsonl import read_jsonl_documents
from sieveqa.errors import ConfigError, DataFormatError, DatasetNotFoundError

log = logging.getLogger(__name__)

__all__ = [
    "FORMATS",
    "TEXT_NAMES",
    "Block",
    "Reading",
    "Unreadable",
    "read_documents",
    "read_file",
    "scan_documents",
]

#: Each format: the file name endings it reads (lower case; "" is a file without one, read as text
#: when it is text: README, NEWS) and the module whose ``read(path)`` gives (title, blocks).
FORMATS: dict[str, tuple[tuple[str, ...], str]] = {
    "text": ((".txt", ".text", ".rst", ""), "sieveqa.data.formats.text"),
    "markdown": ((".md", ".markdown"), "sieveqa.data.formats.markdown"),
    "html": ((".html", ".htm", ".xhtml"), "sieveqa.data.formats.html"),
    "pdf": ((".pdf",), "sieveqa.data.formats.pdf"),
    "docx": ((".docx",), "sieveqa.data.formats.docx"),
}
#: Formats people try that no reader takes, with what to do instead.
_ADVICE = {
    ".doc": "the old Word format: save it as .docx",
    ".odt": "OpenDocument: save it as .docx or PDF",
    ".rtf": "RTF: save it as .docx",
    ".zip": "an archive: unpack it first",
    ".tar": "an archive: unpack it first",
    ".tgz": "an archive: unpack it first",
    ".json": "JSON: give documents as JSONL ({id, title?, text} a line) to --input by itself",
    ".jsonl": "JSONL: give it to --input by itself",
}
_ADVICE |= {
    f".{n}": "a man page (troff): render it as text first (man -l FILE > FILE.txt)" for n in range(1, 10)
}
#: Names that say a file is plain text whatever its ending (how READMEs, changelogs and licences are
#: named in source trees and /usr/share/doc); the text reader still refuses one that is not text.
TEXT_NAMES = frozenset({
    "readme", "changelog", "changes", "news", "install", "authors", "contributors", "copying",
    "copyright", "license", "licence", "notice", "todo", "thanks", "hacking", "bugs", "faq", "history",
})  # fmt: skip
#: Compressed files, read as the file inside (by the stdlib module that opens them) ...
_COMPRESSED = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma"}
#: ... up to this many bytes unpacked (a larger one, or a decompression bomb, is skipped).
MAX_UNPACKED = 256 * 1024 * 1024
_SPLITS = ("train", "dev", "test", "all")
DEMO_CORPUS = Path(__file__).resolve().parents[2] / "resources" / "demo-corpus"


class Unreadable(DataFormatError):
    """A reader cannot make a document of a file (the message says why, without the file)."""


@dataclass
class Reading:
    """What a folder or file gave: its documents, the files read by format, and the files skipped
    with their reasons (``hidden``: files under names starting with a dot, counted apart)."""

    documents: list[Document] = field(default_factory=list)
    read: Counter[str] = field(default_factory=Counter)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    hidden: int = 0

    def summary(self) -> str:
        """``read 12 files (text 5, pdf 4, docx 3); skipped 2`` in one line."""
        kinds = ", ".join(f"{name} {n}" for name, n in sorted(self.read.items()))
        n = sum(self.read.values())
        line = f"read {n} file{'' if n == 1 else 's'} ({kinds})" if self.read else "read no files"
        if self.skipped:
            line += f"; skipped {len(self.skipped)}"
        if self.hidden:
            line += f"; {self.hidden} hidden (names starting with '.') not read"
        return line


def format_of(path: Path) -> str | None:
    """The format whose reader takes ``path`` by its name (a compressed one's: the file inside), or
    None. A plain-text file named by convention (``README.Debian``, ``changelog.Debian.gz``,
    ``NEWS.old``: ``TEXT_NAMES``) is text whatever follows its first dot."""
    inner = _inner(path)
    suffix = inner.suffix.lower()
    known = next((name for name, (suffixes, _) in FORMATS.items() if suffix in suffixes), None)
    if known is None and inner.name.split(".", 1)[0].lower() in TEXT_NAMES:
        return "text"
    return known


def _inner(path: Path) -> Path:
    """The name of the file inside a compressed one (``README.md.gz``: ``README.md``), else ``path``."""
    return path.with_suffix("") if path.suffix.lower() in _COMPRESSED else path


def read_file(path: Path, doc_id: str | None = None) -> Document:
    """The document of one file in a format sieveqa reads, or compressed (Unreadable when its reader
    cannot)."""
    if path.suffix.lower() in _COMPRESSED:
        return _read_compressed(path, doc_id or path.name)
    kind = format_of(path)
    if kind is None:
        raise Unreadable(_refusal(path))
    module = importlib.import_module(FORMATS[kind][1])
    try:
        title, blocks = module.read(path)
    except (Unreadable, MemoryError):
        raise
    except Exception as err:  # a damaged file its library chokes on: named, never a traceback
        raise Unreadable(f"its {kind} reader failed on it ({type(err).__name__}: {err})") from err
    document = assemble(doc_id or path.name, title or _title_of(path), blocks)
    if not document.text.strip():
        raise Unreadable("no text in it")
    return document


def _read_compressed(path: Path, doc_id: str) -> Document:
    """The document of the file inside ``path``, unpacked to a temporary folder under its own name."""
    inner = _inner(path)
    if format_of(path) is None:
        raise Unreadable(_refusal(inner))
    opener = importlib.import_module(_COMPRESSED[path.suffix.lower()])
    try:
        with opener.open(path, "rb") as packed:
            data = packed.read(MAX_UNPACKED + 1)
    except (OSError, EOFError, ValueError) as err:  # gzip.BadGzipFile, lzma.LZMAError: OSError too
        raise Unreadable(f"it could not be unpacked ({type(err).__name__}: {err})") from None
    if len(data) > MAX_UNPACKED:
        raise Unreadable(f"it unpacks to more than {MAX_UNPACKED // 2**20} MiB")
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / inner.name
        plain.write_bytes(data)
        return read_file(plain, doc_id)


def _refusal(path: Path) -> str:
    suffix = path.suffix.lower()
    reads = ", ".join(s for suffixes, _ in FORMATS.values() for s in suffixes if s)
    what = _ADVICE.get(suffix, f"a format sieveqa does not read ({suffix or 'no name ending'})")
    return f"{what}; sieveqa reads {reads} (each also as .gz, .bz2 or .xz), and JSONL of {{id, title?, text}}"


def _title_of(path: Path) -> str:
    return path.stem.replace("_", " ").replace("-", " ")


def scan_documents(source: str | Path, progress: bool = False) -> Reading:
    """The documents of a folder (every file a reader takes, skipped ones reported; ``progress``: a
    bar over its files where the output is a terminal), a file (refused in one line when it cannot be
    read), or a dataset name (see the module docstring)."""
    path = Path(source).expanduser()
    if path.is_dir():
        return _folder(path, progress)
    reading = Reading()
    if path.is_file():
        if path.suffix.lower() == ".jsonl":
            reading.documents = list(read_jsonl_documents(path))
            reading.read["jsonl"] = 1
        else:
            try:
                reading.documents = [read_file(path)]
            except Unreadable as err:
                raise DataFormatError(f"{path}: {err}") from None
            reading.read[str(format_of(path))] = 1
        return reading
    reading.documents = _dataset(str(source))
    return reading


def read_documents(source: str | Path) -> list[Document]:
    """The documents of a folder, a file or a dataset name; DataFormatError when there are none. The
    files no reader takes are named in a logged warning (``scan_documents`` gives them all)."""
    if not isinstance(source, str | os.PathLike):
        kind = type(source).__name__
        raise ConfigError(f"read_documents takes a folder, a file or a dataset name, got {kind}")
    if not str(source).strip():
        raise ConfigError("read_documents: the source is empty (a folder, a file or a dataset name)")
    reading = scan_documents(source)
    if reading.skipped and reading.documents:
        named = ", ".join(f"{name} ({why})" for name, why in reading.skipped[:3])
        more = f" and {len(reading.skipped) - 3} more" if len(reading.skipped) > 3 else ""
        log.warning("%s: %s; not read: %s%s", source, reading.summary(), named, more)
    if not reading.documents:
        why = (
            f" ({reading.summary()}: {reading.skipped[0][0]}: {reading.skipped[0][1]})"
            if reading.skipped
            else ""
        )
        raise DataFormatError(f"{source}: no documents{why}")
    return reading.documents


def _folder(root: Path, progress: bool = False) -> Reading:
    from tqdm.auto import tqdm

    reading = Reading()
    found = sorted(root.rglob("*"))
    # A link to a folder is not followed, and one to nothing cannot be: said, as every file skipped.
    files = [p for p in found if p.is_file() or (p.is_symlink() and not p.is_dir() and not p.exists())]
    files += [p for p in found if p.is_symlink() and p.is_dir()]
    for file in tqdm(files, desc="reading", unit="file", disable=None if progress else True, leave=False):
        relative = file.relative_to(root)
        if any(part.startswith(".") for part in relative.parts):
            reading.hidden += 1
            continue
        if not file.is_file():
            why = "a link to a folder, not followed (index that folder too)" if file.is_dir() else (
                "a link to nothing (its target is gone, or links lead in a loop)"
            )  # fmt: skip
            reading.skipped.append((relative.as_posix(), why))
            continue
        try:
            reading.documents.append(read_file(file, relative.as_posix()))
        except Unreadable as err:
            reading.skipped.append((relative.as_posix(), str(err)))
            continue
        reading.read[str(format_of(file))] += 1
    return reading


def _dataset(name: str) -> list[Document]:
    if name == "demo":
        return _folder(DEMO_CORPUS).documents
    family, _, split = name.partition(":")
    split = split or "all"
    if family not in ("squad", "wikiqa") or split not in _SPLITS:
        raise DatasetNotFoundError(
            f"{name}: not a file, a folder, nor a document dataset "
            f"(demo, squad:SPLIT or wikiqa:SPLIT, SPLIT one of {', '.join(_SPLITS)})"
        )
    return squad_documents(split) if family == "squad" else wikiqa_documents(split)
