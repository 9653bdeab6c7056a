"""The passage sets made from held data, in BEIR's format (real data: skipped without it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sieveqa.data.beir import read_beir
from sieveqa.data.beir_sets import ensure_beir_set
from sieveqa.data.registry import load_dataset
from sieveqa.errors import DatasetNotFoundError


@pytest.fixture
def cache(real_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path))
    return tmp_path


@pytest.mark.slow
def test_wikiqa_beir_judges_each_question_against_the_document_of_its_right_sentence(cache: Path) -> None:
    folder = ensure_beir_set("wikiqa-beir")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["queries"] == {"dev": 126, "test": 243}  # WikiQA's questions with a right sentence
    test = read_beir(folder, "test")
    for ex in load_dataset("wikiqa:test"):
        (doc,) = test.qrels[ex.qid]  # one document each
        right = next(c for c in ex.candidates if c.label == 1)
        assert right.text in test.corpus[doc][1] and test.corpus[doc][0] == right.doc_id
    examples = load_dataset("wikiqa-beir:dev")
    assert len(examples) == 126 and all(len(ex.candidates) == 100 for ex in examples)


@pytest.mark.slow
def test_a_built_set_of_another_version_is_built_again(cache: Path) -> None:
    folder = ensure_beir_set("wikiqa-beir")
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "version": 0}))
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n")
    ensure_beir_set("wikiqa-beir")
    assert len(read_beir(folder, "dev").qrels) == 126


def test_an_unknown_split_names_the_built_ones(cache: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="wikiqa-beir has no split 'train': use one of dev, test"):
        load_dataset("wikiqa-beir:train")


@pytest.mark.slow
def test_squad_beir_judges_each_question_against_its_own_paragraph(cache: Path) -> None:
    """Builds SQuAD-AS2 first (about a minute)."""
    dev = read_beir(ensure_beir_set("squad-beir"), "dev")
    assert len(dev.corpus) == 2067 and len(dev.qrels) == 300
    assert all(len(judged) == 1 for judged in dev.qrels.values())


def test_every_built_set_has_a_dataset_name() -> None:
    from sieveqa.data.beir_sets import BUILDERS
    from sieveqa.data.registry import LOADERS

    assert set(BUILDERS) <= set(LOADERS)
