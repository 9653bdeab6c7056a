"""The steppable encoder reproduces the backbone and counts cost exactly."""

import pytest
import torch

from sieveqa.backbones import load_backbone
from sieveqa.encoder import SteppableEncoder, layer_flops, masked_mean


@pytest.fixture(scope="module")
def tiny():
    backbone = load_backbone("tiny")
    backbone.model.eval()
    return backbone


def _batch(tokenizer):
    return tokenizer(
        ["who wrote hamlet?", "what is the capital of france, the country in europe?", "why?"],
        ["shakespeare", "paris is the capital and largest city of france", "because"],
        padding=True,
        return_tensors="pt",
    )


@pytest.mark.parametrize("name", ["tiny", pytest.param("minilm-l6", marks=pytest.mark.real)])
def test_stepping_equals_backbone_forward(name: str) -> None:
    backbone = load_backbone(name)
    backbone.model.eval()
    enc = SteppableEncoder(backbone.model)
    batch = _batch(backbone.tokenizer)
    with torch.inference_mode():
        ref = backbone.model(**batch).last_hidden_state
        out = enc(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-5)


def test_subset_rows_match_running_them_alone(tiny) -> None:
    enc = SteppableEncoder(tiny.model)
    batch = _batch(tiny.tokenizer)
    with torch.inference_mode():
        state = enc.step(enc.embed(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]))
        state = state.select(torch.tensor([False, True, False])).trimmed()
        while state.layer < enc.num_layers:
            state = enc.step(state)
        alone = {k: v[1:2] for k, v in batch.items()}
        ref = tiny.model(**alone).last_hidden_state
    assert state.rows.tolist() == [1]
    width = int(alone["attention_mask"].sum())
    torch.testing.assert_close(state.hidden[:, :width], ref[:, :width], rtol=0, atol=1e-5)


def test_cost_counts_layer_units_and_flops(tiny) -> None:
    enc = SteppableEncoder(tiny.model)
    batch = _batch(tiny.tokenizer)
    n, width = batch["input_ids"].shape
    with torch.inference_mode():
        state = enc.embed(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
        state = enc.step(enc.step(state))
        enc.step(state.select(torch.tensor([0])))
    cfg = tiny.model.config
    assert enc.cost.layer_units == 2 * n + 1
    assert enc.cost.per_layer == {0: n, 1: n, 2: 1}
    assert enc.cost.flops == (2 * n + 1) * layer_flops(width, cfg.hidden_size, cfg.intermediate_size)
    assert enc.cost.sequences == n


def test_layer_flops_formula() -> None:
    # BERT-base layer at 128 tokens: 8·n·h² + 4·n²·h + 4·n·h·f with h=768, f=3072.
    assert layer_flops(128, 768, 3072) == 8 * 128 * 768**2 + 4 * 128**2 * 768 + 4 * 128 * 768 * 3072


def test_step_past_last_layer_is_an_error(tiny) -> None:
    enc = SteppableEncoder(tiny.model)
    batch = _batch(tiny.tokenizer)
    state = enc.embed(batch["input_ids"], batch["attention_mask"])
    for _ in range(enc.num_layers):
        state = enc.step(state)
    with pytest.raises(IndexError, match="already after layer 4"):
        enc.step(state)


def test_masked_mean_ignores_padding() -> None:
    hidden = torch.tensor([[[1.0], [3.0], [100.0]]])
    mask = torch.tensor([[1, 1, 0]])
    assert masked_mean(hidden, mask).item() == 2.0
