"""EncoderModel's inference copies: bf16 keeps its Linear weights cast once, not on every call."""

from __future__ import annotations

import pytest
import torch

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.models.encoder_model import EncoderModel

EXAMPLES = [
    RankingExample(
        Question("q1", "who wrote hamlet"), [Candidate("a", "shakespeare wrote it"), Candidate("b", "no")]
    ),
    RankingExample(
        Question("q2", "what is water"), [Candidate("c", "h2o is water"), Candidate("d", "a b c d e")]
    ),
]


def _scores(model) -> list[list[float]]:
    return model.run(EXAMPLES).scores


def _autocast_only(model, monkeypatch) -> list[list[float]]:
    """The scores with autocast casting the fp32 weights itself (the copy switched off)."""
    with monkeypatch.context() as m:
        m.setattr(EncoderModel, "_half_linear_copy", lambda self: self)
        return _scores(model)


def test_bf16_scores_with_linear_weights_cast_once_equal_autocasts_to_the_bit(
    tiny_model, monkeypatch
) -> None:
    model = tiny_model.configure(precision="bf16")
    assert _scores(model) == _autocast_only(model, monkeypatch)
    copy = model._half_linear_copy()
    linear = [m for m in copy.modules() if isinstance(m, torch.nn.Linear)]
    assert linear and all(m.weight.dtype == torch.bfloat16 for m in linear)
    embeddings = next(p for n, p in model.named_parameters() if "embeddings" in n)
    assert any(p is embeddings for p in copy.parameters())  # everything else is shared, not copied
    assert all(t.dtype == torch.float32 for t in model.state_dict().values() if t.is_floating_point())
    assert model._half_linear_copy() is copy  # built once


def test_the_copy_follows_a_weight_changed_in_place(tiny_model, monkeypatch) -> None:
    """A training step changes weights in place; a stale copy would score the old model."""
    model = tiny_model.configure(precision="bf16")
    before = _scores(model)
    last = [m for m in model.modules() if isinstance(m, torch.nn.Linear)][-1]
    with torch.no_grad():
        last.weight.mul_(-3.0)
        last.bias.add_(1.0)
    after = _scores(model)
    assert after != before
    assert after == _autocast_only(model, monkeypatch)


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_other_precisions_make_no_half_copy(tiny_model, precision) -> None:
    model = tiny_model.configure(precision=precision)
    _scores(model)
    assert "_half" not in vars(model)


def test_a_model_built_in_inference_mode_scores_in_bf16(monkeypatch) -> None:
    """Inference tensors have no version counter: reading it raised on every bf16 call."""
    from sieveqa.models.cross_encoder import CrossEncoder, CrossEncoderConfig

    with torch.inference_mode():
        model = CrossEncoder(CrossEncoderConfig(backbone="tiny", max_length=64)).configure(precision="bf16")
    before = _scores(model)
    assert before == _autocast_only(model, monkeypatch)
    # Changed in place inside inference mode: the copy scored with the old Linear weights and the new
    # others (issue 42), since an inference tensor has no version to say it changed.
    with torch.inference_mode():
        for p in model.parameters():
            p.mul_(1.5)
    after = _scores(model)
    assert after != before and after == _autocast_only(model, monkeypatch)


def test_the_copy_follows_a_replaced_tensor_and_a_training_step(tiny_model, monkeypatch) -> None:
    """A Parameter replaced outside a Linear, or written through .data in training, left it stale."""
    model = tiny_model.configure(precision="bf16")
    before = _scores(model)
    embeddings = model.encoder.backbone.embeddings.word_embeddings
    embeddings.weight = torch.nn.Parameter(embeddings.weight.detach() * 3.0)
    replaced = _scores(model)
    assert replaced != before and replaced == _autocast_only(model, monkeypatch)
    model.train()
    last = [m for m in model.modules() if isinstance(m, torch.nn.Linear)][-1]
    last.weight.data.mul_(-2.0)  # what some training loops do: no version bump
    model.eval()
    stepped = _scores(model)
    assert stepped != replaced and stepped == _autocast_only(model, monkeypatch)
