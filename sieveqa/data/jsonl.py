"""The generic JSONL format: one question per line, the format ``sieveqa rank`` reads and writes.

``{"qid": str, "question": str, "candidates": [{"id": str, "text": str, "label": 0|1 (optional),
"passage_id": str (optional), "doc_id": str (optional), "retrieval_score": number (optional: what
the first stage gave it, for ``--fusion``)}]}``; ranked output adds ``score`` and ``rank``.
:func:`read_pairs` also takes ``{"query": str, "text": str}`` lines (unlabelled pairs).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from sieveqa.data.records import Candidate, Question, RankingExample, ScoredCandidate
from sieveqa.errors import DataFormatError, shorten
from sieveqa.io import atomic_open

_OPTIONAL_STR = ("passage_id", "doc_id")


def _open_binary(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")


def require_str(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DataFormatError(
            f"{where}: field {key!r} must be a non-empty string, got {shorten(repr(value), 60)}"
        )
    return value


def parse_example(obj: Any, where: str) -> RankingExample:
    """Validate one decoded JSON object and turn it into a RankingExample."""
    if not isinstance(obj, dict):
        raise DataFormatError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if isinstance(obj.get("qid"), int) and not isinstance(obj.get("qid"), bool):
        obj = {**obj, "qid": str(obj["qid"])}  # as a candidate's id: a number is its digits
    qid = require_str(obj, "qid", where)
    question = require_str(obj, "question", where)
    raw = obj.get("candidates")
    if not isinstance(raw, list):
        raise DataFormatError(f"{where}: field 'candidates' must be a list, got {type(raw).__name__}")
    candidates = []
    seen: set[str] = set()
    for i, cand in enumerate(raw):
        at = f"{where}: candidates[{i}]"
        if not isinstance(cand, dict):
            raise DataFormatError(f"{at}: expected a JSON object, got {type(cand).__name__}")
        cid = cand.get("id")
        if isinstance(cid, int) and not isinstance(cid, bool):
            cid = str(cid)
        if not isinstance(cid, str) or not cid:
            raise DataFormatError(
                f"{at}: field 'id' must be a non-empty string, got {shorten(repr(cid), 60)}"
            )
        if cid in seen:
            raise DataFormatError(f"{at}: duplicate candidate id {cid!r}")
        seen.add(cid)
        text = cand.get("text")
        if not isinstance(text, str):
            raise DataFormatError(f"{at}: field 'text' must be a string, got {shorten(repr(text), 60)}")
        if not text.strip():
            raise DataFormatError(f"{at}: field 'text' is blank: nothing to rank (leave the candidate out)")
        label = cand.get("label")
        if label is not None and (isinstance(label, bool) or label not in (0, 1)):
            raise DataFormatError(f"{at}: field 'label' must be 0 or 1, got {shorten(repr(label), 60)}")
        extra = {}
        for key in _OPTIONAL_STR:
            value = cand.get(key)
            if value is not None and not isinstance(value, str):
                raise DataFormatError(f"{at}: field {key!r} must be a string, got {shorten(repr(value), 60)}")
            extra[key] = value
        first = cand.get("retrieval_score")
        if first is not None and (
            isinstance(first, bool) or not isinstance(first, int | float) or not math.isfinite(first)
        ):
            raise DataFormatError(
                f"{at}: field 'retrieval_score' must be a finite number, got {shorten(repr(first), 60)}"
            )
        candidates.append(
            Candidate(
                id=cid,
                text=text,
                label=label,
                **extra,
                retrieval_score=None if first is None else float(first),
            )
        )
    given = [c.retrieval_score is not None for c in candidates]
    if any(given) and not all(given):
        raise DataFormatError(
            f"{where}: candidates[{given.index(False)}] has no 'retrieval_score' where "
            f"candidates[{given.index(True)}] has one; give every candidate's first-stage score, or none"
        )
    return RankingExample(Question(qid, question), candidates)


_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _check_text(obj: Any, where: str) -> None:
    """Refuse a decoded line holding a lone surrogate (an escape of half a UTF-16 pair)."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as err:
        bad = err.object[err.start : err.end].encode("utf-16", "surrogatepass")[2:]
        code = int.from_bytes(bad[:2], "little")
        raise DataFormatError(f"{where}: a lone surrogate escape \\u{code:04x} is not text") from None


