"""Question files, as people keep them: JSONL (``{"id"?, "question", "answer"? | "answers"?}`` a line),
plain text (one question a line), or CSV / TSV with a ``question`` column (and optional ``id`` and
``answer`` columns; a header is required, so a header line is never asked as a question).

An ``answer`` (a string, or ``answers``: a list of them) says what a right answer holds; present
and blank, it says the documents do not answer the question (what ``calibrate-confidence --index``
fits on). Anything else is refused in one line that names the file, line and field.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sieveqa.data.jsonl import iter_json_lines
from sieveqa.errors import DataFormatError, shorten

__all__ = ["QUESTION_FORMATS", "AskedQuestion", "read_questions"]

QUESTION_FORMATS = (".jsonl", ".txt", ".csv", ".tsv")


@dataclass(frozen=True)
class AskedQuestion:
    """One question of a file: its id, text and, where the file gives them, the strings a right
    answer holds (``()``: the documents do not answer it; None: the file does not say)."""

    id: str
    question: str
    answers: tuple[str, ...] | None = None
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def answerable(self) -> bool | None:
        return None if self.answers is None else bool(self.answers)


def read_questions(path: str | Path) -> list[AskedQuestion]:
    """The questions of a ``.jsonl``, ``.txt``, ``.csv`` or ``.tsv`` file (module docstring)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.is_file():
        what = "a folder, not a question file" if path.is_dir() else "no such file"
        raise DataFormatError(f"{path}: {what}")
    if suffix == ".jsonl":
        out = [_from_json(where, obj, i) for i, (where, obj) in enumerate(iter_json_lines(path), 1)]
    elif suffix == ".txt":
        lines = _text(path).splitlines()
        out = [AskedQuestion(str(i), line.strip()) for i, line in enumerate(lines, 1) if line.strip()]
    elif suffix in (".csv", ".tsv"):
        out = _table(path, "\t" if suffix == ".tsv" else ",")
    else:
        raise DataFormatError(
            f"{path}: not a question file sieveqa reads ({suffix or 'no name ending'}); give "
            f"{', '.join(QUESTION_FORMATS)} (JSONL of {{question, id?, answer?}}, one question a line, "
            "or a table with a 'question' column)"
        )
    if not out:
        raise DataFormatError(f"{path}: no questions")
    seen: dict[str, int] = {}
    for i, asked in enumerate(out):
        if asked.id in seen:
            raise DataFormatError(f"{path}: question id {asked.id!r} is given twice")
        seen[asked.id] = i
    return out


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")  # a BOM (Notepad's, Excel's) is not text
    except UnicodeDecodeError as err:
        raise DataFormatError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise DataFormatError(f"{path}: cannot be read ({err.strerror})") from None


def _from_json(where: str, obj: Any, number: int) -> AskedQuestion:
    if not isinstance(obj, dict):
        raise DataFormatError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DataFormatError(f"{where}: expected an object with a non-empty 'question' string")
    qid = obj.get("id", obj.get("qid", number))
    if isinstance(qid, bool) or not isinstance(qid, str | int) or not str(qid).strip():
        raise DataFormatError(f"{where}: field 'id' must be a string or a number, got {shorten(qid, 40)}")
    extra = {k: v for k, v in obj.items() if k not in ("id", "qid", "question", "answer", "answers")}
    return AskedQuestion(str(qid), question.strip(), _answers(obj, where), extra)


def _answers(row: dict[str, Any], where: str) -> tuple[str, ...] | None:
    if "answers" in row:
        given = row["answers"]
        if given is None:
            return ()
        if not isinstance(given, list) or not all(isinstance(a, str) for a in given):
            raise DataFormatError(f"{where}: field 'answers' must be a list of strings")
        return tuple(a.strip() for a in given if a.strip())
    if "answer" in row:
        given = row["answer"]
        if given is None:
            return ()
        if not isinstance(given, str):
            raise DataFormatError(f"{where}: field 'answer' must be a string, got {shorten(given, 40)}")
        return (given.strip(),) if given.strip() else ()
    return None


def _table(path: Path, delimiter: str) -> list[AskedQuestion]:
    rows = list(csv.reader(_text(path).splitlines(), delimiter=delimiter))
    if not rows:
        return []
    header = [name.strip().lower() for name in rows[0]]
    if "question" not in header:
        raise DataFormatError(
            f"{path}:1: no 'question' column in the header ({', '.join(shorten(h, 30) for h in header)}); "
            "the first line names the columns: question, and optionally id and answer"
        )
    out = []
    for number, row in enumerate(rows[1:], 2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise DataFormatError(f"{path}:{number}: {len(row)} fields, the header has {len(header)}")
        values: dict[str, Any] = dict(zip(header, row, strict=True))
        if "answers" in values:  # several, separated by "|"
            values["answers"] = [a for a in values["answers"].split("|") if a.strip()] or None
        question = values["question"].strip()
        if not question:
            raise DataFormatError(f"{path}:{number}: the question is empty")
        qid = values.get("id", "").strip() or str(number - 1)
        extra = {k: v for k, v in values.items() if k not in ("id", "question", "answer", "answers")}
        out.append(AskedQuestion(qid, question, _answers(values, f"{path}:{number}"), extra))
    return out
