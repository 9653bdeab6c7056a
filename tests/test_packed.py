"""The packed state: rows kept in padded batches equal the per-row state, cost the same, drop cleanly."""

import pytest
import torch

from sieveqa.backbones import load_backbone
from sieveqa.batching import Shapes
from sieveqa.encoder import Cost, SteppableEncoder
from sieveqa.features import Featurizer
from sieveqa.packed import PackedState, head_scores

QUESTIONS = ["who wrote hamlet?", "what is the capital of france?", "why?", "how tall is it?"] * 3
TEXTS = [
    "shakespeare",
    "paris is the capital and largest city of france",
    "because",
    "330 metres tall",
    "william shakespeare wrote it around 1600",
    "lyon",
    "no reason at all, as far as anyone can tell",
    "very",
    "hamlet is a tragedy",
    "the capital is paris",
    "it rained",
    "the tower is 330 metres tall, about the height of an 81-storey building",
]


@pytest.fixture(scope="module")
def tiny():
    backbone = load_backbone("tiny")
    backbone.model.eval()
    return backbone, SteppableEncoder(backbone.model)


def _features(tiny):
    backbone, _ = tiny
    return Featurizer(backbone.tokenizer).pairs(QUESTIONS, TEXTS, max_length=64)


@pytest.mark.parametrize("shapes", [Shapes(), Shapes(buckets=True, limit=64)], ids=["exact", "buckets"])
def test_dropping_and_advancing_equals_the_per_row_state(tiny, shapes: Shapes) -> None:
    backbone, enc = tiny
    features, pad = _features(tiny), backbone.tokenizer.pad_token_id
    packed_cost, row_cost = Cost(), Cost()
    alive = [[*range(12)], [0, 2, 3, 5, 7, 8, 10, 11], [11, 2, 7, 3], [7]]  # any order, as exits keep them
    with torch.inference_mode():
        packed = PackedState.start(enc, features, pad, batch_size=3, cost=packed_cost, shapes=shapes)
        per_row = enc.start(features, pad, batch_size=3, cost=row_cost, shapes=shapes)
        for rows in alive:
            packed.keep(rows)
            packed.advance(enc)
            enc.advance(per_row, rows, batch_size=3, shapes=shapes)
            assert packed.rows == sorted(rows) and len(packed) == len(rows)
            for group in packed.groups:
                assert len(group.rows) <= 3 and group.hidden.shape[:2] == group.mask.shape
                for j, r in enumerate(group.rows):
                    width = features.lengths[r]
                    torch.testing.assert_close(group.hidden[j, :width], per_row.hidden[r], rtol=0, atol=1e-5)
                    assert group.mask[j].sum() == width
    assert packed.depth == 4
    assert packed_cost.layer_units == row_cost.layer_units
    assert packed_cost.sequences == row_cost.sequences == 12


def test_buckets_pad_rows_and_tokens_and_padding_rows_attend_to_one_token(tiny) -> None:
    backbone, enc = tiny
    features = _features(tiny)
    with torch.inference_mode():
        packed = PackedState.start(enc, features, backbone.tokenizer.pad_token_id, 8, shapes=Shapes(True, 64))
        packed.keep([0, 4, 6])  # three rows make a bucket of four
    (group,) = packed.groups
    assert group.hidden.shape[:2] == (4, 16)
    assert group.mask[3].tolist() == [1] + [0] * 15
    assert sorted(group.rows) == [0, 4, 6]


def test_head_scores_follow_the_order_the_rows_are_given_in(tiny) -> None:
    backbone, enc = tiny
    features = _features(tiny)
    with torch.inference_mode():
        packed = PackedState.start(enc, features, backbone.tokenizer.pad_token_id, batch_size=2)
        packed.keep([9, 1, 4])
        first_token = lambda hidden, mask: hidden[:, 0, 0]  # noqa: E731 - a head: one number a row
        scores = head_scores(packed.groups, first_token, [9, 1, 4])
    held = {r: float(g.hidden[j, 0, 0]) for g in packed.groups for j, r in enumerate(g.rows)}
    assert scores.tolist() == pytest.approx([held[9], held[1], held[4]])


def test_rows_not_held_are_an_error_and_dropped_rows_free_their_batches(tiny) -> None:
    backbone, enc = tiny
    with torch.inference_mode():
        packed = PackedState.start(enc, _features(tiny), backbone.tokenizer.pad_token_id, batch_size=4)
        before = [g.hidden for g in packed.groups]
        packed.keep([1, 2])
        assert all(g.hidden is not old for g in packed.groups for old in before)
        assert sum(g.hidden.shape[0] for g in packed.groups) == 2
        with pytest.raises(ValueError, match=r"rows \[3\] are not held"):
            packed.keep([1, 3])


def test_gradients_flow_through_kept_rows(tiny) -> None:
    backbone, enc = tiny
    packed = PackedState.start(enc, _features(tiny), backbone.tokenizer.pad_token_id, batch_size=4)
    packed.advance(enc)
    packed.keep([0, 5, 9])
    packed.advance(enc)
    enc.zero_grad()
    sum(g.hidden[: len(g.rows)].sum() for g in packed.groups).backward()
    assert enc.layers[0].attention.self.query.weight.grad.abs().sum() > 0