def decode_line(raw: bytes, where: str) -> Any:
    """One JSONL line's object; not UTF-8, not JSON or a lone surrogate escape is a DataFormatError
    naming ``where`` (FILE:LINE)."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataFormatError(
            f"{where}: not UTF-8 text (byte {raw[err.start]:#04x} at column {err.start + 1})"
        ) from None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as err:
        # a line cut short ends in its newline, where the decoder stops: column 1 of a line after it
        column = min(err.pos, len(line.rstrip("\r\n"))) + 1
        raise DataFormatError(f"{where}: invalid JSON ({err.msg} at column {column})") from err
    if _SURROGATE.search(line):  # "\ud800" alone decodes to a str no tokenizer can encode
        _check_text(obj, where)
    return obj


def iter_json_lines(path: str | os.PathLike[str]) -> Iterator[tuple[str, Any]]:
    """Yield ``("FILE:LINE", object)`` for each non-blank line of a JSONL(.gz) file; a missing file or
    a line that is not JSON raises DataFormatError naming it."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file")
    with _open_binary(path) as handle:
        try:
            for lineno, raw in enumerate(handle, start=1):
                if raw.strip():
                    where = f"{path}:{lineno}"
                    yield where, decode_line(raw, where)
        except (OSError, EOFError) as err:  # a corrupt or truncated .gz
            raise DataFormatError(f"{path}: cannot be read ({err})") from err


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[RankingExample]:
    """Yield the examples of a JSONL(.gz) file; a bad line raises DataFormatError with its number."""
    for where, obj in iter_json_lines(path):
        yield parse_example(obj, where)


def read_pairs(path: str | os.PathLike[str]) -> list[RankingExample]:
    """(query, text) pairs, as traffic logs hold them: each line ``{"query": str, "text": str,
    "label": 0|1 (optional)}`` (consecutive lines of one query make one question, ``pairs-N``), or a
    question with its candidates in the format above. What a label-free retrofit learns from; question
    ids must be unique across the file."""
    examples: list[RankingExample] = []
    seen: dict[str, str] = {}
    for where, obj in iter_json_lines(path):
        if isinstance(obj, dict) and "candidates" not in obj and "query" in obj:
            query, text = require_str(obj, "query", where), require_str(obj, "text", where)
            label = obj.get("label")
            if label is not None and (isinstance(label, bool) or label not in (0, 1)):
                raise DataFormatError(
                    f"{where}: field 'label' must be 0 or 1, got {shorten(repr(label), 60)}"
                )
            last = examples[-1] if examples else None
            new = last is None or last.question.text != query or not last.qid.startswith("pairs-")
            if new:
                last = RankingExample(Question(f"pairs-{len(examples)}", query), [])
                examples.append(last)
            assert last is not None
            last.candidates.append(Candidate(id=str(len(last.candidates)), text=text, label=label))
        else:
            new = True
            examples.append(parse_example(obj, where))
        if new:
            qid = examples[-1].qid
            if qid in seen:
                raise DataFormatError(f"{where}: duplicate qid {qid!r} (first at {seen[qid]})")
            seen[qid] = where
    if not examples:
        raise DataFormatError(f"{path}: no pairs in it")
    return examples


def read_jsonl(path: str | os.PathLike[str]) -> list[RankingExample]:
    """Read a whole JSONL(.gz) file; question ids must be unique."""
    examples = []
    seen: dict[str, str] = {}
    for where, obj in iter_json_lines(path):
        ex = parse_example(obj, where)
        if ex.qid in seen:
            raise DataFormatError(f"{where}: duplicate qid {ex.qid!r} (first at {seen[ex.qid]})")
        seen[ex.qid] = where
        examples.append(ex)
    return examples


def candidate_dict(cand: Candidate) -> dict[str, Any]:
    """A candidate as its JSON object, optional fields left out when unset."""
    out: dict[str, Any] = {"id": cand.id, "text": cand.text}
    if cand.label is not None:
        out["label"] = cand.label
    for key in (*_OPTIONAL_STR, "retrieval_score"):
        value = getattr(cand, key)
        if value is not None:
            out[key] = value
    return out


def example_dict(example: RankingExample, ranked: list[ScoredCandidate] | None = None) -> dict[str, Any]:
    """An example as its JSON object; with ``ranked``, candidates in rank order with score and rank."""
    if ranked is None:
        cands = [candidate_dict(c) for c in example.candidates]
    else:
        cands = [{**candidate_dict(s.candidate), "score": round(s.score, 6), "rank": s.rank} for s in ranked]
    return {"qid": example.qid, "question": example.question.text, "candidates": cands}


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[dict[str, Any]]) -> int:
    """Write JSON objects one per line, atomically; ``.gz`` paths are gzipped reproducibly (level 6, as
    the gzip tool: a third of level 9's time for a few percent more bytes)."""
    path = Path(path)
    count = 0
    if path.suffix == ".gz":
        with (
            atomic_open(path, "wb") as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz,
        ):
            for row in rows:
                gz.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
                count += 1
        return count
    with atomic_open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count
