"""A teacher of another kind (issue 65): a sentence embedder's cosine, as a logit a student can learn.

``embedder:BACKBONE`` (``embedder:mpnet-12``: all-mpnet-base-v2 as sentence-transformers runs it, mean
of the token states, normalised) scores a pair by the cosine of the question's and the text's
vectors. A cosine is not a logit: the distillation loss softens logits by a temperature, and a
cosine's range (about 0 to 1) would make every soft target flat. So the cosines are turned into
log-odds by a logistic regression fitted on the same labelled pairs (two numbers: ``a·cos + b``),
which keeps the teacher's order and gives its scores the scale a cross-encoder teacher's have: at the
fit, the mean probability equals the share of right pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from sieveqa.errors import ConfigError
from sieveqa.models.embedder import EmbedderConfig, SentenceEmbedder

PREFIX = "embedder:"


def is_embedder_teacher(spec: str) -> bool:
    return spec.startswith(PREFIX)


def load_embedder_teacher(spec: str) -> SentenceEmbedder:
    """The embedder an ``embedder:BACKBONE`` spec names (a backbone the project has: mpnet-12, ...)."""
    backbone = spec.removeprefix(PREFIX)
    if not backbone:
        raise ConfigError(f"{spec!r}: name the embedder's backbone, e.g. embedder:mpnet-12")
    return SentenceEmbedder(EmbedderConfig(backbone=backbone))


def cosines(
    embedder: SentenceEmbedder, questions: Sequence[str], texts: Sequence[str], progress: bool
) -> np.ndarray:
    """The cosine of each (question, text) pair; every distinct text is embedded once."""
    unique = list(dict.fromkeys([*questions, *texts]))
    at = {t: i for i, t in enumerate(unique)}
    vectors = embedder.embed(unique, progress=progress)  # unit vectors
    q = vectors[[at[t] for t in questions]]
    t = vectors[[at[x] for x in texts]]
    return np.einsum("ij,ij->i", q, t).astype(np.float64)


def calibrated_logits(values: np.ndarray, labels: Sequence[float], steps: int = 200) -> list[float]:
    """``a·value + b`` with ``a >= 0`` and ``b`` the logistic regression of ``labels`` on ``values``
    (maximum likelihood, LBFGS; a tiny ridge on ``a`` keeps a separable set finite). ``a`` is kept
    from going negative: the teacher's order is its knowledge, and a cosine that ranks right pairs
    lower than wrong ones teaches nothing (its logits are then all ``b``)."""
    if not 0 < sum(labels) < len(labels):
        raise ConfigError(
            "a bi-encoder teacher is calibrated on right and wrong pairs: these have one kind only"
        )
    x = torch.tensor(values, dtype=torch.float64)
    y = torch.tensor(list(labels), dtype=torch.float64).clamp(0, 1)
    mean, spread = x.mean(), x.std().clamp_min(1e-12)
    z = (x - mean) / spread
    params = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([params], max_iter=steps, line_search_fn="strong_wolfe")

    def logits() -> torch.Tensor:
        return torch.nn.functional.softplus(params[0]) * z + params[1]

    def loss() -> torch.Tensor:
        optimizer.zero_grad()
        slope = torch.nn.functional.softplus(params[0])
        value = torch.nn.functional.binary_cross_entropy_with_logits(logits(), y) + 1e-6 * slope**2
        value.backward()
        return value

    optimizer.step(loss)
    with torch.no_grad():
        return logits().tolist()
