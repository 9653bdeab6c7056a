"""Open-domain QA examples: answer spans, the JSONL format and its errors, dataset names."""

from pathlib import Path

import pytest

from sieveqa.data.open_qa import (
    OpenExample,
    RetrievedPassage,
    answer_spans,
    normalize_answer,
    read_open_jsonl,
    write_open_jsonl,
)
from sieveqa.data.registry import load_open_dataset
from sieveqa.errors import DataFormatError, DatasetNotFoundError


def test_answer_spans_find_every_occurrence_of_every_answer() -> None:
    text = "Paris is in France. Paris, not Lyon."
    assert answer_spans(text, ["Paris", " Lyon ", ""]) == [(0, 5), (20, 25), (31, 35)]
    assert answer_spans(text, ["paris"]) == []  # verbatim, as the has-answer label is defined


def test_has_answer_and_first_hit_follow_the_passages() -> None:
    ex = OpenExample("q", "?", ["blue"], [RetrievedPassage("a", "red"), RetrievedPassage("b", "a blue sky")])
    assert ex.has_answer() == [False, True]
    assert ex.first_hit() == 2
    assert OpenExample("q", "?", ["x"], [RetrievedPassage("a", "red")]).first_hit() is None


def test_normalisation_is_squads() -> None:
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("an apple a day") == "apple day"


def test_written_examples_read_back(tmp_path: Path) -> None:
    ex = OpenExample("q1", "Who?", ["Ada"], [RetrievedPassage("p", "Ada wrote it.", "History", 1.5)])
    write_open_jsonl(tmp_path / "x.jsonl.gz", [ex])
    assert read_open_jsonl(tmp_path / "x.jsonl.gz") == [ex]
    assert load_open_dataset(str(tmp_path / "x.jsonl.gz")) == [ex]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"qid": "q", "question": "?", "passages": 3}', "field 'passages' must be a list"),
        ('{"qid": "q", "question": "?", "answers": [1], "passages": []}', "field 'answers'"),
        ('{"qid": "q", "question": "?", "passages": [{"id": "p"}]}', "passages[0]: field 'text'"),
        ('{"qid": "q", "question": "?", "passages": [{"id": "p", "text": "", "score": "x"}]}', "'score'"),
        ('{"qid": "", "question": "?", "passages": []}', "field 'qid'"),
    ],
)
def test_bad_lines_are_named(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"qid": "ok", "question": "?", "passages": []}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(
        DataFormatError, match=rf"bad.jsonl:2: .*{message.replace('[', '.').replace(']', '.')}"
    ):
        read_open_jsonl(path)


def test_unknown_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="no split 'nope'"):
        load_open_dataset("squad-open-mini:nope")
    with pytest.raises(DatasetNotFoundError, match="unknown open-domain dataset"):
        load_open_dataset("wikiqa:test")
    with pytest.raises(DatasetNotFoundError, match="no such file"):
        load_open_dataset(f"jsonl:{tmp_path / 'missing.jsonl'}")
