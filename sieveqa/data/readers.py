"""Readers of the public AS2 benchmarks in their original TSV layouts."""

from __future__ import annotations

import csv
import gzip
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import DataFormatError

WIKIQA_COLUMNS = ("QuestionID", "Question", "DocumentID", "DocumentTitle", "SentenceID", "Sentence", "Label")
TRECQA_COLUMNS = ("qid", "question", "answer", "label")

CandidateMaker = Callable[[dict[str, str], int, int], Candidate]


def _open_tsv(path: Path) -> IO[str]:
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file")
    opener = gzip.open if path.suffix == ".gz" else open
    return opener(path, "rt", encoding="utf-8", newline="")


def _rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    with _open_tsv(path) as handle:
        # Sentences hold bare quote characters, so the TSV is read without quoting rules.
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header is None or tuple(header[: len(columns)]) != columns:
            raise DataFormatError(f"{path}:1: expected header {'/'.join(columns)}, got {header!r}")
        for lineno, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise DataFormatError(
                    f"{path}:{lineno}: expected {len(header)} tab-separated fields, got {len(row)}"
                )
            yield lineno, dict(zip(header, row, strict=True))


def _label(value: str, path: Path, lineno: int) -> int:
    if value not in ("0", "1"):
        raise DataFormatError(f"{path}:{lineno}: label must be 0 or 1, got {value!r}")
    return int(value)


def _group(
    path: Path, columns: tuple[str, ...], qid_col: str, question_col: str, make: CandidateMaker
) -> list[RankingExample]:
    """Group consecutive-or-not rows by question id; a qid must keep one question text."""
    examples: dict[str, RankingExample] = {}
    for lineno, row in _rows(path, columns):
        qid = row[qid_col]
        ex = examples.get(qid)
        if ex is None:
            ex = examples[qid] = RankingExample(Question(qid, row[question_col]))
        elif ex.question.text != row[question_col]:
            raise DataFormatError(f"{path}:{lineno}: qid {qid!r} reappears with another question text")
        ex.candidates.append(make(row, _label(row[columns[-1]], path, lineno), len(ex.candidates)))
    return list(examples.values())


def read_wikiqa(path: str | os.PathLike[str]) -> list[RankingExample]:
    """Read a WikiQA TSV (original release): every question with all of its candidate sentences."""

    def make(row: dict[str, str], label: int, _: int) -> Candidate:
        return Candidate(row["SentenceID"], row["Sentence"], label, row["DocumentID"], row["DocumentTitle"])

    return _group(Path(path), WIKIQA_COLUMNS, "QuestionID", "Question", make)


def read_trecqa(path: str | os.PathLike[str]) -> list[RankingExample]:
    """Read a TrecQA TSV (qid, question, answer, label); candidate ids are ``{qid}-{index}``."""

    def make(row: dict[str, str], label: int, index: int) -> Candidate:
        return Candidate(f"{row['qid']}-{index}", row["answer"], label)

    return _group(Path(path), TRECQA_COLUMNS, "qid", "question", make)
