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


@pytest.mark.parametrize("selector", ["pooled", "slots"])
def test_a_null_selector_reads_each_passage_null_once_its_lowest_window(selector: str) -> None:
    """A windowed passage answers if any window does: its null is the lowest window's, and the
    sentence logits are those the same weights give without the null."""
    torch.manual_seed(0)
    config = EasiConfig(backbone="tiny", max_length=48, stride=8, selector=selector, slots=4, null=True)
    model = EasiModel(config)
    read = model.read(["what topic?", "q"], [SENTS, SENTS[:2]])
    assert read.nulls is not None and len(read.nulls) == 2 and [len(z) for z in read.logits] == [12, 2]
    inputs = model.featurize(["what topic?"], [SENTS])
    with torch.inference_mode():
        rows = [model(**b)[:, -1] for _, b in model.batches(inputs.features, segments=True)]
    assert read.nulls[0] == pytest.approx(min(torch.cat(rows).tolist()), abs=1e-5)
    plain = EasiModel(EasiConfig(**{**vars(config), "null": False}))
    plain.load_state_dict(model.state_dict(), strict=False)
    assert plain.read(["what topic?"], [SENTS]).logits[0] == pytest.approx(read.logits[0], abs=1e-5)
    assert plain.read(["q"], [SENTS[:2]]).nulls is None and not plain.has_null and model.has_null


def test_null_is_easis_alone() -> None:
    from sieveqa.models.peasi import PeasiConfig

    with pytest.raises(ConfigError, match="null is EASI's own option"):
        PeasiConfig(null=True)
