"""Training objectives: small callables ``(model, batch) -> loss`` the one Trainer runs."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def _inputs(batch: dict[str, Tensor]) -> dict[str, Tensor]:
    return {k: v for k, v in batch.items() if k not in ("labels", "teacher")}


class PointwiseBCE:
    """Binary cross-entropy on each pair's logit: the pointwise AS2 objective (TANDA)."""

    def __call__(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        return F.binary_cross_entropy_with_logits(model(**_inputs(batch)), batch["labels"])


class CascadeBCE:
    """Pointwise BCE for a multi-exit model (Cascade Transformer, section 4.3.1).

    ``sampling="random"`` (the paper) draws one exit per mini-batch uniformly and back-propagates its
    loss through every layer below it, down to the embeddings; layers above that exit are not run.
    ``sampling="all"`` averages the losses of all exits in one pass (the alternative we compare with;
    the mean, not the sum, so the learning rate means the same in both).
    The draw uses torch's generator, which checkpoints save, so a resumed run draws the same exits.
    """

    def __init__(self, n_exits: int, sampling: str = "random") -> None:
        if sampling not in ("random", "all"):
            raise ValueError(f"exit sampling must be 'random' or 'all', got {sampling!r}")
        self.n_exits, self.sampling = n_exits, sampling

    def __call__(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        labels = batch["labels"]
        if self.sampling == "random":
            exit_index = int(torch.randint(self.n_exits, ()).item())
            logits = model(**_inputs(batch), exits=[exit_index])[:, 0]
            return F.binary_cross_entropy_with_logits(logits, labels)
        logits = model(**_inputs(batch))
        return F.binary_cross_entropy_with_logits(logits, labels.unsqueeze(1).expand_as(logits))


class ExitDistillation:
    """Retrofit loss: exits regress (MSE) onto a teacher logit.

    ``teacher="self"``: the teacher is the model's own last exit, detached, and only the other exits
    are fitted (the body and last head stay as they were trained; batch labels are ignored).
    ``teacher="labels"``: batch labels are teacher logits computed beforehand by the original model,
    and every exit, the last included, is fitted to them, so a lightly tuned body cannot drift.
    """

    def __init__(self, teacher: str = "self") -> None:
        if teacher not in ("self", "labels"):
            raise ValueError(f"teacher must be 'self' or 'labels', got {teacher!r}")
        self.teacher = teacher

    def __call__(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        logits = model(**_inputs(batch))
        if self.teacher == "labels":
            return F.mse_loss(logits, batch["labels"].unsqueeze(1).expand_as(logits))
        student, target = logits[:, :-1], logits[:, -1:].detach()
        return F.mse_loss(student, target.expand_as(student))


def kd_loss(student: Tensor, teacher: Tensor, labels: Tensor, alpha: float, tau: float) -> Tensor:
    """Eq. 1 of the MHS paper, per pair: α·CE(student, label) + (1−α)·τ²·KL(teacher ‖ student); a
    NaN label (unknown) drops the first term.

    A pair's logit ``z`` is the two-class distribution softmax([0, z]), so softened by ``tau`` it is
    Bernoulli(σ(z/τ)); the KL of two Bernoullis is the cross-entropy minus the teacher's entropy.
    """
    known = ~torch.isnan(labels)  # a pool pair's label is unknown: it learns from the teacher only
    hard = F.binary_cross_entropy_with_logits(student, labels.nan_to_num(0.0), reduction="none") * known
    target = torch.sigmoid(teacher / tau)
    cross = F.binary_cross_entropy_with_logits(student / tau, target, reduction="none")
    entropy = F.binary_cross_entropy_with_logits(teacher / tau, target, reduction="none")
    return alpha * hard + (1 - alpha) * tau**2 * (cross - entropy)


class Distillation:
    """Knowledge distillation from cached teacher logits (``batch["teacher"]``, one column per head).

    A single-score model learns from column 0; a model with k heads (a k-column output) gives each
    head its own teacher column, and the losses are summed (the paper's eq. 4, λ = 1 unless the
    model's ``head_weights`` say otherwise: λ_i = k·w_i for weights w summing to 1), so the shared
    body learns from all of them.
    """

    def __init__(self, alpha: float, tau: float) -> None:
        if not 0 <= alpha <= 1 or not tau > 0:
            raise ValueError(f"KD needs 0 <= alpha <= 1 and tau > 0, got alpha {alpha}, tau {tau}")
        self.alpha, self.tau = alpha, tau

    def __call__(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        student = model(**_inputs(batch))
        teacher = batch["teacher"]
        if student.dim() == 1:
            student, teacher = student.unsqueeze(1), teacher[:, :1]
        if student.shape != teacher.shape:
            raise ValueError(f"{student.shape[1]} heads but {teacher.shape[1]} teacher columns")
        labels = batch["labels"].unsqueeze(1).expand_as(student)
        losses = kd_loss(student, teacher, labels, self.alpha, self.tau)
        weights = getattr(model, "pool_weights", None)
        if weights is not None:  # eq. 4's λ_i: k·w_i (all 1 when the heads weigh alike)
            losses = losses * (weights * len(weights)).to(losses.dtype)
        return losses.sum(dim=1).mean()


class TripletHinge:
    """HAS's objective: max(0, margin − s(q,p) + s(q,n)) + δ·(‖B_p − sign(B_p)‖² + ‖B_n − sign(B_n)‖²).

    The batch holds ``q_*`` rows and ``a_*`` rows (positives, then negatives; see
    ``training.triplets.TripletBatches``). The binary constraint follows the paper's alternating
    optimisation: with θ fixed the best binary codes are sign(B), so sign(B) is a constant target and
    only B = tanh(βV) moves. Padding tokens are not constrained. Margin and δ come from the model's
    config; models without hashing get the hinge alone.
    """

    def __call__(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        from sieveqa.models.hashing import binarize

        config = model.config
        mask = batch["a_attention_mask"]
        question = model.question_vectors(batch["q_input_ids"], batch["q_attention_mask"])
        answers = model.answer_tokens(batch["a_input_ids"], mask)
        rows = len(question)
        both = torch.cat([question, question])
        sims = model.similarity(both, answers, mask)
        loss = (config.margin - sims[:rows] + sims[rows:]).clamp(min=0)
        if config.hashing and config.delta > 0:
            gap = (answers - binarize(answers).detach()) * mask.unsqueeze(-1)
            penalty = gap.pow(2).sum(dim=(1, 2))
            loss = loss + config.delta * (penalty[:rows] + penalty[rows:])
        return loss.mean()
