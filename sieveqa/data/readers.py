"""Readers of the public AS2 benchmarks in their original TSV layouts."""

from __future__ import annotations

import csv
import gzip
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import DataFormatError

WIKIQA_COLUMNS = ("QuestionID", "Question", "DocumentID", "DocumentTitle", "SentenceID", "Sentence", "Label")
TRECQA_COLUMNS = ("qid", "question", "answer", "label")


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


def read_wikiqa(path: str | os.PathLike[str]) -> list[RankingExample]:
    """Read a WikiQA TSV (original release): every question with all of its candidate sentences."""
    path = Path(path)
    examples: dict[str, RankingExample] = {}
    for lineno, row in _rows(path, WIKIQA_COLUMNS):
        qid = row["QuestionID"]
        ex = examples.get(qid)
        if ex is None:
            ex = examples[qid] = RankingExample(Question(qid, row["Question"]))
        ex.candidates.append(
            Candidate(
                id=row["SentenceID"],
                text=row["Sentence"],
                label=_label(row["Label"], path, lineno),
                passage_id=row["DocumentID"],
                doc_id=row["DocumentTitle"],
            )
        )
    return list(examples.values())


def read_trecqa(path: str | os.PathLike[str]) -> list[RankingExample]:
    """Read a TrecQA TSV (qid, question, answer, label); candidate ids are ``{qid}-{index}``."""
    path = Path(path)
    examples: dict[str, RankingExample] = {}
    for lineno, row in _rows(path, TRECQA_COLUMNS):
        qid = row["qid"]
        ex = examples.get(qid)
        if ex is None:
            ex = examples[qid] = RankingExample(Question(qid, row["question"]))
        elif ex.question.text != row["question"]:
            raise DataFormatError(f"{path}:{lineno}: qid {qid!r} reappears with another question text")
        ex.candidates.append(
            Candidate(
                id=f"{qid}-{len(ex.candidates)}", text=row["answer"], label=_label(row["label"], path, lineno)
            )
        )
    return list(examples.values())
