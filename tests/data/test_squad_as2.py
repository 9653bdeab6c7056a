"""SQuAD-AS2 builder on a 3-article slice (K=3): split rule, ASNQ labels, gold paragraph, reproducibility."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from sieveqa.data.jsonl import read_jsonl
from sieveqa.data.records import RankingExample
from sieveqa.data.squad import SquadArticle, read_squad
from sieveqa.data.squad_as2 import build_squad_as2, split_articles

FILES = ["train.jsonl.gz", "dev-all.jsonl.gz", "test-all.jsonl.gz", "dev.jsonl.gz", "test.jsonl.gz"]
SLICE = {"top_k": 3, "max_articles": 3, "dev_size": 20, "test_size": 50, "progress": False}


@pytest.fixture(scope="module")
def articles(squad_path: Path) -> list[SquadArticle]:
    return read_squad(squad_path)


@pytest.fixture(scope="module")
def built(articles: list[SquadArticle], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("squad-as2")
    return out, build_squad_as2(out, **SLICE)


@pytest.fixture(scope="module")
def examples(built: tuple[Path, dict]) -> dict[str, list[RankingExample]]:
    return {name: read_jsonl(built[0] / name) for name in FILES}


@pytest.mark.slow
def test_split_rule_on_the_real_articles(articles: list[SquadArticle]) -> None:
    splits = split_articles(a.title for a in articles)
    assert [len(splits[s]) for s in ("train", "dev", "test")] == [34, 5, 9]
    assert sorted(t for titles in splits.values() for t in titles) == sorted(a.title for a in articles)
    n_questions = {a.title: a.n_questions for a in articles}
    assert [sum(n_questions[t] for t in splits[s]) for s in ("train", "dev", "test")] == [7725, 760, 2085]
    assert splits == split_articles(reversed([a.title for a in articles]))  # order of input is irrelevant


def test_split_rule_on_small_inputs() -> None:
    assert [len(v) for v in split_articles(["a", "b", "c"]).values()] == [1, 1, 1]
    assert [len(v) for v in split_articles([str(i) for i in range(10)]).values()] == [7, 1, 2]
    with pytest.raises(ValueError):
        split_articles(["a", "b"])


@pytest.mark.slow
def test_hand_checked_question(examples: dict[str, list[RankingExample]]) -> None:
    # "Which NFL team represented the AFC at Super Bowl 50?" -- gold paragraph Super_Bowl_50_0, whose
    # sentence 1 names the Denver Broncos; Super_Bowl_50_12:0 also names them but is another paragraph.
    ex = next(e for name in FILES[:3] for e in examples[name] if e.qid == "56be4db0acb8001400a502ec")
    by_id = {c.id: c for c in ex.candidates}
    assert [c.id for c in ex.candidates if c.label == 1] == ["Super_Bowl_50_0:1"]
    assert "Denver Broncos" in by_id["Super_Bowl_50_12:0"].text and by_id["Super_Bowl_50_12:0"].label == 0
    assert [c.id for c in ex.candidates if c.passage_id == "Super_Bowl_50_0"] == [
        f"Super_Bowl_50_0:{i}" for i in range(4)
    ]
    assert all(c.doc_id == "Super_Bowl_50" for c in ex.candidates)


@pytest.mark.slow
def test_labels_follow_the_asnq_rule_and_gold_is_always_there(
    built: tuple[Path, dict], examples: dict[str, list[RankingExample]], articles: list[SquadArticle]
) -> None:
    manifest = built[1]
    gold = {q.qid: (p.pid, q.answers) for a in articles[:3] for p in a.paragraphs for q in p.questions}
    for split, name in [
        ("train", "train.jsonl.gz"),
        ("dev", "dev-all.jsonl.gz"),
        ("test", "test-all.jsonl.gz"),
    ]:
        titles = set(manifest["splits"][split]["articles"])
        for ex in examples[name]:
            pid, answers = gold[ex.qid]
            pids = list(dict.fromkeys(c.passage_id for c in ex.candidates))
            assert pid in pids and 3 <= len(pids) <= 4  # top-3, plus gold when BM25 missed it
            assert len(pids) == 3 or pids[-1] == pid
            for c in ex.candidates:
                assert c.doc_id in titles  # retrieval never leaves the question's split
                assert c.id.startswith(f"{c.passage_id}:")
                assert c.label == int(c.passage_id == pid and any(a.strip() in c.text for a in answers))
            # Paragraphs stay contiguous, sentences in order.
            order = [(pids.index(c.passage_id), int(c.id.rsplit(":", 1)[1])) for c in ex.candidates]
            assert order == sorted(order) and len(set(order)) == len(order)


def test_subsets_and_manifest(built: tuple[Path, dict], examples: dict[str, list[RankingExample]]) -> None:
    out, manifest = built
    for subset, full, size in [
        ("dev.jsonl.gz", "dev-all.jsonl.gz", 20),
        ("test.jsonl.gz", "test-all.jsonl.gz", 50),
    ]:
        sub = examples[subset]
        positive = [e.qid for e in examples[full] if e.has_positive()]
        assert len(sub) == min(size, len(positive)) and all(e.has_positive() for e in sub)
        assert [e.qid for e in sub] == [q for q in positive if q in {e.qid for e in sub}]  # -all order
    assert json.loads((out / "manifest.json").read_text()) == manifest
    for name in FILES:
        info = manifest["files"][name]
        assert info["sha256"] == hashlib.sha256((out / name).read_bytes()).hexdigest()
        assert info["questions"] == len(examples[name])
        assert info["candidates"] == sum(len(e.candidates) for e in examples[name])
        assert info["positives"] == sum(e.n_positive for e in examples[name])


@pytest.mark.slow  # builds the 3-article slice twice more
def test_rebuild_is_byte_identical_and_skipped_when_current(built: tuple[Path, dict], tmp_path: Path) -> None:
    out, manifest = built
    assert build_squad_as2(tmp_path, **SLICE) == manifest
    for name in [*FILES, "manifest.json"]:
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name
    # Up to date: nothing is rewritten.
    stamp = (tmp_path / "train.jsonl.gz").stat().st_mtime_ns
    build_squad_as2(tmp_path, **SLICE)
    assert (tmp_path / "train.jsonl.gz").stat().st_mtime_ns == stamp
    # A damaged file no longer matches its sha256, so the next call rebuilds it.
    (tmp_path / "dev.jsonl.gz").write_bytes(b"broken")
    assert build_squad_as2(tmp_path, **SLICE) == manifest
    assert (tmp_path / "dev.jsonl.gz").read_bytes() == (out / "dev.jsonl.gz").read_bytes()


def test_dataset_names_read_the_built_files(
    built: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sieveqa.data.squad_as2 as squad_as2
    from sieveqa.data.registry import load_dataset

    out_dir, manifest = built
    monkeypatch.setattr(squad_as2, "ensure_squad_as2", lambda: out_dir)
    for split, fname in [
        ("train", "train.jsonl.gz"),
        ("dev", "dev.jsonl.gz"),
        ("test-all", "test-all.jsonl.gz"),
    ]:
        assert len(load_dataset(f"squad-as2:{split}")) == manifest["files"][fname]["questions"]
