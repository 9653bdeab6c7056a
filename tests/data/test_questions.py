from __future__ import annotations

from pathlib import Path

import pytest

from sieveqa.data.questions import read_questions
from sieveqa.errors import DataFormatError


def test_jsonl_with_answers_blank_and_absent(tmp_path: Path) -> None:
    file = tmp_path / "q.jsonl"
    file.write_text(
        '{"id": "a", "question": "Who?", "answer": "Fleming"}\n'
        '{"id": "b", "question": "Why?", "answer": ""}\n'
        '{"question": "When?", "answers": ["1928", "in 1928"], "file": "x.pdf"}\n'
        '{"id": 7, "question": "Where?"}\n',
        encoding="utf-8",
    )
    asked = read_questions(file)
    assert [(q.id, q.question, q.answers) for q in asked] == [
        ("a", "Who?", ("Fleming",)),
        ("b", "Why?", ()),
        ("3", "When?", ("1928", "in 1928")),
        ("7", "Where?", None),
    ]
    assert [q.answerable for q in asked] == [True, False, True, None]
    assert asked[2].fields == {"file": "x.pdf"}


def test_text_one_question_a_line(tmp_path: Path) -> None:
    file = tmp_path / "q.txt"
    file.write_text("\ufeffWhat is tea?\n\n  Who drinks it?  \n", encoding="utf-8")
    assert [(q.id, q.question) for q in read_questions(file)] == [
        ("1", "What is tea?"),
        ("3", "Who drinks it?"),
    ]


@pytest.mark.parametrize(("name", "sep"), [("q.csv", ","), ("q.tsv", "\t")])
def test_tables_read_the_header_and_never_ask_it(tmp_path: Path, name: str, sep: str) -> None:
    file = tmp_path / name
    question = '"Who wrote it, and when?"' if sep == "," else "Who wrote it, and when?"
    lines = [["id", "Question", "answer"], ["q1", question, "Ann"], ["q2", "Is it free?", ""]]
    file.write_text("".join(sep.join(line) + "\n" for line in lines), encoding="utf-8")
    asked = read_questions(file)
    assert [(q.id, q.question, q.answers) for q in asked] == [
        ("q1", "Who wrote it, and when?", ("Ann",)),
        ("q2", "Is it free?", ()),
    ]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("q.csv", "id,text\n1,Who?\n", r"q.csv:1: no 'question' column in the header \(id, text\)"),
        ("q.csv", "question,answer\nWho?\n", r"q.csv:2: 1 fields, the header has 2"),
        ("q.json", '{"question": "Who?"}', r"not a question file sieveqa reads \(\.json\)"),
        ("q.jsonl", '{"question": "Who?", "answer": 3}\n', r"q.jsonl:1: field 'answer' must be a string"),
        ("q.jsonl", '{"id": "a", "question": "x"}\n{"id": "a", "question": "y"}\n', "id 'a' is given twice"),
        ("q.txt", "\n\n", "no questions"),
    ],
)
def test_bad_question_files_are_named(tmp_path: Path, name: str, content: str, message: str) -> None:
    file = tmp_path / name
    file.write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError, match=message):
        read_questions(file)


def test_a_folder_is_not_a_question_file(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="a folder, not a question file"):
        read_questions(tmp_path)
