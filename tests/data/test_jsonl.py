import json
from pathlib import Path

import pytest

from sieveqa.data.jsonl import example_dict, read_jsonl, write_jsonl
from sieveqa.data.records import Candidate, Question, RankingExample, ScoredCandidate
from sieveqa.errors import DataFormatError


def _example() -> RankingExample:
    return RankingExample(
        Question("q1", "Who wrote Hamlet?"),
        [
            Candidate("a", "Shakespeare wrote it.", 1, "p1", "d1", retrieval_score=12.5),
            Candidate("b", "It is a play.", 0, retrieval_score=3.0),
        ],
    )


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"x{suffix}"
    assert write_jsonl(path, [example_dict(_example())]) == 1
    (back,) = read_jsonl(path)
    assert back.question == _example().question
    assert back.candidates == _example().candidates


def test_gzip_output_is_reproducible(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    write_jsonl(a, [example_dict(_example())])
    write_jsonl(b, [example_dict(_example())])
    assert a.read_bytes() == b.read_bytes()


def test_ranked_output_adds_score_and_rank() -> None:
    ex = _example()
    ranked = [ScoredCandidate(ex.candidates[1], 2.0, 1), ScoredCandidate(ex.candidates[0], -1.0, 2)]
    row = example_dict(ex, ranked)
    assert [(c["id"], c["rank"], c["score"]) for c in row["candidates"]] == [("b", 1, 2.0), ("a", 2, -1.0)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"x\.jsonl:2: invalid JSON"),
        (
            json.dumps({"qid": "q", "question": "?", "candidates": {}}),
            r"x\.jsonl:2: field 'candidates' must be a list",
        ),
        (json.dumps({"qid": "", "question": "?", "candidates": []}), r"x\.jsonl:2: field 'qid'"),
        (
            json.dumps({"qid": "q", "question": "?", "candidates": [{"id": "a", "text": "t", "label": 2}]}),
            r"x\.jsonl:2: candidates\[0\]: field 'label' must be 0 or 1",
        ),
        (
            json.dumps(
                {
                    "qid": "q",
                    "question": "?",
                    "candidates": [{"id": "a", "text": "t"}, {"id": "a", "text": "u"}],
                }
            ),
            r"candidates\[1\]: duplicate candidate id 'a'",
        ),
        (
            json.dumps(
                {
                    "qid": "q",
                    "question": "?",
                    "candidates": [{"id": "a", "text": "t", "retrieval_score": "9"}],
                }
            ),
            r"candidates\[0\]: field 'retrieval_score' must be a finite number, got '9'",
        ),
        (
            '{"qid": "q", "question": "?", "candidates": [{"id": "a", "text": "t", "retrieval_score": NaN}]}',
            r"candidates\[0\]: field 'retrieval_score' must be a finite number, got nan",
        ),
        # these two were ranked silently: a blank text got a score, a partial first stage was ignored
        (
            json.dumps({"qid": "q", "question": "?", "candidates": [{"id": "a", "text": " \n"}]}),
            r"x\.jsonl:2: candidates\[0\]: field 'text' is blank: nothing to rank",
        ),
        (
            json.dumps(
                {
                    "qid": "q",
                    "question": "?",
                    "candidates": [{"id": "a", "text": "t", "retrieval_score": 3}, {"id": "b", "text": "u"}],
                }
            ),
            r"x\.jsonl:2: candidates\[1\] has no 'retrieval_score' where candidates\[0\] has one",
        ),
    ],
)
def test_malformed_line_names_file_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "x.jsonl"
    good = json.dumps({"qid": "ok", "question": "?", "candidates": [{"id": "a", "text": "t"}]})
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=message):
        read_jsonl(path)


def test_a_lone_surrogate_escape_is_named_by_its_line(tmp_path) -> None:
    # Issue 30: "\ud800" decoded into a str the tokenizer and SQLite cannot encode: a traceback
    # after other work (batch ranked 8 of 9 shards first).
    from sieveqa.data.jsonl import iter_json_lines

    path = tmp_path / "s.jsonl"
    path.write_text('{"text": "fine \\ud83d\\ude00"}\n{"text": "bad \\ud800 here"}\n', encoding="utf-8")
    lines = iter_json_lines(path)
    assert next(lines)[1]["text"] == "fine \U0001f600"  # a whole pair is an emoji
    with pytest.raises(DataFormatError, match=r"s\.jsonl:2: a lone surrogate escape \\ud800 is not text"):
        next(lines)


def test_a_line_cut_short_is_named_at_its_own_last_column(tmp_path: Path) -> None:
    # the decoder stopped at the newline and the message said "column 1"
    path = tmp_path / "cut.jsonl"
    path.write_text('{"qid": "q1", "question"\n', encoding="utf-8")
    with pytest.raises(
        DataFormatError, match=r"cut\.jsonl:1: invalid JSON \(Expecting ':' delimiter at column 25\)"
    ):
        read_jsonl(path)


def test_a_numeric_qid_is_its_digits_as_a_candidates_id_is(tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    path.write_text(json.dumps({"qid": 7, "question": "?", "candidates": [{"id": 1, "text": "t"}]}) + "\n")
    [example] = read_jsonl(path)
    assert (example.qid, example.candidates[0].id) == ("7", "1")


def test_a_repeated_qid_is_named_by_its_line(tmp_path: Path) -> None:
    # Issue 30: "duplicate qid" named no line, while batch named it.
    line = '{"qid": "a", "question": "q", "candidates": [{"id": "c", "text": "t"}]}\n'
    path = tmp_path / "x.jsonl"
    path.write_text(line + line.replace('"a"', '"b"') + line, encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"x\.jsonl:3: duplicate qid 'a' \(first at .*x\.jsonl:1\)"):
        read_jsonl(path)


def test_pairs_files_group_a_querys_lines_and_take_the_question_format_too(tmp_path) -> None:
    from sieveqa.data.jsonl import read_pairs
    from sieveqa.data.registry import load_dataset

    path = tmp_path / "traffic.jsonl"
    path.write_text(
        '{"query": "tea?", "text": "Tea is a drink."}\n{"query": "tea?", "text": "Bees make honey."}\n'
        '{"query": "sea?", "text": "The sea is salty."}\n'
        '{"qid": "q", "question": "ice?", "candidates": [{"id": "a", "text": "Ice floats.", "label": 1}]}\n'
    )
    examples = read_pairs(path)
    assert [(e.question.text, [c.text for c in e.candidates]) for e in examples] == [
        ("tea?", ["Tea is a drink.", "Bees make honey."]),
        ("sea?", ["The sea is salty."]),
        ("ice?", ["Ice floats."]),
    ]
    assert [c.label for e in examples for c in e.candidates] == [None, None, None, 1]
    assert [e.qid for e in load_dataset(f"pairs:{path}")] == [e.qid for e in examples]
    path.write_text('{"query": "tea?", "text": ""}\n')
    with pytest.raises(DataFormatError, match=r"traffic.jsonl:1: field 'text' must be a non-empty string"):
        read_pairs(path)
    path.write_text(
        '{"query": "a?", "text": "x", "label": 1}\n{"qid": "pairs-0", "question": "b?", "candidates": []}\n'
    )
    with pytest.raises(DataFormatError, match=r"traffic.jsonl:2: duplicate qid 'pairs-0' \(first at .*:1\)"):
        read_pairs(path)
    path.write_text('{"query": "a?", "text": "x", "label": 1}\n')
    assert read_pairs(path)[0].candidates[0].label == 1  # a label given is kept
