"""The technique registry: every part resolves, and a new technique is its own files plus one line."""

import json
from pathlib import Path

import pytest

from sieveqa import registry
from sieveqa.errors import ConfigError
from sieveqa.models.cross_encoder import CrossEncoder


def test_every_registered_part_resolves_and_kinds_match() -> None:
    for technique in registry.techniques():
        model = technique.model_class()
        assert model.kind == technique.kind
        assert technique.recipe_class().options_class is not None
        for arch in technique.archs:
            assert registry.for_arch(arch) is technique
            model.config_class.for_arch(arch)
    assert registry.technique("cascade").ranker_class().__name__ == "CascadeRanker"
    assert registry.technique("cross-encoder").ranker_class() is None
    for technique in registry.techniques():  # the classes named apart are the ones the technique reads
        assert technique.config_class() is technique.model_class().config_class, technique.kind
        assert technique.options_class() is technique.recipe_class().options_class, technique.kind
    for method in registry.answer_methods():  # the options named apart are the ones the method reads
        assert method.options_class() is method.method_class().options_class, method.name


def test_unknown_names_and_second_registrations_are_refused() -> None:
    with pytest.raises(
        ConfigError, match="unknown model kind 'tower'; known: cross-encoder, cascade, hashing"
    ):
        registry.technique("tower")
    with pytest.raises(ConfigError, match="--arch must be one of"):
        registry.for_arch("tower")
    with pytest.raises(ValueError, match="registered already"):
        registry.register(registry.technique("cascade"))


class ToyRanker(CrossEncoder):
    """A technique that exists only in this test file."""

    kind = "toy"


def test_a_new_technique_needs_only_its_own_files_and_one_registration(
    monkeypatch: pytest.MonkeyPatch, example_jsonl: Path, tmp_path: Path
) -> None:
    from sieveqa.models.zoo import load_model
    from sieveqa.runtime.policy import load_ranker
    from sieveqa.training.config import TrainConfig
    from sieveqa.training.run import train_model

    monkeypatch.setattr(registry, "_TECHNIQUES", dict(registry._TECHNIQUES))
    registry.register(
        registry.Technique(
            kind="toy",
            model="tests.test_registry:ToyRanker",
            recipe="sieveqa.training.pairs:PointwiseRecipe",
            archs=("toy",),
        )
    )
    data = f"jsonl:{example_jsonl}"
    config = TrainConfig(epochs=1, batch_size=8, progress=False)
    train_model("toy", data, tmp_path / "run", init="tiny", dev=data, config=config)
    saved = json.loads((tmp_path / "run" / "best" / "config.json").read_text())
    assert saved["sieveqa_model"] == "toy"
    assert isinstance(load_model(tmp_path / "run" / "best"), ToyRanker)
    assert isinstance(load_ranker(tmp_path / "run" / "best"), ToyRanker)
