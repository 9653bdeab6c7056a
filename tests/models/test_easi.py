"""EASI: every sentence of a passage scored in one pass, long passages windowed, never cut."""

import copy
from pathlib import Path

import pytest
import torch

from sieveqa.errors import ConfigError
from sieveqa.models.easi import EasiConfig, EasiModel
from sieveqa.models.zoo import load_model

SENTS = [f"Sentence number {i} talks about topic {i}." for i in range(12)]


@pytest.fixture(scope="module")
def _pooled():
    return EasiModel(EasiConfig(backbone="tiny", max_length=48, stride=8))


@pytest.fixture(scope="module")
def _slots():
    return EasiModel(EasiConfig(backbone="tiny", max_length=48, stride=8, selector="slots", slots=4))


@pytest.mark.parametrize("name", ["_pooled", "_slots"])
def test_a_long_passage_is_windowed_and_every_sentence_scored(name, request) -> None:
    model = request.getfixturevalue(name)
    inputs = model.featurize(["what topic?"], [SENTS])
    assert len(inputs.features) > 1 and not any(inputs.features.truncated)
    covered = set()
    for r, segs in enumerate(inputs.features.segment_ids):
        covered |= {inputs.first[r] + s - 1 for s in segs if s > 0}
        if model.config.selector == "slots":
            assert max(segs) <= 4
    assert covered == set(range(12))
    probs, cost = model.select(["what topic?"], [SENTS])
    assert len(probs[0]) == 12 and abs(sum(probs[0]) - 1) < 1e-5
    assert cost.sequences == len(inputs.features) and cost.layer_units == 4 * len(inputs.features)


def test_scores_follow_the_sentence_not_its_batch(_pooled) -> None:
    alone, _ = _pooled.select(["q"], [SENTS[:3]])
    together, _ = _pooled.select(["q", "other question"], [SENTS[:3], SENTS[3:5]])
    assert torch.allclose(torch.tensor(alone[0]), torch.tensor(together[0]), atol=1e-5)


def test_a_model_in_training_mode_refuses_to_score(_pooled) -> None:
    model = copy.deepcopy(_pooled).train()
    with pytest.raises(RuntimeError, match="training mode"):
        model.select(["q"], [SENTS[:2]])


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ConfigError, match="selector must be one of"):
        EasiConfig(selector="cls")
    with pytest.raises(ConfigError, match="slots must be >= 1"):
        EasiConfig(slots=0)
    with pytest.raises(ConfigError, match=r"stride must be in 0\.\.16"):
        EasiConfig(max_length=64, stride=17)


def test_save_and_load_give_the_same_scores(_slots, tmp_path: Path) -> None:
    _slots.save_pretrained(tmp_path / "easi")
    loaded = load_model(tmp_path / "easi")
    assert isinstance(loaded, EasiModel) and loaded.config == _slots.config
    a, _ = _slots.select(["q"], [SENTS[:6]])
    b, _ = loaded.select(["q"], [SENTS[:6]])
    assert torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-3)


def test_starting_from_a_ranker_keeps_its_body(tiny_model) -> None:
    easi = EasiModel.start_from(tiny_model, EasiConfig(max_length=64))
    assert easi.config.backbone == "tiny"
    for (name, a), b in zip(
        easi.encoder.state_dict().items(), tiny_model.encoder.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), name
