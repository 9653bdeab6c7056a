"""Answer collections and store queries: read from files or datasets, bad lines named."""

import json
from pathlib import Path

import pytest

from sieveqa.data.answers import StoreQuery, load_answers, read_store_queries
from sieveqa.data.jsonl import read_jsonl
from sieveqa.errors import DataFormatError


def test_load_answers_reads_files_and_datasets_and_names_bad_lines(
    example_jsonl: Path, tmp_path: Path
) -> None:
    good = tmp_path / "a.jsonl"
    good.write_text('{"id": "a", "text": "x"}\n\n{"id": 7, "text": "y"}\n')
    assert load_answers(str(good)) == [("a", "x"), ("7", "y")]
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\n{"id": "", "text": "y"}\n')
    with pytest.raises(DataFormatError, match=r"b.jsonl:2: field 'id' must be a non-empty string"):
        load_answers(str(bad))
    with pytest.raises(DataFormatError, match="no such file"):
        load_answers(str(tmp_path / "missing.jsonl"))
    empty = tmp_path / "e.jsonl"
    empty.write_text("\n")
    with pytest.raises(DataFormatError, match="no answers in the file"):
        load_answers(str(empty))
    from_dataset = load_answers(f"jsonl:{example_jsonl}")
    assert len(from_dataset) == len({c.id for ex in read_jsonl(example_jsonl) for c in ex.candidates})


def test_store_queries_take_ids_or_objects_or_nothing(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    rows = [
        {"qid": "x", "question": "who?", "candidates": ["a", {"id": "b"}]},
        {"question": "where?"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert read_store_queries(path) == [StoreQuery("x", "who?", ["a", "b"]), StoreQuery("2", "where?", None)]
    path.write_text(json.dumps({"question": "who?", "candidates": "a"}) + "\n")
    with pytest.raises(DataFormatError, match=r"q\.jsonl:1: 'candidates' must be a list"):
        read_store_queries(path)


def test_an_empty_store_question_is_refused_as_rank_and_answer_refuse_it(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"question": "who?"}) + "\n" + json.dumps({"question": "   "}) + "\n")
    with pytest.raises(DataFormatError, match=r"q\.jsonl:2: field 'question' is empty"):
        read_store_queries(path)


def test_a_repeated_answer_id_is_named_by_its_line(tmp_path: Path) -> None:
    # Issue 30: index build said "answer ids already stored or repeated" with no line.
    path = tmp_path / "a.jsonl"
    path.write_text('{"id": "x", "text": "one"}\n{"id": "y", "text": "two"}\n{"id": "x", "text": "3"}\n')
    message = r"a\.jsonl:3: duplicate answer id 'x' \(first at .*a\.jsonl:1\)"
    with pytest.raises(DataFormatError, match=message):
        load_answers(str(path))


def test_a_store_question_file_without_questions_is_refused(tmp_path) -> None:
    empty = tmp_path / "q.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(DataFormatError, match=r"q\.jsonl: no questions"):
        read_store_queries(empty)
