"""The steppable encoder: the backbone's forward reproduced, rows at their own depths, branches, cost."""

import copy

import pytest
import torch

from sieveqa.backbones import load_backbone
from sieveqa.cost import layer_flops
from sieveqa.encoder import Cost, SteppableEncoder, masked_mean, pool_segments
from sieveqa.features import Featurizer

QUESTIONS = [
    "who wrote hamlet?",
    "what is the capital of france, the country in europe?",
    "why?",
    "how tall?",
]
TEXTS = ["shakespeare", "paris is the capital and largest city of france", "because", "330 metres tall"]


@pytest.fixture(scope="module")
def tiny():
    backbone = load_backbone("tiny")
    backbone.model.eval()
    return backbone


def _batch(tokenizer):
    return tokenizer(QUESTIONS, TEXTS, padding=True, return_tensors="pt")


def _alone(tiny, row: int, layers: int | None = None) -> torch.Tensor:
    """Row ``row`` run by itself through the backbone: its hidden states, no padding at all."""
    alone = tiny.tokenizer([QUESTIONS[row]], [TEXTS[row]], return_tensors="pt")
    encoder = SteppableEncoder(tiny.model)
    return encoder(alone["input_ids"], alone["attention_mask"], alone["token_type_ids"], num_layers=layers)[0]


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


def _state(tiny, enc: SteppableEncoder, cost: Cost | None = None):
    features = Featurizer(tiny.tokenizer).pairs(QUESTIONS, TEXTS, max_length=64)
    return enc.start(features, tiny.tokenizer.pad_token_id, batch_size=64, cost=cost), features


def test_rows_advanced_to_different_depths_match_running_them_alone(tiny) -> None:
    enc = SteppableEncoder(tiny.model)
    with torch.inference_mode():
        state, _ = _state(tiny, enc)
        enc.advance(state, [0, 1, 2, 3])
        enc.advance(state, [1, 3])
        enc.advance(state, [3])
        enc.advance(state, [0, 3])  # rows at depths 1 and 3 advance in one call
        assert state.depth == [2, 2, 1, 4]
        for row in range(4):
            torch.testing.assert_close(
                state.hidden[row], _alone(tiny, row, state.depth[row]), rtol=0, atol=1e-5
            )


def test_advance_groups_by_depth_then_length_and_returns_the_padded_groups(tiny) -> None:
    enc = SteppableEncoder(tiny.model)
    with torch.inference_mode():
        state, features = _state(tiny, enc)
        enc.advance(state, [0, 1])
        groups = enc.advance(state, [0, 1, 2, 3], batch_size=2)
    # Depth 0 first: rows 2 and 3, shortest first; then depth 1: rows 0 and 1, shortest first.
    by_length = (
        sorted([2, 3], key=lambda r: features.lengths[r]),
        sorted([0, 1], key=lambda r: features.lengths[r]),
    )
    assert [g.rows for g in groups] == [*by_length]
    for group in groups:
        width = max(features.lengths[r] for r in group.rows)
        assert group.hidden.shape[:2] == group.mask.shape == (len(group.rows), width)


def test_cost_counts_layer_units_and_flops_per_branch_and_layer(tiny) -> None:
    enc = SteppableEncoder(tiny.model)
    cost = Cost()
    with torch.inference_mode():
        state, features = _state(tiny, enc, cost)
        enc.advance(state, [0, 1, 2, 3], batch_size=64)
        enc.advance(state, [1])
        top = copy.deepcopy(enc.layers[1])  # a head's own copy of layer 1: a branch
        enc.advance(state, [0], layers={1: top}, branch="head-a")
    cfg = tiny.model.config
    width = max(features.lengths)
    assert cost.layer_units == 6 and cost.sequences == 4
    assert cost.per_layer == {("body", 0): 4, ("body", 1): 1, ("head-a", 1): 1}
    expected = 4 * layer_flops(width, cfg.hidden_size, cfg.intermediate_size)
    expected += layer_flops(features.lengths[1], cfg.hidden_size, cfg.intermediate_size)
    expected += layer_flops(features.lengths[0], cfg.hidden_size, cfg.intermediate_size)
    assert cost.flops == expected
    # The copy computes what the layer it copies does.
    torch.testing.assert_close(state.hidden[0], _alone(tiny, 0, 2), rtol=0, atol=1e-5)


def test_a_mapping_of_branch_layers_falls_back_to_the_body_elsewhere(tiny) -> None:
    enc = SteppableEncoder(tiny.model)
    cost = Cost()
    with torch.inference_mode():
        state, _ = _state(tiny, enc, cost)
        enc.advance(state, [0, 1])
        enc.advance(state, [0, 2], layers={1: copy.deepcopy(enc.layers[1])}, branch="head")
    assert cost.per_layer == {("body", 0): 3, ("head", 1): 1}
    assert state.depth == [2, 1, 1, 0]


def test_a_branch_layer_runs_its_own_weights(tiny) -> None:
    enc = SteppableEncoder(tiny.model)
    changed = copy.deepcopy(enc.layers[0])
    with torch.no_grad():
        for p in changed.parameters():
            p.add_(0.5)
    with torch.inference_mode():
        state, _ = _state(tiny, enc)
        enc.advance(state, [0], layers=[changed], branch="other")
        enc.advance(state, [1])
        assert not torch.allclose(state.hidden[0], _alone(tiny, 0, 1), atol=1e-3)
        torch.testing.assert_close(state.hidden[1], _alone(tiny, 1, 1), rtol=0, atol=1e-5)


def test_released_rows_and_rows_past_the_top_are_errors(tiny) -> None:
    enc = SteppableEncoder(tiny.model)
    with torch.inference_mode():
        state, _ = _state(tiny, enc)
        state.release([2])
        with pytest.raises(ValueError, match=r"rows \[2\] were released"):
            enc.advance(state, [1, 2])
        for _ in range(enc.num_layers):
            enc.advance(state, [0])
        with pytest.raises(IndexError, match="already after layer 4"):
            enc.advance(state, [0])


def test_layer_flops_formula() -> None:
    # BERT-base layer at 128 tokens: 8·n·h² + 4·n²·h + 4·n·h·f with h=768, f=3072.
    assert layer_flops(128, 768, 3072) == 8 * 128 * 768**2 + 4 * 128**2 * 768 + 4 * 128 * 768 * 3072


def test_masked_mean_ignores_padding() -> None:
    hidden = torch.tensor([[[1.0], [3.0], [100.0]]])
    mask = torch.tensor([[1, 1, 0]])
    assert masked_mean(hidden, mask).item() == 2.0


def test_pool_segments_means_each_sentence_and_marks_missing_ones() -> None:
    hidden = torch.arange(6, dtype=torch.float).reshape(1, 6, 1)
    segments = torch.tensor([[-1, 0, 1, 1, -1, 3]])  # [CLS] q s1 s1 [SEP] s3; s2 cut off
    pooled, present = pool_segments(hidden, segments, 3)
    assert pooled[0, :, 0].tolist() == [2.5, 0.0, 5.0]
    assert present.tolist() == [[True, False, True]]
