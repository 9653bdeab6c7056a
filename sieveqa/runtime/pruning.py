"""Fixed-ratio candidate pruning (Cascade Transformer, section 4.3.2) and the final ranking it implies.

At each exit a question's k remaining candidates lose ⌊α·k⌋ of their lowest-scored members. A fixed
ratio, unlike a score threshold, makes every later batch size known in advance. Pruning is per
question even when many questions share one batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from sieveqa.errors import ConfigError

# Keeps products such as 0.29 * 100 = 28.999999999999996 from losing a whole candidate to the floor.
_EPS = 1e-9


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= alpha < 1.0:
        raise ConfigError(f"drop ratio alpha must be in [0, 1), got {alpha}")


def check_drop_ratios(ratios: float | Sequence[float], n_exits: int) -> list[float]:
    """One α per pruning exit (every exit but the last); one value (alone or in a list) applies to all."""
    if not isinstance(ratios, int | float) and len(ratios) == 1:
        ratios = ratios[0]
    if isinstance(ratios, int | float):
        ratios = [float(ratios)] * (n_exits - 1)
    ratios = [float(a) for a in ratios]
    if len(ratios) != n_exits - 1:
        raise ConfigError(
            f"need {n_exits - 1} drop ratios (one per exit but the last) or a single one, got {len(ratios)}"
        )
    bad = [a for a in ratios if not 0.0 <= a < 1.0]
    if bad:
        raise ConfigError(f"drop ratios must be in [0, 1), got {bad}")
    return ratios


def drop_count(k: int, alpha: float) -> int:
    """How many of ``k`` candidates an exit with drop ratio ``alpha`` removes: ⌊α·k⌋."""
    _check_alpha(alpha)
    if k < 0:
        raise ValueError(f"candidate count must be >= 0, got {k}")
    return math.floor(alpha * k + _EPS)


def keep_top(scores: Tensor, groups: Tensor, alpha: float) -> Tensor:
    """Boolean mask of the rows that survive: per group, all but the ⌊α·k⌋ lowest scores.

    ``groups[i]`` says which question row ``i`` belongs to. Ties are broken by row order (the
    earlier row survives), so the result is deterministic. Vectorised: one sort for all groups.
    """
    if scores.shape != groups.shape or scores.ndim != 1:
        raise ValueError(
            f"scores and groups must be 1-D and equal in length, got {tuple(scores.shape)} "
            f"and {tuple(groups.shape)}"
        )
    _check_alpha(alpha)
    if len(scores) == 0 or alpha == 0.0:
        return torch.ones_like(scores, dtype=torch.bool)
    order = grouped_order(torch.zeros_like(groups), scores, groups)
    sorted_groups = groups[order]
    _, counts = torch.unique_consecutive(sorted_groups, return_counts=True)
    starts = torch.repeat_interleave(torch.cumsum(counts, 0) - counts, counts)
    position = torch.arange(len(order)) - starts  # rank inside the row's group, best first
    k = torch.repeat_interleave(counts, counts)
    n_keep = k - torch.floor(alpha * k.double() + _EPS).long()
    keep = torch.empty_like(scores, dtype=torch.bool)
    keep[order] = position < n_keep
    return keep


def grouped_order(last_exit: Tensor, last_score: Tensor, groups: Tensor) -> Tensor:
    """Row indices sorted by group, then deepest exit reached, then score (both descending), then row.

    Within each group this is the cascade's final ranking: candidates that reached a later exit come
    before every candidate dropped earlier, and within one exit the score that exit gave decides.
    """
    keys = (
        np.arange(len(groups)),
        -last_score.double().numpy(),
        -last_exit.long().numpy(),
        groups.long().numpy(),
    )
    return torch.from_numpy(np.lexsort(keys))


def cascade_order(last_exit: Sequence[int], last_score: Sequence[float]) -> list[int]:
    """Final ranking of one question's candidates (indices, best first).

    Candidates that reached a later exit rank above every candidate dropped earlier; within one exit
    they are ordered by the score that exit gave them, then by input order. So survivors come first,
    ranked by the final classifier, and MAP and nDCG stay defined over the whole list.
    """
    if len(last_exit) != len(last_score):
        raise ValueError(f"{len(last_exit)} exits but {len(last_score)} scores")
    exits = torch.tensor(list(last_exit), dtype=torch.long)
    order = grouped_order(exits, torch.tensor(list(last_score), dtype=torch.float64), torch.zeros_like(exits))
    return order.tolist()


def expected_cost(alpha: float, exits: Sequence[int]) -> float:
    """Layers spent per candidate with one ``alpha`` at every exit, as a share of running all of
    them (``exits[-1]`` layers): layers up to exit i run on (1 − α)^i of the candidates (⌊·⌋ ignored)."""
    _check_alpha(alpha)
    spent, previous = 0.0, 0
    for i, layer in enumerate(exits):
        spent += (layer - previous) * (1.0 - alpha) ** i
        previous = layer
    return spent / exits[-1]


def ratio_for_budget(budget: float, exits: Sequence[int]) -> float:
    """The smallest single drop ratio whose ``expected_cost`` is within ``budget`` (a share of the
    full model's layers, in (0, 1]); refused below what dropping nearly everything at the first exit costs."""
    if not 0.0 < budget <= 1.0:
        raise ConfigError(f"budget must be in (0, 1], got {budget}")
    floor = exits[0] / exits[-1]
    if budget < floor:
        raise ConfigError(
            f"budget {budget} is below {floor:.3f}: every candidate runs the {exits[0]} layers "
            f"before the first exit of {exits[-1]}"
        )
    lo, hi = 0.0, 0.999
    if expected_cost(lo, exits) <= budget:
        return 0.0
    for _ in range(40):  # bisection: expected_cost falls as alpha grows
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if expected_cost(mid, exits) <= budget else (mid, hi)
    return min(math.ceil(hi * 1e4) / 1e4, 0.999)
