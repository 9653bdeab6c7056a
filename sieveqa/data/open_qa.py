"""Open-domain QA examples: a question, its gold answer strings, and the passages retrieved for it.

The JSONL format (one question per line)::

    {"qid": str, "question": str, "answers": [str, ...], "impossible": bool (optional),
     "passages": [{"id": str, "text": str, "title": str (optional), "score": float (optional)}]}

Passages are in retrieval order (rank 1 first). A passage *has an answer* when one of the gold answer
strings occurs in its text verbatim (the adaptive computation paper's label, as in DrQA's distant
supervision); :func:`answer_spans` gives every such occurrence, the reader's training targets.
``impossible`` marks a question the documents do not answer (SQuAD 2.0's, or one made unanswerable:
``sieveqa.data.unanswerable``); its ``answers`` are empty, and abstaining is the right answer to it.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sieveqa.data.jsonl import iter_json_lines, require_str, write_jsonl
from sieveqa.errors import DataFormatError, shorten

__all__ = [
    "OpenExample",
    "RetrievedPassage",
    "answer_spans",
    "normalize_answer",
    "open_example_dict",
    "read_open_jsonl",
    "write_open_jsonl",
]


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles a/an/the, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


@dataclass(frozen=True, slots=True)
class RetrievedPassage:
    """A passage as retrieved for a question: its id, text, document title and retrieval score."""

    id: str
    text: str
    title: str = ""
    score: float | None = None


@dataclass(slots=True)
class OpenExample:
    """A question, its gold answers (empty when unknown or ``impossible``) and its passages in
    retrieval order."""

    qid: str
    question: str
    answers: list[str] = field(default_factory=list)
    passages: list[RetrievedPassage] = field(default_factory=list)
    impossible: bool = False

    def has_answer(self) -> list[bool]:
        """Per passage: a gold answer string occurs in it."""
        return [bool(answer_spans(p.text, self.answers)) for p in self.passages]

    def first_hit(self) -> int | None:
        """1-based rank of the first passage with an answer, None when there is none."""
        return next((r for r, hit in enumerate(self.has_answer(), start=1) if hit), None)


def answer_spans(text: str, answers: Iterable[str]) -> list[tuple[int, int]]:
    """Character spans of every verbatim occurrence of every (stripped, non-empty) answer, sorted."""
    spans: set[tuple[int, int]] = set()
    for answer in {a.strip() for a in answers} - {""}:
        start = text.find(answer)
        while start >= 0:
            spans.add((start, start + len(answer)))
            start = text.find(answer, start + 1)
    return sorted(spans)


def parse_open_example(obj: Any, where: str) -> OpenExample:
    """Validate one decoded JSON object and turn it into an OpenExample."""
    if not isinstance(obj, dict):
        raise DataFormatError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    answers = obj.get("answers", [])
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise DataFormatError(f"{where}: field 'answers' must be a list of strings")
    raw = obj.get("passages")
    if not isinstance(raw, list):
        raise DataFormatError(f"{where}: field 'passages' must be a list, got {type(raw).__name__}")
    passages = []
    for i, p in enumerate(raw):
        at = f"{where}: passages[{i}]"
        if not isinstance(p, dict):
            raise DataFormatError(f"{at}: expected a JSON object, got {type(p).__name__}")
        score = p.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            raise DataFormatError(f"{at}: field 'score' must be a number, got {shorten(repr(score), 60)}")
        text = p.get("text")
        if not isinstance(text, str):
            raise DataFormatError(f"{at}: field 'text' must be a string, got {shorten(repr(text), 60)}")
        title = p.get("title") or ""
        if not isinstance(title, str):
            raise DataFormatError(f"{at}: field 'title' must be a string, got {shorten(repr(title), 60)}")
        passages.append(RetrievedPassage(require_str(p, "id", at), text, title, score))
    impossible = obj.get("impossible", False)
    if not isinstance(impossible, bool):
        raise DataFormatError(f"{where}: field 'impossible' must be true or false")
    if impossible and answers:
        raise DataFormatError(f"{where}: an 'impossible' question has no 'answers'")
    qid, question = require_str(obj, "qid", where), require_str(obj, "question", where)
    return OpenExample(qid, question, answers, passages, impossible)


def read_open_jsonl(path: str | os.PathLike[str]) -> list[OpenExample]:
    """Read a JSONL(.gz) file of open-domain examples; a bad line raises DataFormatError naming it."""
    examples = [parse_open_example(obj, where) for where, obj in iter_json_lines(path)]
    seen: set[str] = set()
    for ex in examples:
        if ex.qid in seen:
            raise DataFormatError(f"{Path(path)}: duplicate qid {ex.qid!r}")
        seen.add(ex.qid)
    return examples


def open_example_dict(example: OpenExample) -> dict[str, Any]:
    """An example as its JSON object (unset titles and scores left out)."""
    passages = []
    for p in example.passages:
        row: dict[str, Any] = {"id": p.id, "text": p.text}
        if p.title:
            row["title"] = p.title
        if p.score is not None:
            row["score"] = round(p.score, 6)
        passages.append(row)
    return {
        "qid": example.qid,
        "question": example.question,
        "answers": example.answers,
        **({"impossible": True} if example.impossible else {}),
        "passages": passages,
    }


def write_open_jsonl(path: str | os.PathLike[str], examples: Sequence[OpenExample]) -> int:
    """Write examples atomically (``.gz`` reproducibly)."""
    return write_jsonl(path, (open_example_dict(ex) for ex in examples))
