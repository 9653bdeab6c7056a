"""Training objectives: small callables ``(model, batch) -> loss`` the one Trainer runs."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn


class PointwiseBCE:
    """Binary cross-entropy on each pair's logit: the pointwise AS2 objective (TANDA)."""

    def __call__(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        labels = batch["labels"]
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        return F.binary_cross_entropy_with_logits(model(**inputs), labels)
