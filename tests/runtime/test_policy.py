"""``load_ranker``: one line to a ranker with its saved policy; one loaded model serves many threads."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from sieveqa.errors import ConfigError
from sieveqa.models.cascade import CascadeTransformer
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.hashing import HashingConfig, HashingModel
from sieveqa.runtime.cascade import CascadePolicy, CascadeRanker
from sieveqa.runtime.policy import load_ranker
from tests.runtime.test_cascade import _examples


def test_load_ranker_applies_the_saved_policy_and_overrides(tiny_cascade, tmp_path: Path) -> None:
    folder = tiny_cascade.save_pretrained(tmp_path / "c")
    CascadePolicy(drop_ratios=(0.5, 0.4, 0.3)).write(folder / "policy.json")
    ranker = load_ranker(folder, precision="fp32")
    assert isinstance(ranker, CascadeRanker) and ranker.drop_ratios == [0.5, 0.4, 0.3]
    assert load_ranker(folder, precision="fp32", drop_ratios=0.2).drop_ratios == [0.2] * 3
    other = tmp_path / "p.json"
    CascadePolicy(thresholds=(1.0, 2.0, 3.0)).write(other)
    assert load_ranker(folder, policy=other).thresholds == [1.0, 2.0, 3.0]
    with pytest.raises(ConfigError, match="a cascade takes drop_ratios or thresholds, not \\['budget'\\]"):
        load_ranker(folder, budget=3)


def test_a_model_without_a_policy_ranks_itself_and_refuses_one(tiny_model, tmp_path: Path) -> None:
    folder = tiny_model.save_pretrained(tmp_path / "m")
    ranker = load_ranker(folder, device="cpu", precision="fp32", batch_size=7)
    assert isinstance(ranker, CrossEncoder) and ranker.batch_size == 7 and ranker.precision == "fp32"
    with pytest.raises(ConfigError, match="takes no runtime policy \\(drop_ratios\\)"):
        load_ranker(folder, drop_ratios=0.3)


def _serial_and_threaded(ranker, examples) -> tuple[list, list]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        threaded = list(pool.map(lambda _: ranker.run(examples), range(8)))
    return ranker.run(examples), threaded


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["cross-encoder", "int8", "cascade", "loaded cascade", "has"])
def test_one_model_gives_identical_results_from_8_threads(
    kind: str, tiny_model, tiny_cascade, tmp_path
) -> None:
    examples = _examples([7, 3, 12, 5])
    ranker = {
        "cross-encoder": lambda: tiny_model,
        # The int8 copy is made lazily, once, by whichever thread comes first.
        "int8": lambda: tiny_model.configure(precision="int8"),
        "cascade": lambda: CascadeRanker(tiny_cascade, 0.3, batch_size=4),
        "loaded cascade": lambda: load_ranker(tiny_cascade.save_pretrained(tmp_path / "c"), drop_ratios=0.3),
        "has": lambda: HashingModel(HashingConfig(backbone="tiny", max_length=32)),
    }[kind]()
    serial, threaded = _serial_and_threaded(ranker, examples)
    for result in threaded:
        assert result.scores == serial.scores and result.orders() == serial.orders()
        assert result.cost.layer_units == serial.cost.layer_units and result.cost.flops == serial.cost.flops
        if isinstance(ranker, CascadeRanker):
            assert result.trace.survivors == serial.trace.survivors


def test_scoring_refuses_a_model_in_training_mode(tiny_model) -> None:
    tiny_model.train()
    with pytest.raises(RuntimeError, match=r"training mode \(dropout on\); call .eval\(\)"):
        tiny_model.score(_examples([2]))
    assert tiny_model.training  # scoring never switches modes behind the caller's back


def test_a_cascade_on_a_cross_encoder_body_starts_from_it(tiny_model) -> None:
    from sieveqa.models.cascade import CascadeConfig

    cascade = CascadeTransformer.start_from(tiny_model, CascadeConfig(exits=[2, 4]))
    assert cascade.exits == [2, 4]
    q, t = ["who?"] * 2, ["a", "b"]
    assert torch.allclose(
        cascade.exit_scores(q, t)[:, -1], torch.tensor(tiny_model.score_pairs(q, t)), atol=1e-6
    )


def test_precision_auto_is_resolved_again_when_the_device_changes(tiny_model, monkeypatch) -> None:
    from sieveqa import device

    monkeypatch.setattr(device, "cpu_info", lambda: ("bf16 cpu", frozenset({"avx512_bf16"})))
    assert tiny_model.configure(precision="auto").precision == "bf16"
    monkeypatch.setattr(device, "cpu_info", lambda: ("avx2 cpu", frozenset({"avx2"})))
    assert tiny_model.configure(device="cpu").precision == "fp32"  # the request, not its old answer
