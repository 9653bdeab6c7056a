"""The multi-task PEASI models: one or two bodies, PR ⊕ EASI, saved and loaded, started from a ranker."""

from pathlib import Path

import pytest
import torch

from sieveqa.errors import ConfigError
from sieveqa.models.easi import EasiConfig, EasiModel
from sieveqa.models.peasi import PeasiConfig, PeasiModel
from sieveqa.models.zoo import load_model

PASSAGES = [
    ["Bees make honey.", "The queen lays eggs."],
    ["Tea is a drink.", "It has caffeine.", "Green tea."],
]


@pytest.mark.parametrize("sharing", ["mtl0", "mtl1", "concat"])
def test_bodies_heads_and_cost(sharing: str, tmp_path: Path) -> None:
    model = PeasiModel(PeasiConfig(backbone="tiny", sharing=sharing, max_length=64))
    assert (model.easi_encoder is None) == (sharing == "mtl0")
    scores, cost = model.score_passages(["what do bees make?"] * 2, PASSAGES)
    # PR reads the pair; PR ⊕ EASI also needs EASI's pass over the same passage.
    assert len(scores) == 2 and cost.sequences == (4 if sharing == "concat" else 2)
    probs, _ = model.select(["q"] * 2, PASSAGES)
    assert [len(p) for p in probs] == [2, 3]
    model.save_pretrained(tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert isinstance(loaded, PeasiModel) and loaded.config.sharing == sharing
    again, _ = loaded.score_passages(["what do bees make?"] * 2, PASSAGES)
    assert torch.allclose(torch.tensor(scores), torch.tensor(again), atol=1e-3)


def test_arch_names_choose_the_sharing() -> None:
    assert PeasiConfig.for_arch("peasi-mtl1").sharing == "mtl1"
    with pytest.raises(ConfigError, match="sharing must be one of"):
        PeasiConfig(sharing="mtl2")


def test_started_from_a_ranker_and_an_easi(tiny_model) -> None:
    model = PeasiModel.start_from(tiny_model, PeasiConfig(sharing="mtl1", max_length=64))
    assert model.easi_encoder is not None
    for a, b in zip(
        model.easi_encoder.state_dict().values(), tiny_model.encoder.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b)
    assert torch.equal(model.pr_head.output.weight, tiny_model.head.output.weight)
    easi = EasiModel(EasiConfig(backbone="tiny", max_length=64))
    model.load_easi(easi)
    assert torch.equal(model.selector[1].weight, easi.head[1].weight)
    with pytest.raises(ConfigError, match="selector 'slots' != 'pooled'"):
        model.load_easi(EasiModel(EasiConfig(backbone="tiny", selector="slots")))
