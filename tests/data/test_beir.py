"""BEIR-format passage sets: reading, the BM25 first stage, and what the metrics count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sieveqa.data.beir import beir_examples, first_stage, read_beir
from sieveqa.data.registry import load_dataset
from sieveqa.errors import DataFormatError, DatasetNotFoundError
from sieveqa.evaluation.metrics import evaluate_orders

CORPUS = {
    "d1": ("Octopus", "The blood of an octopus carries oxygen with hemocyanin, a copper protein."),
    "d2": ("Glacier", "Glaciers carve U-shaped valleys as the ice moves and grinds the rock below."),
    "d3": ("Honey", "Honeybees make honey from nectar, which they evaporate in the hive."),
    "d4": ("Squid", "Squid blood is blue because its hemocyanin binds copper rather than iron."),
}
QUERIES = {"q1": "What protein carries oxygen in octopus blood?", "q2": "How do glaciers form valleys?"}


def write_beir(folder: Path, qrels: dict[str, list[tuple[str, str, int]]]) -> Path:
    (folder / "qrels").mkdir(parents=True)
    lines = [json.dumps({"_id": i, "title": t, "text": x}) for i, (t, x) in CORPUS.items()]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": q, "text": t}) for q, t in QUERIES.items())
    )
    for split, rows in qrels.items():
        body = "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rows)
        (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + body)
    return folder


@pytest.fixture
def beir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    return write_beir(
        tmp_path / "set",
        {"test": [("q1", "d1", 2), ("q1", "d4", 1), ("q2", "d2", 1)], "dev": [("q2", "d2", 1)]},
    )


def test_each_judged_query_gets_bm25s_list_labelled_by_its_qrels(beir: Path) -> None:
    examples = load_dataset(f"beir:{beir}")
    assert [ex.qid for ex in examples] == ["q1", "q2"]
    q1 = examples[0]
    assert q1.candidates[0].id == "d1" and q1.candidates[0].text.startswith("Octopus. The blood")
    assert {c.id: c.label for c in q1.candidates} == {"d1": 2, "d2": 0, "d3": 0, "d4": 1}
    assert q1.judged == {"d1": 2, "d4": 1}
    assert all(c.retrieval_score is not None for c in q1.candidates)
    assert q1.candidates[0].retrieval_score >= q1.candidates[1].retrieval_score
    assert [ex.qid for ex in load_dataset(f"beir:{beir}:dev")] == ["q2"]


def test_a_relevant_document_the_first_stage_missed_still_counts(beir: Path) -> None:
    """BEIR's nDCG@10 and recall@100 count every judged document, retrieved or not."""
    data = read_beir(beir)
    examples = beir_examples(data, k=1)  # q1 keeps d1 only; d4 (relevant) is not a candidate
    report = evaluate_orders(examples, [[0], [0]])
    assert report.per_question["q1"]["recall@100"] == pytest.approx(0.5)
    assert report.per_question["q1"]["ndcg@10"] < 1.0
    assert report.per_question["q2"]["recall@100"] == 1.0 and report.per_question["q2"]["mrr@10"] == 1.0


