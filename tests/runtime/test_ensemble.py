"""Ensembles: a weighted sum of their members' scores, loaded like a model, refused when malformed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sieveqa.errors import ConfigError
from sieveqa.runtime.ensemble import EnsembleSpec
from sieveqa.runtime.policy import load_ranker
from tests.conftest import two_members
from tests.runtime.test_cascade import _examples


def test_an_ensemble_folder_ranks_by_the_weighted_sum(tiny_model, tmp_path: Path) -> None:
    examples = _examples([3, 4])
    first, second = two_members(tiny_model, tmp_path)
    EnsembleSpec((str(first), str(second)), (0.25, 0.75)).save(tmp_path / "ens")
    a, b = (load_ranker(m, device="cpu", precision="fp32").run(examples) for m in (first, second))
    ensemble = load_ranker(tmp_path / "ens", device="cpu", precision="fp32")
    result = ensemble.run(examples)
    for got, x, y in zip(result.scores, a.scores, b.scores, strict=True):
        assert got == pytest.approx([0.25 * i + 0.75 * j for i, j in zip(x, y, strict=True)], abs=1e-5)
    assert a.scores != b.scores
    assert result.cost.layer_units == a.cost.layer_units + b.cost.layer_units > 0
    with pytest.raises(ConfigError, match="is an ensemble, which takes no runtime policy"):
        load_ranker(tmp_path / "ens", drop_ratios=0.3)


@pytest.mark.parametrize(
    ("members", "weights", "message"),
    [
        (("a",), (1.0,), "at least 2 members"),
        (("a", "b"), (1.0,), "1 weights for 2 ensemble members"),
        (("a", "b"), (1.0, -0.5), "must be >= 0"),
        (("a", "b"), (0.0, 0.0), "not all 0"),
        (("a", "a"), (1.0, 1.0), "lists each member once"),
    ],
)
def test_bad_specs_are_refused(members, weights, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        EnsembleSpec(members, weights)


def test_a_malformed_file_is_refused_naming_it_and_the_field(tmp_path: Path) -> None:
    (tmp_path / "ensemble.json").write_text(
        json.dumps({"format": "sieveqa-ensemble/1", "members": ["default", "default"], "weights": "equal"})
    )
    with pytest.raises(ConfigError, match=r"ensemble\.json: field 'weights' must be a list of numbers"):
        EnsembleSpec.load(tmp_path)


def test_members_move_with_the_ensemble_and_unweighted_ones_never_load(tiny_model, tmp_path: Path) -> None:
    examples = _examples([3])
    tiny_model.save_pretrained(tmp_path / "runs" / "a")
    (tmp_path / "runs" / "b").mkdir()  # not a model: it would fail to load if it were loaded
    spec = EnsembleSpec((str(tmp_path / "runs" / "a"), str(tmp_path / "runs" / "b")), (1.0, 0.0))
    spec.save(tmp_path / "runs" / "ens")
    (tmp_path / "runs").rename(tmp_path / "moved")
    ranker = load_ranker(tmp_path / "moved" / "ens", device="cpu", precision="fp32")
    alone = load_ranker(tmp_path / "moved" / "a", device="cpu", precision="fp32")
    assert ranker.run(examples).scores == alone.run(examples).scores
    with pytest.raises(ConfigError, match="holds a model; write the ensemble to a folder of its own"):
        spec.save(tmp_path / "moved" / "a")


def test_a_member_that_fails_to_load_is_named_with_the_ensemble_file(tiny_model, tmp_path: Path) -> None:
    tiny_model.save_pretrained(tmp_path / "a")
    EnsembleSpec((str(tmp_path / "a"), "default"), (0.5, 0.5)).save(tmp_path / "ens")
    (tmp_path / "a" / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(ConfigError, match=r"ens/ensemble\.json: member .*/a: "):
        load_ranker(tmp_path / "ens")
