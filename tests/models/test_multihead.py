"""The multi-head student B_b kH_h: shapes, cost per branch, refusals, and a start from a cross-encoder."""

from __future__ import annotations

import pytest
import torch

from sieveqa.batching import collate
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.multihead import MultiHeadConfig, MultiHeadStudent
from sieveqa.models.zoo import load_model

QUESTIONS = ["who wrote hamlet?", "what is the capital of france?", "how tall is everest?"]
TEXTS = ["hamlet was written by shakespeare.", "paris is the capital.", "it is 8849 metres tall."]


def _student(**settings) -> MultiHeadStudent:
    torch.manual_seed(0)
    return MultiHeadStudent(MultiHeadConfig(backbone="tiny", max_length=64, **settings))


def _batch(student: MultiHeadStudent) -> dict[str, torch.Tensor]:
    return collate(student.featurize(QUESTIONS, TEXTS), range(3), student.pad_id)


def test_every_head_gets_a_column_and_its_own_branch_cost() -> None:
    student = _student(heads=3, head_depth=1)
    assert student.config.name == "B3 3H1" and student.encoder.num_layers == 4
    batch = _batch(student)
    cost = Cost()
    with torch.inference_mode():
        logits = student(**batch, cost=cost)
    assert logits.shape == (3, 3)
    assert cost.per_layer == {
        **{("body", layer): 3 for layer in range(3)},
        **{(f"head-{i}", 3): 3 for i in range(3)},
    }
    assert cost.layer_units == 3 * (3 + 3 * 1)
    # The score is the heads' mean (eq. 5).
    scores = torch.tensor(student.score_pairs(QUESTIONS, TEXTS))
    torch.testing.assert_close(scores, logits.mean(dim=1), rtol=0, atol=1e-5)


def test_head_zero_runs_the_backbones_own_top_layers_and_the_others_copies() -> None:
    student = _student(heads=2, head_depth=2)
    assert student.head_stack(0)[0] is student.encoder.layers[2]
    assert student.head_stack(1)[0] is not student.encoder.layers[2]
    batch = _batch(student)
    with torch.no_grad():
        before = student(**batch)
        for p in student.branches[0].parameters():
            p.add_(0.1)
        after = student(**batch)
    torch.testing.assert_close(after[:, 0], before[:, 0], rtol=0, atol=1e-6)
    assert not torch.allclose(after[:, 1], before[:, 1], atol=1e-4)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"heads": 0}, "needs k >= 1 heads"),
        ({"head_depth": 0}, "needs k >= 1 heads"),
        (
            {"body_depth": 3, "head_depth": 2},
            "B3 3H2 does not fit tiny: b \\+ h must be at most its 4 layers",
        ),
        ({"head_depth": 4}, "B0 3H4 does not fit"),
    ],
)
def test_configs_that_do_not_fit_are_refused(settings: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _student(**settings)


def test_weighted_heads_score_as_their_weighted_mean_and_keep_it_when_saved(tmp_path) -> None:
    """A weak teacher's head pulled the student's score with the same weight as the strong one's."""
    student = _student(heads=3, head_depth=1, head_weights=[2.0, 0.0, 1.0])
    with torch.inference_mode():
        logits = student(**_batch(student))
    expected = (2 * logits[:, 0] + logits[:, 2]) / 3
    scores = torch.tensor(student.score_pairs(QUESTIONS, TEXTS))
    torch.testing.assert_close(scores, expected, rtol=0, atol=1e-5)
    saved = load_model(student.save_pretrained(tmp_path / "s"))
    assert saved.config.head_weights == [2.0, 0.0, 1.0]
    assert saved.score_pairs(QUESTIONS, TEXTS) == pytest.approx(scores.tolist(), abs=2e-2)  # fp16


@pytest.mark.parametrize(
    "weights",
    [[1.0, 1.0], [1.0, -1.0, 1.0], [0.0, 0.0, 0.0], [float("inf"), 1.0, 1.0], [float("nan"), 1.0, 1.0]],
)
def test_head_weights_are_one_per_head_finite_not_negative_nor_all_zero(weights: list[float]) -> None:
    with pytest.raises(ConfigError, match=r"--head-weights: one finite weight >= 0 per head \(3\)"):
        _student(heads=3, head_weights=weights)


def test_huge_head_weights_do_not_overflow() -> None:
    """[1e308, 1e308] summed to inf: both weights became 0."""
    config = MultiHeadConfig(backbone="tiny", heads=2, head_weights=[1e308, 1e308])
    assert config.normalised_weights() == [0.5, 0.5]


def test_a_shallower_student_keeps_only_the_layers_it_uses() -> None:
    student = _student(body_depth=1, head_depth=1, heads=2)
    assert student.encoder.num_layers == 2 and student.config.name == "B1 2H1"


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_started_from_a_cross_encoder_every_head_scores_as_it_did(tiny_model, pooling: str) -> None:
    tiny_model.config.pooling = tiny_model.head.pooling = pooling
    with torch.no_grad():
        for p in tiny_model.head.parameters():
            p.normal_()  # a head that is not near zero, so equality means something
    student = MultiHeadStudent.start_from(tiny_model, MultiHeadConfig(heads=3, head_depth=1))
    assert student.config.name == "B3 3H1"
    expected = torch.tensor(tiny_model.score_pairs(QUESTIONS, TEXTS))
    batch = _batch(student)
    with torch.inference_mode():
        logits = student(**batch)
    for i in range(3):
        torch.testing.assert_close(logits[:, i], expected, rtol=0, atol=1e-5)


def test_a_one_head_student_is_saved_as_the_cross_encoder_it_is(tiny_model, tmp_path) -> None:
    student = MultiHeadStudent.start_from(tiny_model, MultiHeadConfig(heads=1, head_depth=1))
    with torch.no_grad():  # trained: no longer the cross-encoder it started from, body nor head
        student.heads[0].output.bias += 0.5
        for p in student.encoder.layers[-1].parameters():
            p.add_(0.1 * torch.randn_like(p))
    saved = load_model(student.save_pretrained(tmp_path / "s"))
    assert isinstance(saved, CrossEncoder)
    expected = student.score_pairs(QUESTIONS, TEXTS)
    assert saved.score_pairs(QUESTIONS, TEXTS) == pytest.approx(expected, abs=2e-3)  # stored in fp16
    assert expected != pytest.approx(tiny_model.score_pairs(QUESTIONS, TEXTS), abs=1e-2)
    with pytest.raises(ConfigError, match="only one makes a cross-encoder"):
        _student(heads=2).as_cross_encoder()
