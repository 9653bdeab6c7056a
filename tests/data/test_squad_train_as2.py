"""squad-train-as2 (SQuAD v1.1 train in ASNQ's recipe): split rule on the real articles, labels and
gold paragraphs on a 4-article slice, the QNLI view, the manifest, byte-identical rebuilds."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from sieveqa.data.jsonl import read_jsonl
from sieveqa.data.records import RankingExample
from sieveqa.data.squad import SquadArticle, default_squad_path, read_squad
from sieveqa.data.squad_train_as2 import build_squad_train_as2, gold_paragraph_view, split_train_articles
from sieveqa.errors import DatasetNotFoundError

FILES = ["train.jsonl.gz", "dev-all.jsonl.gz", "dev.jsonl.gz"]
SLICE = {"max_articles": 2, "dev_articles": 1, "train_top_k": 2, "dev_top_k": 3, "dev_size": 30}


@pytest.fixture(scope="module")
def articles(squad_train_path: Path) -> list[SquadArticle]:
    return read_squad(squad_train_path)


@pytest.fixture(scope="module")
def built(squad_train_slice: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("squad-train-as2")
    return out, build_squad_train_as2(out, progress=False, squad_path=squad_train_slice, **SLICE)


@pytest.fixture(scope="module")
def examples(built: tuple[Path, dict]) -> dict[str, list[RankingExample]]:
    return {name: read_jsonl(built[0] / name) for name in FILES}


@pytest.mark.slow
def test_split_rule_on_the_real_articles(articles: list[SquadArticle]) -> None:
    assert (len(articles), sum(a.n_questions for a in articles)) == (442, 87599)
    splits = split_train_articles((a.title for a in articles), 12)
    assert [len(splits[s]) for s in ("train", "dev")] == [430, 12]
    n_questions = {a.title: a.n_questions for a in articles}
    assert [sum(n_questions[t] for t in splits[s]) for s in ("train", "dev")] == [85531, 2068]
    assert splits == split_train_articles(reversed([a.title for a in articles]), 12)
    # SQuAD-AS2's dev and test come from SQuAD dev: no article of this set may be among them.
    assert not {a.title for a in articles} & {a.title for a in read_squad(default_squad_path())}


def test_split_needs_articles_on_both_sides() -> None:
    with pytest.raises(ValueError, match="dev_articles"):
        split_train_articles(["a", "b"], 2)


@pytest.mark.slow
def test_labels_follow_the_asnq_rule_and_gold_is_always_there(
    built: tuple[Path, dict], examples: dict[str, list[RankingExample]], squad_train_slice: Path
) -> None:
    manifest, articles = built[1], read_squad(squad_train_slice)
    gold = {q.qid: (p.pid, q.answers) for a in articles[:4] for p in a.paragraphs for q in p.questions}
    for split, name, top_k in [("train", "train.jsonl.gz", 2), ("dev", "dev-all.jsonl.gz", 3)]:
        titles = set(manifest["splits"][split]["articles"])
        assert len(examples[name]) == sum(a.n_questions for a in articles[:4] if a.title in titles)
        for ex in examples[name]:
            pid, answers = gold[ex.qid]
            pids = list(dict.fromkeys(c.passage_id for c in ex.candidates))
            assert pid in pids and top_k <= len(pids) <= top_k + 1
            assert len(pids) == top_k or pids[-1] == pid  # appended last when BM25 missed it
            for c in ex.candidates:
                assert c.doc_id in titles
                assert c.label == int(c.passage_id == pid and any(a.strip() in c.text for a in answers))


@pytest.mark.slow
def test_qnli_view_keeps_the_gold_paragraph_only(examples: dict[str, list[RankingExample]]) -> None:
    full = examples["dev-all.jsonl.gz"]
    view = gold_paragraph_view(full)
    assert len(view) == sum(ex.has_positive() for ex in full)
    by_qid = {ex.qid: ex for ex in full}
    for ex in view:
        gold = {c.passage_id for c in by_qid[ex.qid].candidates if c.label == 1}
        assert len(gold) == 1 and {c.passage_id for c in ex.candidates} == gold
        assert ex.n_positive == by_qid[ex.qid].n_positive
        assert 0 < len(ex.candidates) < len(by_qid[ex.qid].candidates)


def test_manifest_counts_and_hashes(
    built: tuple[Path, dict], examples: dict[str, list[RankingExample]]
) -> None:
    out, manifest = built
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert manifest["params"]["top_k"] == {"train": 2, "dev": 3}
    for name in FILES:
        info = manifest["files"][name]
        assert info["sha256"] == hashlib.sha256((out / name).read_bytes()).hexdigest()
        assert info["questions"] == len(examples[name])
        assert info["positives"] == sum(e.n_positive for e in examples[name])
    dev = examples["dev.jsonl.gz"]
    assert len(dev) == 30 and all(e.has_positive() for e in dev)


@pytest.mark.slow  # builds the slice twice more
def test_rebuild_is_byte_identical_and_skipped_when_current(
    built: tuple[Path, dict], squad_train_slice: Path, tmp_path: Path
) -> None:
    out, manifest = built
    assert build_squad_train_as2(tmp_path, progress=False, squad_path=squad_train_slice, **SLICE) == manifest
    for name in [*FILES, "manifest.json"]:
        assert (tmp_path / name).read_bytes() == (out / name).read_bytes(), name
    stamp = (tmp_path / "train.jsonl.gz").stat().st_mtime_ns
    build_squad_train_as2(tmp_path, progress=False, squad_path=squad_train_slice, **SLICE)
    assert (tmp_path / "train.jsonl.gz").stat().st_mtime_ns == stamp


def test_dataset_names_read_the_built_files(
    built: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sieveqa.data.squad_train_as2 as module
    from sieveqa.data.registry import load_dataset

    out_dir, manifest = built
    monkeypatch.setattr(module, "ensure_squad_train_as2", lambda: out_dir)
    assert len(load_dataset("squad-train-as2:train")) == manifest["files"]["train.jsonl.gz"]["questions"]
    assert len(load_dataset("squad-train-as2:dev")) == 30
    qnli = load_dataset("squad-train-as2:dev-all-qnli")
    assert all(len({c.passage_id for c in ex.candidates}) == 1 for ex in qnli)
    with pytest.raises(DatasetNotFoundError, match="squad-train-as2 has no split 'test'"):
        load_dataset("squad-train-as2:test")
