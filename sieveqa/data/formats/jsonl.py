"""Documents given as JSONL: one ``{"id", "title"?, "text", "sentences"?}`` object a line, each checked
(an id, a text, no id twice, given sentences found in the text) and named by its line when wrong."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sieveqa.data.documents import Document
from sieveqa.data.jsonl import iter_json_lines
from sieveqa.data.sentences import sentence_spans
from sieveqa.errors import DataFormatError, shorten

__all__ = ["read_jsonl_documents"]


def read_jsonl_documents(path: Path) -> Iterator[Document]:
    """The documents of a JSONL file, in order."""
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
