"""Documents to index: a JSONL file of ``{"id", "title"?, "text"}``, a folder of .txt/.md files, or a
dataset name: ``demo`` (eight short articles written for sieveqa's examples),
``squad:{train,dev,test,all}`` (the SQuAD v1.1 dev paragraphs of a SQuAD-AS2 article split, one
document per paragraph) or ``wikiqa:{train,dev,test,all}`` (WikiQA's documents, their sentences in
document order).

Everything is checked before indexing starts: an empty corpus, a record without id or text, a
duplicate id or a file that is not UTF-8 raises DataFormatError naming the file and line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sieveqa.data.jsonl import iter_json_lines
from sieveqa.data.readers import read_wikiqa
from sieveqa.data.sentences import sentence_spans, split_sentences
from sieveqa.data.squad import SquadParagraph, default_squad_path, read_squad
from sieveqa.errors import DataFormatError, DatasetNotFoundError, shorten
from sieveqa.paths import data_root

__all__ = ["DOCUMENT_SUFFIXES", "Document", "read_documents", "squad_document", "wikiqa_documents"]

DOCUMENT_SUFFIXES = (".txt", ".md")
_SPLITS = ("train", "dev", "test", "all")


@dataclass(frozen=True, slots=True)
class Document:
    """A document: its id, title and text; ``sentences``, when given, are verbatim pieces of
    ``text`` in order (a dataset's own sentence split), otherwise the text is split with pysbd."""

    id: str
    text: str
    title: str = ""
    sentences: tuple[str, ...] | None = None


def read_documents(source: str | Path) -> list[Document]:
    """The documents of a JSONL file, a folder, or a dataset name (see the module docstring)."""
    path = Path(source).expanduser()
    if path.is_dir():
        docs = list(_folder(path))
        where = f"{path}: no {' or '.join(DOCUMENT_SUFFIXES)} files"
    elif path.is_file():
        docs = list(_jsonl(path))
        where = f"{path}: no documents"
    else:
        docs = _dataset(str(source))
        where = f"{source}: no documents"
    if not docs:
        raise DataFormatError(where)
    return docs


def _folder(root: Path) -> Iterator[Document]:
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES)
    for file in files:
        raw = file.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            line = raw[: err.start].count(b"\n") + 1
            raise DataFormatError(f"{file}:{line}: not UTF-8 text (byte {raw[err.start]:#04x})") from None
        if not text.strip():
            raise DataFormatError(f"{file}: the document has no text")
        title, body = _title(file, text)
        yield Document(file.relative_to(root).as_posix(), body, title)


def _title(file: Path, text: str) -> tuple[str, str]:
    """A Markdown file's first ``# heading`` (taken out of its text, so it is not read as a
    sentence), else the file name as words; and the text."""
    if file.suffix.lower() == ".md":
        lines = text.splitlines(keepends=True)
        for i, line in enumerate(lines):
            if line.startswith("# "):
                body = "".join(lines[:i] + lines[i + 1 :])
                if body.strip():
                    return line[2:].strip(), body
    return file.stem.replace("_", " ").replace("-", " "), text


def _jsonl(path: Path) -> Iterator[Document]:
    seen: dict[str, str] = {}
    for where, obj in iter_json_lines(path):
        if not isinstance(obj, dict):
            raise DataFormatError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        doc_id = obj.get("id")
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if not isinstance(doc_id, str) or not doc_id.strip():
            raise DataFormatError(
                f"{where}: field 'id' must be a non-empty string, got {shorten(doc_id, 40)}"
            )
        text = obj.get("text")
        if not isinstance(text, str) or not text.strip():
            raise DataFormatError(f"{where}: document {doc_id!r} has no text (field 'text')")
        title = obj.get("title", "")
        if title is None:
            title = ""
        if not isinstance(title, str):
            raise DataFormatError(f"{where}: field 'title' must be a string, got {shorten(title, 40)}")
        if doc_id in seen:
            raise DataFormatError(f"{where}: duplicate document id {doc_id!r} (first at {seen[doc_id]})")
        seen[doc_id] = where
        yield Document(doc_id, text, title, _given_sentences(obj, text, where))


def _given_sentences(obj: dict[str, Any], text: str, where: str) -> tuple[str, ...] | None:
    """A document's own ``sentences`` (verbatim pieces of its text, in order), checked here so a
    bad one is named by its line."""
    given = obj.get("sentences")
    if given is None:
        return None
    if not isinstance(given, list) or not given or not all(isinstance(x, str) and x.strip() for x in given):
        raise DataFormatError(f"{where}: field 'sentences' must be a list of non-empty strings")
    try:
        sentence_spans(text, given)
    except ValueError as err:
        raise DataFormatError(f"{where}: field 'sentences': {err}") from None
    return tuple(given)


DEMO_CORPUS = Path(__file__).resolve().parent.parent / "resources" / "demo-corpus"


def _dataset(name: str) -> list[Document]:
    if name == "demo":
        return list(_folder(DEMO_CORPUS))
    family, _, split = name.partition(":")
    split = split or "all"
    if family not in ("squad", "wikiqa") or split not in _SPLITS:
        raise DatasetNotFoundError(
            f"--input {name}: not a file, a folder, nor a document dataset "
            f"(demo, squad:SPLIT or wikiqa:SPLIT, SPLIT one of {', '.join(_SPLITS)})"
        )
    return _squad(split) if family == "squad" else wikiqa_documents(split)


def _squad(split: str) -> list[Document]:
    from sieveqa.data.squad_as2 import split_articles

    articles = read_squad(default_squad_path())
    keep = None if split == "all" else set(split_articles(a.title for a in articles)[split])
    return [
        squad_document(par, article.title)
        for article in articles
        if keep is None or article.title in keep
        for par in article.paragraphs
    ]


def squad_document(paragraph: SquadParagraph, title: str) -> Document:
    """A SQuAD paragraph as a document, with SQuAD-AS2's sentences (pysbd's split alone, unguarded)
    so every dataset built from SQuAD keeps the sentences its published numbers were measured on."""
    sentences = tuple(split_sentences(paragraph.context, guard=False))
    return Document(paragraph.pid, paragraph.context, title.replace("_", " "), sentences)


def wikiqa_documents(split: str) -> list[Document]:
    """WikiQA's documents (``train``, ``dev``, ``test`` or ``all``), their sentences in order."""
    splits = ("train", "dev", "test") if split == "all" else (split,)
    sentences: dict[str, dict[int, str]] = {}
    titles: dict[str, str] = {}
    for name in splits:
        for ex in read_wikiqa(data_root() / "wikiqa" / f"WikiQA-{name}.tsv.gz"):
            for cand in ex.candidates:
                doc = str(cand.passage_id)
                titles[doc] = str(cand.doc_id)
                sentences.setdefault(doc, {})[int(cand.id.rsplit("-", 1)[1])] = cand.text
    out = []
    for doc, by_index in sentences.items():
        ordered = tuple(by_index[i] for i in sorted(by_index))
        out.append(Document(doc, " ".join(ordered), titles[doc], ordered))
    return out
