"""Dataset names resolve to the field's standard question sets (counts from shared/data/README.md)."""

import pytest

from sieveqa.data.registry import load_dataset, load_datasets
from sieveqa.errors import DatasetNotFoundError


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "questions", "candidates"),
    [
        ("wikiqa:test", 243, 2351),
        ("wikiqa:test-raw", 633, 6165),
        ("wikiqa:dev", 126, 1130),
        ("wikiqa:train", 873, 8672),
        ("trecqa:test-clean", 68, 1442),
        ("trecqa:dev-clean", 65, 1117),
        ("trecqa:train-all", 1229, 53417),
        ("trecqa:test", 95, 1517),
    ],
)
def test_standard_sets(real_data, name: str, questions: int, candidates: int) -> None:
    examples = load_dataset(name)
    assert len(examples) == questions
    assert sum(len(e.candidates) for e in examples) == candidates


def test_filters_are_what_the_names_say(real_data) -> None:
    assert all(e.has_positive() for e in load_dataset("wikiqa:test"))
    assert all(e.is_clean() for e in load_dataset("trecqa:test-clean"))
    assert not all(e.is_clean() for e in load_dataset("trecqa:test"))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("wikiqa", "must look like FAMILY:SPLIT"),
        ("nope:test", "unknown dataset family 'nope'"),
        ("wikiqa:validation", "wikiqa has no split 'validation'"),
        ("trecqa:clean", "trecqa has no split 'clean'"),
        ("jsonl:/does/not/exist.jsonl", "no such file"),
        ("wikiqa:dev[:0]", r"\[:N\] takes N >= 1"),
        ("wikiqa:nope[:5]", "wikiqa has no split 'nope'"),
        ("squad-train-passages:test", "squad-train-passages has no split 'test'"),
    ],
)
def test_bad_names(name: str, message: str) -> None:
    with pytest.raises(DatasetNotFoundError, match=message):
        load_dataset(name)


def test_comma_list_concatenates(real_data) -> None:
    both = load_datasets("wikiqa:dev,trecqa:dev-clean")
    assert len(both) == 126 + 65


def test_slice_keeps_the_first_questions(real_data) -> None:
    head = load_dataset("wikiqa:dev[:7]")
    assert [e.qid for e in head] == [e.qid for e in load_dataset("wikiqa:dev")[:7]]


def test_open_datasets_take_slices_too(tmp_path) -> None:
    from sieveqa.data.open_qa import OpenExample, RetrievedPassage, write_open_jsonl
    from sieveqa.data.registry import load_open_dataset

    path = tmp_path / "q.jsonl"
    passage = [RetrievedPassage("p", "Paris is in France.")]
    write_open_jsonl(path, [OpenExample(f"q{i}", f"Question {i}?", ["Paris"], passage) for i in range(6)])
    assert [ex.qid for ex in load_open_dataset(f"{path}[:2]")] == ["q0", "q1"]
    drawn = [ex.qid for ex in load_open_dataset(f"{path}[~3]")]
    assert len(drawn) == 3 and drawn == sorted(drawn) == [ex.qid for ex in load_open_dataset(f"{path}[~3]")]
    with pytest.raises(DatasetNotFoundError, match="N >= 1"):
        load_open_dataset(f"{path}[:0]")
    with pytest.raises(DatasetNotFoundError, match="split is 'open'"):
        load_open_dataset("squad-unanswerable:train")
