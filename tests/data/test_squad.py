"""read_squad on the real SQuAD v1.1 dev file and on small malformed files."""

from __future__ import annotations

import csv
import gzip
import json
import sys
from pathlib import Path

import pytest

from sieveqa.data.squad import SquadParagraph, SquadQuestion, read_squad
from sieveqa.errors import DataFormatError, DatasetNotFoundError


def test_real_file_counts(squad_path: Path) -> None:
    articles = read_squad(squad_path)
    paragraphs = [p for a in articles for p in a.paragraphs]
    questions = [q for p in paragraphs for q in p.questions]
    assert (len(articles), len(paragraphs), len(questions)) == (48, 2067, 10570)
    assert sum(len(q.answers) for q in questions) == 34726
    assert articles[0].title == "Super_Bowl_50"
    first = questions[0]
    assert first == SquadQuestion(
        "56be4db0acb8001400a502ec",
        "Which NFL team represented the AFC at Super Bowl 50?",
        ["Denver Broncos"] * 3,
    )


def test_paragraph_ids_match_the_tsv(squad_path: Path) -> None:
    tsv = squad_path.with_name("dev-v1.1.paragraphs.tsv.gz")
    if not tsv.is_file():
        pytest.skip(f"{tsv} missing")
    csv.field_size_limit(sys.maxsize)
    with gzip.open(tsv, "rt", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    ours = [(a.title, p) for a in read_squad(squad_path) for p in a.paragraphs]
    assert [r["pid"] for r in rows] == [p.pid for _, p in ours]
    assert [r["title"] for r in rows] == [t for t, _ in ours]
    # The TSV flattens the newlines that 28 contexts (Oxygen, Chloroplast) contain.
    assert [r["paragraph"] for r in rows] == [p.context.replace("\n", " ") for _, p in ours]


def _write(path: Path, obj: object) -> Path:
    data = json.dumps(obj).encode("utf-8")
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


TINY = {
    "version": "1.1",
    "data": [
        {
            "title": "Tiny_Art",
            "paragraphs": [
                {"context": "A b.", "qas": []},
                {
                    "context": "Cats purr. Dogs bark.",
                    "qas": [
                        {
                            "id": "q1",
                            "question": "Who purrs?",
                            "answers": [{"answer_start": 0, "text": "Cats"}],
                        }
                    ],
                },
            ],
        }
    ],
}


@pytest.mark.parametrize("name", ["tiny.json", "tiny.json.gz", "tiny-gz-without-suffix.json"])
def test_plain_and_gzipped(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    if "without" in name:
        path.write_bytes(gzip.compress(json.dumps(TINY).encode()))
    else:
        _write(path, TINY)
    [article] = read_squad(path)
    assert article.title == "Tiny_Art" and article.n_questions == 1
    assert article.paragraphs[1] == SquadParagraph(
        "Tiny_Art_1", "Cats purr. Dogs bark.", [SquadQuestion("q1", "Who purrs?", ["Cats"])]
    )


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("data"), "missing field 'data'"),
        (lambda d: d["data"][0].pop("title"), "article 0: missing field 'title'"),
        (
            lambda d: d["data"][0]["paragraphs"][1].pop("context"),
            r"'Tiny_Art'\), paragraph 1: missing field 'context'",
        ),
        (
            lambda d: d["data"][0]["paragraphs"][1]["qas"][0].update(answers="Cats"),
            "'answers' should be a JSON array",
        ),
        (
            lambda d: d["data"][0]["paragraphs"][0]["qas"].append(d["data"][0]["paragraphs"][1]["qas"][0]),
            "duplicate",
        ),
        (lambda d: d["data"].append(d["data"][0]), "duplicate title"),
    ],
)
def test_malformed_input_names_file_and_place(tmp_path: Path, mutate, message: str) -> None:
    broken = json.loads(json.dumps(TINY))
    mutate(broken)
    path = _write(tmp_path / "bad.json", broken)
    with pytest.raises(DataFormatError, match=message) as info:
        read_squad(path)
    assert "bad.json" in str(info.value)


def test_unreadable_and_missing_files(tmp_path: Path) -> None:
    (tmp_path / "junk.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"junk\.json"):
        read_squad(tmp_path / "junk.json")
    with pytest.raises(DatasetNotFoundError):
        read_squad(tmp_path / "absent.json")
