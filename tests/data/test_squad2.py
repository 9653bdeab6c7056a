"""SQuAD 2.0's unanswerable questions: read with their flag, kept to the train and dev articles, asked
of one index of all their paragraphs, and given to a reranker as on-topic negatives."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from sieveqa.data.jsonl import read_jsonl
from sieveqa.data.passage_sets import write_passage_set
from sieveqa.data.squad import SquadParagraph, SquadQuestion, read_squad
from sieveqa.errors import DataFormatError


@pytest.fixture(scope="module")
def v2_path(real_data: Path) -> Path:
    from sieveqa.data.squad2 import squad2_path

    if not squad2_path().is_file():
        pytest.skip(f"{squad2_path()} missing")
    return squad2_path()


@pytest.mark.slow
def test_the_v2_articles_are_the_train_and_dev_splits_only(v2_path: Path) -> None:
    from sieveqa.data.squad2 import squad2_articles

    by_split = squad2_articles()
    counts = {
        split: (len(arts), sum(q.impossible for a in arts for p in a.paragraphs for q in p.questions))
        for split, arts in by_split.items()
    }
    assert counts == {"train": (24, 4071), "dev": (4, 717)}
    questions = [q for arts in by_split.values() for a in arts for p in a.paragraphs for q in p.questions]
    assert len(questions) == 9373 and all(bool(q.answers) != q.impossible for q in questions)


def test_is_impossible_is_read_and_checked(tmp_path: Path) -> None:
    def file(qa: dict) -> Path:
        path = tmp_path / "v2.json.gz"
        data = {"data": [{"title": "T", "paragraphs": [{"context": "Cats purr.", "qas": [qa]}]}]}
        path.write_bytes(gzip.compress(json.dumps(data).encode()))
        return path

    (article,) = read_squad(file({"id": "u", "question": "Who barks?", "answers": [], "is_impossible": True}))
    assert article.paragraphs[0].questions == [SquadQuestion("u", "Who barks?", [], True)]
    with pytest.raises(DataFormatError, match="field 'is_impossible' should be true or false"):
        read_squad(file({"id": "u", "question": "Who?", "answers": [], "is_impossible": "yes"}))
    answered = {"id": "u", "question": "Who?", "answers": [{"text": "Cats"}], "is_impossible": True}
    with pytest.raises(DataFormatError, match="an impossible question with answers"):
        read_squad(file(answered))


def test_an_unanswerable_question_gets_its_whole_paragraph_labelled_0(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    cats = SquadParagraph(
        "Cats_0",
        "Cats purr when content. Cats sleep sixteen hours a day.",
        [
            SquadQuestion("a", "How long do cats sleep?", ["sixteen hours"]),
            SquadQuestion("u", "How long do cats hunt?", [], True),
        ],
    )
    dogs = SquadParagraph("Dogs_0", "Dogs bark at night. Dogs hunt in packs.", [])
    pars = {"train": [("Cats", cats), ("Dogs", dogs)]}
    write_passage_set(tmp_path, "t", {}, pars, {"train": ("train", None)}, {"train": 1}, tmp_path, False)
    by_qid = {ex.qid: ex for ex in read_jsonl(tmp_path / "train.jsonl.gz")}
    unanswerable = by_qid["u"]
    assert "Cats_0#0" in {c.passage_id for c in unanswerable.candidates}  # on topic, appended
    assert not unanswerable.has_positive()
    assert [c.label for c in by_qid["a"].candidates if c.passage_id == "Cats_0#0"] == [0, 1]


@pytest.mark.slow
def test_squad2_open_asks_one_index_half_unanswerable(v2_path: Path, tmp_path: Path) -> None:
    from sieveqa.data.corpus import CorpusIndex
    from sieveqa.data.open_qa import read_open_jsonl
    from sieveqa.data.squad2 import INDEX, build_squad2_open

    manifest = build_squad2_open(tmp_path)
    dev = read_open_jsonl(tmp_path / "dev.jsonl.gz")
    assert sum(ex.impossible for ex in dev) == sum(not ex.impossible for ex in dev) == 563
    assert all(len(ex.passages) == 20 and (not ex.answers) == ex.impossible for ex in dev)
    assert manifest["bm25_hits_at_k"]["dev"]["hits@20"] > 0.95  # of the answerable questions
    index = CorpusIndex.open(tmp_path / INDEX)
    assert index.counts["documents"] == 957
    made = read_open_jsonl(tmp_path / "test-made.jsonl.gz")  # SQuAD-AS2's fixed test 500, and 500 made
    assert sum(ex.impossible for ex in made) == sum(not ex.impossible for ex in made) == 500
    assert not any("~other" in ex.qid for ex in made)  # its own paragraph is in this index
    assert build_squad2_open(tmp_path) == manifest  # cached: byte-identical files
