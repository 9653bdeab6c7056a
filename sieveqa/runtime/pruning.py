"""Fixed-ratio candidate pruning (Cascade Transformer, section 4.3.2) and the final ranking it implies.

At each exit a question's k remaining candidates lose ⌊α·k⌋ of their lowest-scored members. A fixed
ratio, unlike a score threshold, makes every later batch size known in advance. Pruning is per
question even when many questions share one batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor


def drop_count(k: int, alpha: float) -> int:
    """How many of ``k`` candidates an exit with drop ratio ``alpha`` removes: ⌊α·k⌋."""
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"drop ratio alpha must be in [0, 1), got {alpha}")
    if k < 0:
        raise ValueError(f"candidate count must be >= 0, got {k}")
    # The epsilon keeps products such as 0.29 * 100 = 28.999999999999996 from losing a whole candidate.
    return math.floor(alpha * k + 1e-9)


def keep_top(scores: Tensor, groups: Tensor, alpha: float) -> Tensor:
    """Boolean mask of the rows that survive: per group, all but the ⌊α·k⌋ lowest scores.

    ``groups[i]`` says which question row ``i`` belongs to. Ties are broken by row order (the
    earlier row survives), so the result is deterministic.
    """
    if scores.shape != groups.shape or scores.ndim != 1:
        raise ValueError(
            f"scores and groups must be 1-D and equal in length, got {tuple(scores.shape)} "
            f"and {tuple(groups.shape)}"
        )
    keep = torch.ones_like(scores, dtype=torch.bool)
    for group in torch.unique(groups):
        rows = (groups == group).nonzero(as_tuple=True)[0]
        n_drop = drop_count(len(rows), alpha)
        if n_drop == 0:
            continue
        # Stable sort on (-score) keeps earlier rows ahead among equal scores.
        order = torch.sort(-scores[rows], stable=True).indices
        keep[rows[order[len(rows) - n_drop :]]] = False
    return keep


def cascade_order(last_exit: Sequence[int], last_score: Sequence[float]) -> list[int]:
    """Final ranking of one question's candidates (indices, best first).

    Candidates that reached a later exit rank above every candidate dropped earlier; within one exit
    they are ordered by the score that exit gave them, then by input order. So survivors come first,
    ranked by the final classifier, and MAP and nDCG stay defined over the whole list.
    """
    if len(last_exit) != len(last_score):
        raise ValueError(f"{len(last_exit)} exits but {len(last_score)} scores")
    return sorted(range(len(last_exit)), key=lambda i: (-last_exit[i], -last_score[i], i))
