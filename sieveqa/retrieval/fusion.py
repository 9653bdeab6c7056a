"""Reciprocal rank fusion (Cormack et al., 2009): several ranked lists become one."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["RRF_K", "fuse"]

RRF_K = 60  # the paper's constant


def fuse(lists: Sequence[list[tuple[str, float]]], k: int) -> list[tuple[str, float]]:
    """The best ``k`` ids of ``lists`` (``(id, score)`` best first) by the sum of 1 / (RRF_K + rank);
    ties by numeric id."""
    scores: dict[str, float] = {}
    for ranked in lists:
        for rank, (pid, _) in enumerate(ranked, start=1):
            scores[pid] = scores.get(pid, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], int(item[0])))[:k]
