"""Answer collections and store queries: the inputs of ``sieveqa index`` and ``rank --store``.

Answers are a JSONL file of ``{"id", "text"}`` objects, or every distinct candidate of a dataset
(``wikiqa:test``). A store query is ``{"question", "qid"?, "candidates"?}``, the candidates being
stored answer ids (or objects with an ``id``); without candidates the whole store is searched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sieveqa.data.jsonl import iter_json_lines
from sieveqa.data.registry import LOADERS, load_dataset
from sieveqa.errors import DataFormatError, shorten


@dataclass(frozen=True)
class StoreQuery:
    """A question to rank stored answers for: its candidate ids, or None for the whole store."""

    qid: str
    question: str
    ids: list[str] | None = None


def _answer_id(value: object, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        raise DataFormatError(
            f"{where}: field 'id' must be a non-empty string, got {shorten(repr(value), 60)}"
        )
    return str(value)


def load_answers(source: str) -> list[tuple[str, str]]:
    """``(id, text)`` answers from a JSONL file of ``{"id", "text"}`` objects, or every distinct
    candidate (by id) of a dataset such as ``wikiqa:test``."""
    if source.partition(":")[0] not in LOADERS:
        if not Path(source).is_file():
            raise DataFormatError(f"{source}: no such file (nor a dataset name such as wikiqa:test)")
        answers = []
        first: dict[str, str] = {}
        for where, obj in iter_json_lines(source):
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                raise DataFormatError(f"{where}: expected an object with a string 'text'")
            answer_id = _answer_id(obj.get("id"), where)
            if answer_id in first:
                raise DataFormatError(
                    f"{where}: duplicate answer id {answer_id!r} (first at {first[answer_id]})"
                )
            first[answer_id] = where
            answers.append((answer_id, obj["text"]))
        if not answers:
            raise DataFormatError(f"{source}: no answers in the file")
        return answers
    seen: dict[str, str] = {}
    for ex in load_dataset(source):
        for cand in ex.candidates:
            seen.setdefault(cand.id, cand.text)
    return list(seen.items())


def read_store_queries(path: str | Path) -> list[StoreQuery]:
    """The questions of a ``rank --store`` input file, checked line by line."""
    queries = []
    for where, obj in iter_json_lines(path):
        if not isinstance(obj, dict) or not isinstance(obj.get("question"), str):
            raise DataFormatError(f"{where}: expected an object with a string 'question'")
        if not obj["question"].strip():
            raise DataFormatError(f"{where}: field 'question' is empty")
        raw = obj.get("candidates")
        if raw is not None and not isinstance(raw, list):
            raise DataFormatError(f"{where}: 'candidates' must be a list of answer ids")
        ids = None
        if raw is not None:
            ids = [_answer_id(c.get("id") if isinstance(c, dict) else c, where) for c in raw]
        qid = obj.get("qid", where.rsplit(":", 1)[-1])
        queries.append(StoreQuery(str(qid), obj["question"], ids))
    if not queries:
        raise DataFormatError(f"{path}: no questions")
    return queries
