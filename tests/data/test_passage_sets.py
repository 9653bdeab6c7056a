"""PEASI's passage benchmarks: grouping sentences into passages and the labels passages get."""

from pathlib import Path

import pytest

from sieveqa.data.jsonl import read_jsonl
from sieveqa.data.passage_sets import build_squad_train_passages, group_passages, to_passages, wikiqa_passages
from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.data.registry import load_dataset
from sieveqa.errors import ConfigError


def _example() -> RankingExample:
    cands = [
        Candidate("a", "One.", 0, "p1", "d"),
        Candidate("b", "Two.", 1, "p1", "d"),
        Candidate("c", "Three.", 0, "p2", "d"),
    ]
    return RankingExample(Question("q", "?"), cands)


def test_sentences_group_into_passages_in_order() -> None:
    groups = group_passages(_example())
    assert [(pid, [c.id for c in sents]) for pid, sents in groups] == [("p1", ["a", "b"]), ("p2", ["c"])]
    (passages,) = to_passages([_example()])
    assert [(c.id, c.text, c.label) for c in passages.candidates] == [
        ("p1", "One. Two.", 1),
        ("p2", "Three.", 0),
    ]


def test_wikiqa_documents_become_passages_of_at_most_200_tokens(real_data: Path) -> None:
    examples = wikiqa_passages(load_dataset("wikiqa:dev")[:40], max_tokens=40)
    for ex in examples:
        ids = [int(c.id.rsplit("-", 1)[1]) for c in ex.candidates]
        assert ids == sorted(ids)  # document order
        assert all("#" in c.passage_id for c in ex.candidates)
    assert any(len(group_passages(ex)) > 1 for ex in examples)
    assert (
        load_dataset("wikiqa-passages:dev")[0]
        .candidates[0]
        .id.startswith(load_dataset("wikiqa:dev")[0].candidates[0].passage_id)
    )


@pytest.mark.slow  # on a fresh cache it builds SQuAD-AS2 and squad-passages in full (about a minute)
def test_squad_passages_label_passages_by_their_sentences(real_data: Path) -> None:
    sentences = load_dataset("squad-passages:dev-sentences")
    passages = load_dataset("squad-passages:dev")
    assert len(sentences) == len(passages) == 300
    for sent_ex, pass_ex in zip(sentences[:20], passages[:20], strict=True):
        positive = {c.passage_id for c in sent_ex.candidates if c.label == 1}
        assert {c.id for c in pass_ex.candidates if c.label == 1} == positive
        assert len(pass_ex.candidates) <= 20  # dev keeps only what BM25 retrieved


TRAIN_SLICE = {"max_articles": 2, "dev_articles": 1, "dev_size": 30, "top_k": 2}


@pytest.fixture(scope="module")
def train_passages(squad_train_slice: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("squad-train-passages")
    return out, build_squad_train_passages(out, progress=False, squad_path=squad_train_slice, **TRAIN_SLICE)


@pytest.mark.slow
def test_squad_train_passages_train_has_every_gold_passage_dev_only_retrieval(
    train_passages: tuple[Path, dict],
) -> None:
    out, manifest = train_passages
    train = read_jsonl(out / "train.jsonl.gz")
    dev = read_jsonl(out / "dev.jsonl.gz")
    assert manifest["files"]["train.jsonl.gz"]["questions"] == len(train) > 0
    # train: BM25's top 2 passages, then the correct ones it missed (an answer that no sentence holds
    # whole, cut by the sentence splitter, leaves a question without one)
    assert sum(ex.has_positive() for ex in train) > 0.95 * len(train)
    assert all(len(group_passages(ex)) <= 2 + sum(c.label for c in ex.candidates) for ex in train)
    appended = [group_passages(ex)[-1][1] for ex in train if len(group_passages(ex)) > 2]
    assert appended and all(any(c.label == 1 for c in sents) for sents in appended)
    # dev: squad-train-as2's own dev subset, over what retrieval found (up to 20 passages)
    as2_dev = read_jsonl(out / "squad-train-as2" / "dev.jsonl.gz")
    assert [ex.qid for ex in dev] == [ex.qid for ex in as2_dev]
    assert all(len(group_passages(ex)) <= 20 for ex in dev)
    assert {ex.qid for ex in dev}.isdisjoint(ex.qid for ex in train)
    for ex in train[:50]:  # a passage's sentences are correct only in the gold paragraph
        gold = {c.doc_id for c in ex.candidates if c.label == 1}
        assert len(gold) == 1


@pytest.mark.slow
def test_squad_train_passages_built_and_current_is_not_built_again(
    train_passages: tuple[Path, dict], squad_train_slice: Path
) -> None:
    out, manifest = train_passages
    stamp = (out / "train.jsonl.gz").stat().st_mtime_ns
    assert (
        build_squad_train_passages(out, progress=False, squad_path=squad_train_slice, **TRAIN_SLICE)
        == manifest
    )
    assert (out / "train.jsonl.gz").stat().st_mtime_ns == stamp  # cached: nothing rewritten


@pytest.mark.slow  # a second build of the slice, as squad-open-train's rebuild check
def test_squad_train_passages_rebuild_is_byte_identical(
    train_passages: tuple[Path, dict], squad_train_slice: Path, tmp_path: Path
) -> None:
    _, manifest = train_passages
    again = build_squad_train_passages(
        tmp_path / "again", progress=False, squad_path=squad_train_slice, **TRAIN_SLICE
    )
    assert again["files"] == manifest["files"]


def test_squad_train_passages_refuses_a_zero_depth(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--top-k"):
        build_squad_train_passages(tmp_path, top_k=0)