def test_the_first_stage_is_cached_until_the_corpus_changes(beir: Path) -> None:
    data = read_beir(beir)
    runs = first_stage(data)
    assert runs["q2"][0][0] == "d2" and runs["q2"][0][1] > runs["q2"][1][1]
    cached = next((Path(data.folder).parent / "cache" / "beir-bm25").glob("*.json"))
    cached.write_text(json.dumps({"q1": [["d3", 1.0]], "q2": [["d3", 1.0]]}))  # what a hit returns
    assert first_stage(data)["q2"] == [("d3", 1.0)]
    with (beir / "corpus.jsonl").open("a") as f:
        f.write(json.dumps({"_id": "d5", "title": "Rainbow", "text": "Light refracts in raindrops."}) + "\n")
    assert first_stage(read_beir(beir))["q2"][0][0] == "d2"
    for damage in ('{"q1": [["d1", 1.0]', '{"q1": [["d9", 1.0]], "q2": [["d9", 1.0]]}'):  # cut; foreign ids
        for stale in (Path(data.folder).parent / "cache" / "beir-bm25").glob("*.json"):
            stale.write_text(damage)
        assert first_stage(read_beir(beir))["q2"][0][0] == "d2"  # made anew, not an error


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda f: (f / "qrels" / "test.tsv").unlink(), "qrels/test.tsv: no such file; its splits: dev"),
        (
            lambda f: (f / "corpus.jsonl").write_text('{"_id": "d1", "text": "t"}\n{oops\n'),
            "corpus.jsonl, line 2: invalid JSON",
        ),
        (
            lambda f: (f / "queries.jsonl").write_text('{"text": "no id"}\n'),
            "queries.jsonl, line 1: needs an '_id'",
        ),
        (
            lambda f: (f / "corpus.jsonl").write_bytes(b'{"_id": "d\xff"}\n'),
            "corpus.jsonl, line 1: not UTF-8",
        ),
        (lambda f: (f / "qrels" / "test.tsv").write_bytes(b"q1\td\xff\t1\n"), "test.tsv: not UTF-8"),
        # each of these was read silently: the last copy of an id won, a missing text was ""
        (
            lambda f: (f / "corpus.jsonl").write_text(
                (f / "corpus.jsonl").read_text() + '{"_id": "d1", "text": "another d1"}\n'
            ),
            "corpus.jsonl, line 5: '_id' 'd1' again, another row .first on line 1",
        ),
        (
            lambda f: (f / "queries.jsonl").write_text('{"_id": "q1", "text": "a"}\n{"_id": "q2"}\n'),
            "queries.jsonl, line 2: needs a 'text' string",
        ),
        (
            lambda f: (f / "queries.jsonl").write_text('{"_id": "q1", "text": "  "}\n'),
            "queries.jsonl, line 1: needs a 'text' that is not blank",
        ),
        (
            lambda f: (f / "corpus.jsonl").write_text('{"_id": "d1", "text": ["a", "list"]}\n'),
            "corpus.jsonl, line 1: needs a 'text' string",
        ),
        (lambda f: (f / "corpus.jsonl").write_text(""), "corpus.jsonl: holds no document"),  # a traceback
        (lambda f: (f / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n"), "judges no query"),
        (  # the last score won silently
            lambda f: (f / "qrels" / "test.tsv").write_text("q1\td1\t2\nq1\td1\t0\n"),
            "test.tsv, line 2: query 'q1' and document 'd1' judged again, 0 where line 1 says 2",
        ),
        (
            lambda f: (f / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\tyes\n"),
            "line 2: needs query-id, corpus-id",
        ),
        (  # spaces: the first line was taken for a header, and line 2 named
            lambda f: (f / "qrels" / "test.tsv").write_text("q1 d1 1\nq2 d2 1\n"),
            "test.tsv, line 1: needs query-id, corpus-id and an integer score, tab-separated",
        ),
    ],
)
def test_a_damaged_folder_is_one_error_naming_the_file_and_line(beir: Path, damage, says: str) -> None:
    damage(beir)
    with pytest.raises((DataFormatError, DatasetNotFoundError), match=says.replace("(", r"\(")):
        load_dataset(f"beir:{beir}")


def test_a_row_repeated_as_is_and_a_query_of_another_split_are_no_error(beir: Path) -> None:
    corpus = beir / "corpus.jsonl"
    corpus.write_text(corpus.read_text() + corpus.read_text().splitlines()[0] + "\n")  # d1's row again
    queries = beir / "queries.jsonl"
    queries.write_text(
        queries.read_text() + '\n{"_id": "train-only", "text": " "}\n'
    )  # judged in no split here
    data = read_beir(beir, "test")
    assert len(data.corpus) == 4 and set(data.queries) == {"q1", "q2"}


def test_a_judged_document_not_in_the_corpus_counts_as_never_retrieved(beir: Path, caplog) -> None:
    """It was an error: a BEIR set cut down to a few hundred passages could not be read."""
    (beir / "qrels" / "test.tsv").write_text("q1\td1\t1\nq1\td9\t1\nq1\td1\t1\n")  # d1 twice, alike
    (example,) = load_dataset(f"beir:{beir}")
    assert example.judged == {"d1": 1, "d9": 1} and "d9" not in {c.doc_id for c in example.candidates}
    assert evaluate_orders([example], [range(len(example.candidates))]).mean["recall@100"] == 0.5
    said = [r.getMessage() for r in caplog.records]
    assert any("judges 1 documents not in corpus.jsonl (first 'd9')" in m for m in said)


def test_gzipped_files_are_read(beir: Path) -> None:
    import gzip

    plain = read_beir(beir)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        path = beir / name
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
        path.unlink()
    assert read_beir(beir) == plain
    assert len(load_dataset(f"beir:{beir}")) == 2


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="no such folder"):
        load_dataset(f"beir:{tmp_path / 'nowhere'}")
