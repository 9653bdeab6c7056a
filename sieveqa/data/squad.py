"""Reader of the official SQuAD JSON layout (plain or gzipped): v1.1, and v2.0's ``is_impossible``.

Paragraph ids are ``{title}_{index}`` with the 0-based index of the paragraph in its article, the
same ids as the ``pid`` column of ``squad/dev-v1.1.paragraphs.tsv.gz``.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sieveqa.errors import DataFormatError, DatasetNotFoundError
from sieveqa.paths import data_root

__all__ = ["SquadArticle", "SquadParagraph", "SquadQuestion", "default_squad_path", "read_squad"]


@dataclass(frozen=True, slots=True)
class SquadQuestion:
    """A question with the texts of its gold answers (duplicates kept, as in the file); ``impossible``
    when the paragraph does not answer it (SQuAD 2.0; its ``answers`` are then empty)."""

    qid: str
    question: str
    answers: list[str] = field(default_factory=list)
    impossible: bool = False


@dataclass(frozen=True, slots=True)
class SquadParagraph:
    """A paragraph (``context``) and the questions asked about it."""

    pid: str
    context: str
    questions: list[SquadQuestion] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SquadArticle:
    """A Wikipedia article: its title and its paragraphs in file order."""

    title: str
    paragraphs: list[SquadParagraph] = field(default_factory=list)

    @property
    def n_questions(self) -> int:
        return sum(len(p.questions) for p in self.paragraphs)


def default_squad_path() -> Path:
    """Path of the SQuAD v1.1 dev file under :func:`~sieveqa.paths.data_root`."""
    return data_root() / "squad" / "dev-v1.1.json.gz"


def read_squad(path: str | os.PathLike[str]) -> list[SquadArticle]:
    """Read a SQuAD JSON file (``.gz`` or not) into articles; malformed input raises DataFormatError."""
    path = Path(path)
    if not path.is_file():
        raise DatasetNotFoundError(f"{path}: no such SQuAD file")
    try:
        with path.open("rb") as raw:
            gzipped = raw.read(2) == b"\x1f\x8b"
        # Sniff the magic bytes rather than trust the suffix: copies get renamed.
        opener = gzip.open if gzipped else open
        with opener(path, "rt", encoding="utf-8") as handle:
            root = json.load(handle)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFormatError(f"{path}: not readable as SQuAD JSON: {exc}") from exc

    data = _field(root, "data", list, path, "the top level")
    articles: list[SquadArticle] = []
    seen_qids: set[str] = set()
    seen_titles: set[str] = set()
    for a_idx, raw_article in enumerate(data):
        where = f"article {a_idx}"
        _check(raw_article, dict, path, where)
        title = _field(raw_article, "title", str, path, where)
        where = f"article {a_idx} ({title!r})"
        if title in seen_titles:
            raise DataFormatError(f"{path}: {where}: duplicate title (paragraph ids would collide)")
        seen_titles.add(title)
        paragraphs = []
        for p_idx, raw_par in enumerate(_field(raw_article, "paragraphs", list, path, where)):
            p_where = f"{where}, paragraph {p_idx}"
            _check(raw_par, dict, path, p_where)
            context = _field(raw_par, "context", str, path, p_where)
            questions = []
            for q_idx, raw_qa in enumerate(_field(raw_par, "qas", list, path, p_where)):
                q_where = f"{p_where}, question {q_idx}"
                _check(raw_qa, dict, path, q_where)
                qid = _field(raw_qa, "id", str, path, q_where)
                if qid in seen_qids:
                    raise DataFormatError(f"{path}: {q_where}: duplicate question id {qid!r}")
                seen_qids.add(qid)
                text = _field(raw_qa, "question", str, path, q_where)
                answers = []
                for ans_idx, raw_ans in enumerate(_field(raw_qa, "answers", list, path, q_where)):
                    _check(raw_ans, dict, path, f"{q_where}, answer {ans_idx}")
                    answers.append(_field(raw_ans, "text", str, path, f"{q_where}, answer {ans_idx}"))
                impossible = raw_qa.get("is_impossible", False)
                if not isinstance(impossible, bool):
                    raise DataFormatError(f"{path}: {q_where}: field 'is_impossible' should be true or false")
                if impossible and answers:
                    raise DataFormatError(f"{path}: {q_where}: an impossible question with answers")
                questions.append(SquadQuestion(qid, text, answers, impossible))
            paragraphs.append(SquadParagraph(pid=f"{title}_{p_idx}", context=context, questions=questions))
        articles.append(SquadArticle(title=title, paragraphs=paragraphs))
    return articles


def _check(value: Any, kind: type, path: Path, where: str) -> None:
    if not isinstance(value, kind):
        raise DataFormatError(
            f"{path}: {where}: expected a JSON {_json_name(kind)}, got {type(value).__name__}"
        )


def _field(obj: Any, name: str, kind: type, path: Path, where: str) -> Any:
    if not isinstance(obj, dict) or name not in obj:
        raise DataFormatError(f"{path}: {where}: missing field {name!r}")
    value = obj[name]
    if not isinstance(value, kind):
        raise DataFormatError(
            f"{path}: {where}: field {name!r} should be a JSON {_json_name(kind)}, got {type(value).__name__}"
        )
    return value


def _json_name(kind: type) -> str:
    return {dict: "object", list: "array", str: "string"}.get(kind, kind.__name__)
