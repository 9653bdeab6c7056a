"""The KD loss (MHS eq. 1) against the two-class softmax it stands for."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from sieveqa.training.objectives import Distillation, kd_loss


def _two_class_kl(teacher: torch.Tensor, student: torch.Tensor, tau: float) -> torch.Tensor:
    """KL(p_t ‖ p_s) of softmax([0, z] / τ), computed the long way."""
    t = torch.stack([torch.zeros_like(teacher), teacher], dim=-1) / tau
    s = torch.stack([torch.zeros_like(student), student], dim=-1) / tau
    return F.kl_div(F.log_softmax(s, -1), F.log_softmax(t, -1), log_target=True, reduction="none").sum(-1)


@pytest.mark.parametrize(("alpha", "tau"), [(0.0, 1.0), (0.1, 3.0), (0.5, 5.0), (0.9, 1.0)])
def test_kd_loss_is_hard_ce_plus_scaled_two_class_kl(alpha: float, tau: float) -> None:
    gen = torch.Generator().manual_seed(0)
    student, teacher = torch.randn(50, generator=gen) * 3, torch.randn(50, generator=gen) * 3
    labels = (torch.rand(50, generator=gen) > 0.5).float()
    expected = alpha * F.binary_cross_entropy_with_logits(student, labels, reduction="none") + (
        1 - alpha
    ) * tau**2 * _two_class_kl(teacher, student, tau)
    torch.testing.assert_close(kd_loss(student, teacher, labels, alpha, tau), expected, atol=1e-5, rtol=1e-5)


def test_soft_loss_vanishes_when_the_student_matches_its_teacher() -> None:
    z = torch.tensor([-4.0, 0.0, 2.5])
    assert kd_loss(z, z, torch.zeros(3), 0.0, 3.0).abs().max() < 1e-6
    assert (kd_loss(z + 1, z, torch.zeros(3), 0.0, 3.0) > 0).all()


class _Heads(nn.Module):
    """A stand-in student: fixed per-head logits, whatever the inputs."""

    def __init__(self, logits: torch.Tensor) -> None:
        super().__init__()
        self.logits = nn.Parameter(logits)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.logits


def test_each_head_learns_from_its_own_teacher_column() -> None:
    teacher = torch.tensor([[3.0, -3.0], [-2.0, 2.0]])
    model = _Heads(torch.zeros(2, 2))
    loss_fn = Distillation(alpha=0.0, tau=1.0)
    batch = {"input_ids": torch.zeros(2, 1), "labels": torch.tensor([1.0, 0.0]), "teacher": teacher}
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    for _ in range(300):
        opt.zero_grad()
        loss_fn(model, batch).backward()
        opt.step()
    torch.testing.assert_close(model.logits.detach(), teacher, atol=0.05, rtol=0.0)
    with pytest.raises(ValueError, match="2 heads but 1 teacher columns"):
        loss_fn(model, {**batch, "teacher": teacher[:, :1]})
    with pytest.raises(ValueError, match="0 <= alpha <= 1"):
        Distillation(alpha=1.5, tau=1.0)


def test_a_heads_weight_scales_its_loss() -> None:
    """eq. 4's λ_i: a head of weight 0 learns nothing, and weights alike are the plain sum."""
    teacher = torch.tensor([[3.0, -3.0], [-2.0, 2.0]])
    batch = {"input_ids": torch.zeros(2, 1), "labels": torch.tensor([1.0, 0.0]), "teacher": teacher}
    loss_fn = Distillation(alpha=0.0, tau=1.0)
    plain = _Heads(torch.zeros(2, 2))
    loss_fn(plain, batch).backward()
    weighted = _Heads(torch.zeros(2, 2))
    weighted.register_buffer("pool_weights", torch.tensor([1.0, 0.0]))
    loss_fn(weighted, batch).backward()
    assert weighted.logits.grad is not None and plain.logits.grad is not None
    torch.testing.assert_close(weighted.logits.grad[:, 0], 2 * plain.logits.grad[:, 0])
    assert not weighted.logits.grad[:, 1].any() and plain.logits.grad[:, 1].any()
    alike = _Heads(torch.zeros(2, 2))
    alike.register_buffer("pool_weights", torch.tensor([0.5, 0.5]))
    torch.testing.assert_close(loss_fn(alike, batch), loss_fn(plain, batch))
