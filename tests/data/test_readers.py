from pathlib import Path

import pytest

from sieveqa.data.readers import read_trecqa, read_wikiqa
from sieveqa.errors import DataFormatError

WIKI_HEADER = "QuestionID\tQuestion\tDocumentID\tDocumentTitle\tSentenceID\tSentence\tLabel\n"


def test_wikiqa_groups_candidates_by_question(tmp_path: Path) -> None:
    path = tmp_path / "w.tsv"
    path.write_text(
        WIKI_HEADER
        + 'Q1\twho?\tD1\tT\tD1-0\tA "quoted" answer.\t1\n'
        + "Q1\twho?\tD1\tT\tD1-1\tNot it.\t0\n"
        + "Q2\twhat?\tD2\tU\tD2-0\tNothing.\t0\n",
        encoding="utf-8",
    )
    examples = read_wikiqa(path)
    assert [e.qid for e in examples] == ["Q1", "Q2"]
    first = examples[0]
    assert [c.id for c in first.candidates] == ["D1-0", "D1-1"]
    assert first.candidates[0].text == 'A "quoted" answer.'
    assert first.labels == [1, 0]
    assert first.candidates[0].passage_id == "D1" and first.candidates[0].doc_id == "T"
    assert not examples[1].has_positive()


def test_wikiqa_bad_label_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "w.tsv"
    path.write_text(
        WIKI_HEADER + "Q1\twho?\tD1\tT\tD1-0\tx\t1\nQ1\twho?\tD1\tT\tD1-1\ty\tyes\n", encoding="utf-8"
    )
    with pytest.raises(DataFormatError, match=r"w\.tsv:3: label must be 0 or 1"):
        read_wikiqa(path)


def test_trecqa_wrong_field_count(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_text("qid\tquestion\tanswer\tlabel\n1\tq\ta\t1\n1\tq\tb\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"t\.tsv:3: expected 4 tab-separated fields, got 3"):
        read_trecqa(path)


def test_trecqa_header_checked(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_text("id\tq\ta\tl\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"t\.tsv:1: expected header"):
        read_trecqa(path)


def test_trecqa_ids_and_clean(tmp_path: Path) -> None:
    path = tmp_path / "t.tsv"
    path.write_text("qid\tquestion\tanswer\tlabel\n1\tq\ta\t1\n1\tq\tb\t0\n2\tr\tc\t1\n", encoding="utf-8")
    first, second = read_trecqa(path)
    assert [c.id for c in first.candidates] == ["1-0", "1-1"]
    assert first.is_clean() and not second.is_clean()
