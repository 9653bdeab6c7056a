"""Loading saved models by name or folder, and refusing the wrong kind in one line."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest

from sieveqa.errors import ConfigError, ModelFormatError
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.easi import EasiModel
from sieveqa.models.reader import ReaderModel
from sieveqa.models.zoo import load_model


@pytest.mark.slow
def test_expect_returns_the_model_or_names_the_option_and_the_kinds(saved_tiny: Path) -> None:
    assert isinstance(load_model(saved_tiny, CrossEncoder), CrossEncoder)
    with pytest.raises(ConfigError, match=r"^--reader .*tiny-model: a cross-encoder model, not a reader$"):
        load_model(saved_tiny, ReaderModel, "--reader", "a reader")
    with pytest.raises(ConfigError, match=r"not an easi model or a reader model$"):
        load_model(saved_tiny, (EasiModel, ReaderModel))
    with pytest.raises(ModelFormatError, match="neither a shipped model"):
        load_model("no-such-model", CrossEncoder)


def test_a_model_with_cached_tokens_still_copies_and_pickles(tiny_model) -> None:
    """The featurizer's cache holds a lock: copies start with an empty one of their own."""
    tiny_model.featurize(["q"], ["a text"])
    assert len(tiny_model.featurizer.cache)
    for twin in (copy.deepcopy(tiny_model), pickle.loads(pickle.dumps(tiny_model))):
        assert not len(twin.featurizer.cache)
        want = tiny_model.featurize(["q"], ["a text"]).input_ids
        assert twin.featurize(["q"], ["a text"]).input_ids == want


def test_a_model_of_the_second_distribution_names_it_when_missing(tmp_path: Path, monkeypatch) -> None:
    """Issue 45: default-v1 and has ship in sieveqa-models (sieveqa's wheel stays under 100 MB)."""
    from sieveqa.errors import ModelFormatError
    from sieveqa.models import zoo

    assert zoo.SHIPPED["has"].is_relative_to(zoo.MODELS_RESOURCES) and zoo.is_shipped(zoo.SHIPPED["has"])
    assert zoo.resolve_model("has") == zoo.SHIPPED["has"]  # installed here (make install)
    gone = tmp_path / "not-installed"
    monkeypatch.setattr(zoo, "MODELS_RESOURCES", gone)
    monkeypatch.setitem(zoo.SHIPPED, "has", gone / "has")
    with pytest.raises(
        ModelFormatError, match=r"^model 'has' ships in the sieveqa-models package, which is not"
    ):
        zoo.resolve_model("has")
