"""Rows that climb the encoder together, kept in the padded batches they last ran in.

A cascade advances every surviving candidate by the same layers, so its rows never differ in depth.
:class:`PackedState` holds them as the padded batches the last layer produced and runs each batch's
next layer on it as it is; dropping rows at an exit gathers the survivors into new length-sorted
batches by index, a few tensor copies a batch. :class:`~sieveqa.encoder.EncoderState`, which keeps
each row's states unpadded so rows can sit at different depths (the towers), pads every row again at
every layer: a fifth of a cascade's time on OpenVINO int8 (cProfile, SQuAD-AS2 test, issue 46).

The batches are the ones ``EncoderState`` would form from the same rows, so the scores are the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from sieveqa.batching import EXACT, Shapes
from sieveqa.cost import BODY, Cost
from sieveqa.encoder import Group, SteppableEncoder
from sieveqa.features import Features


class PackedState:
    """Hidden states of rows at one depth, as padded batches (``groups``) of at most ``batch_size``.

    Made by :meth:`start`; :meth:`advance` gives every row its next layer, :meth:`keep` drops rows.
    ``cost`` accumulates what it took.
    """

    def __init__(
        self, groups: list[Group], lengths: Sequence[int], cost: Cost, batch_size: int, shapes: Shapes
    ) -> None:
        self.groups, self.cost = groups, cost
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.batch_size, self.shapes = batch_size, shapes
        self.depth = 0
        self._index()

    @classmethod
    def start(
        cls,
        encoder: SteppableEncoder,
        features: Features,
        pad_id: int,
        batch_size: int = 64,
        cost: Cost | None = None,
        shapes: Shapes = EXACT,
    ) -> PackedState:
        """Every row of ``features`` embedded, at depth 0."""
        cost = cost if cost is not None else Cost()
        groups = list(encoder.embedded(features, pad_id, batch_size, cost, shapes))
        return cls(groups, features.lengths, cost, batch_size, shapes)

    def __len__(self) -> int:
        return sum(len(g.rows) for g in self.groups)

    @property
    def rows(self) -> list[int]:
        """The rows held, in index order."""
        return sorted(r for g in self.groups for r in g.rows)

    def _index(self) -> None:
        n = len(self.lengths)
        self._group = np.full(n, -1, dtype=np.int64)
        self._slot = np.full(n, -1, dtype=np.int64)
        for g, group in enumerate(self.groups):
            self._group[group.rows] = g
            self._slot[group.rows] = np.arange(len(group.rows))

    def advance(self, encoder: SteppableEncoder) -> list[Group]:
        """Run the next layer on every batch, in place; the batches that ran, padded."""
        for group in self.groups:
            group.hidden = encoder.run_layer(
                self.depth, group.hidden, group.mask, self.cost, branch=BODY, rows=len(group.rows)
            )
        self.depth += 1
        return self.groups

    def keep(self, rows: Sequence[int]) -> None:
        """Drop every row but ``rows`` (each held now), re-forming the batches from the survivors."""
        rows = np.asarray(sorted(rows), dtype=np.int64)
        if (self._group[rows] < 0).any():
            raise ValueError(f"rows {rows[self._group[rows] < 0][:5].tolist()} are not held")
        if len(rows) == len(self) and len(rows):
            return  # every row is held already, in these batches
        lengths = self.lengths[rows]
        groups = []
        for pos in self.shapes.batches(lengths.tolist(), self.batch_size):
            chosen = rows[pos]
            groups.append(self._gather(chosen, self.shapes.shape(lengths[pos].tolist(), self.batch_size)))
        self.groups = groups
        self._index()

    def _gather(self, chosen: np.ndarray, shape: tuple[int, int]) -> Group:
        """One new batch of the ``chosen`` rows, copied from the batches holding them, of ``shape``;
        its rows ordered by the batch they came from (so each batch gives one slice)."""
        n_rows, width = shape
        order = np.argsort(self._group[chosen], kind="stable")
        chosen = chosen[order]
        sources, slots = self._group[chosen], self._slot[chosen]
        first = self.groups[sources[0]].hidden
        hidden = first.new_empty((n_rows, width, first.shape[-1]))
        hidden[len(chosen) :] = 0  # padding rows
        at = 0
        for g in np.unique(sources):
            held, picked = self.groups[g].hidden, slots[sources == g]
            index = torch.from_numpy(picked).to(held.device)
            cut = min(width, held.shape[1])
            if held.requires_grad:  # out= is not differentiable: select, then copy
                hidden[at : at + len(picked), :cut] = held[:, :cut].index_select(0, index)
            else:
                torch.index_select(held[:, :cut], 0, index, out=hidden[at : at + len(picked), :cut])
            hidden[at : at + len(picked), cut:] = 0  # never NaN where a mask hides it: 0 x NaN is NaN
            at += len(picked)
        lengths = torch.ones(n_rows, dtype=torch.long)
        lengths[: len(chosen)] = torch.from_numpy(self.lengths[chosen])
        mask = (torch.arange(width) < lengths.unsqueeze(1)).long().to(hidden.device)
        return Group(chosen.tolist(), hidden, mask)


def head_scores(groups: Sequence[Group], head: torch.nn.Module, rows: Sequence[int]) -> Tensor:
    """``head``'s score of every row of ``groups``, ordered as ``rows`` (the rows the groups hold)."""
    position = torch.empty(max(rows, default=-1) + 1, dtype=torch.long)
    position[torch.as_tensor(rows, dtype=torch.long)] = torch.arange(len(rows))
    out = torch.empty(len(rows))
    for group in groups:
        logits = head(group.hidden, group.mask)[: len(group.rows)]
        out[position[torch.as_tensor(group.rows, dtype=torch.long)]] = logits.float().cpu()
    return out
