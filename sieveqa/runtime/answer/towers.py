"""Towers: one question's retrieved passages, each built up one transformer layer at a time.

A *tower* is a passage read to some height (layers run so far); the *skyline* is all of a question's
towers. Schedulers (``sieveqa.runtime.answer.schedulers``) decide which towers get their next layer; two
implementations of :class:`Towers` let the same scheduler code run

- :class:`LiveTowers`: for real, on the anytime reader's steppable encoder (per-row state: a tower's
  rows are the windows of its passage, advanced together); layers not run are time not spent;
- :class:`ReplayTowers`: from a table of what every passage gives after every layer (one static pass),
  to train the learned scheduler and sweep budgets cheaply. Both give the same readings for the same
  decisions (a test holds them to it), so replayed curves are what live runs would measure.

After each exit layer a tower has a reading: its calibrated has-answer logit and best span.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from sieveqa.encoder import Cost, EncoderState
from sieveqa.models.reader import ReaderModel, SpanGuess, combine

__all__ = ["LiveTowers", "ReplayTowers", "Towers", "sigmoid"]


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


class Towers:
    """A question's towers: heights, readings and what building them cost."""

    def __init__(self, n: int, depth: int, exits: Sequence[int]) -> None:
        self.height = [0] * n
        self.depth = depth
        self.exits = list(exits)
        self.reading: list[SpanGuess | None] = [None] * n
        self.steps: list[int] = []  # every tower built, in order (one entry per tower-layer)
        self.layer_units = 0  # rows × layers actually run (a passage read in 2 windows counts 2)

    def __len__(self) -> int:
        return len(self.height)

    def has_answer(self, t: int) -> float | None:
        """Calibrated probability that tower ``t``'s passage holds the answer (None: no exit read yet)."""
        r = self.reading[t]
        return None if r is None else sigmoid(r.has_logit)

    def open(self) -> list[int]:
        """Towers below full height."""
        return [t for t, h in enumerate(self.height) if h < self.depth]

    @property
    def tower_layers(self) -> int:
        return len(self.steps)

    def build(self, towers: Sequence[int]) -> None:
        """Give each of ``towers`` (distinct, below full height) its next layer."""
        towers = list(towers)
        if not towers:
            return
        if len(set(towers)) != len(towers) or any(self.height[t] >= self.depth for t in towers):
            raise ValueError(f"towers {towers} must be distinct and below height {self.depth}")
        self._build(towers)
        for t in towers:
            self.height[t] += 1
            self.steps.append(t)

    def finish(self, towers: Sequence[int]) -> None:
        """Build ``towers`` to full height (the last-layer strategy)."""
        while todo := [t for t in towers if self.height[t] < self.depth]:
            self.build(todo)

    def _build(self, towers: list[int]) -> None:
        raise NotImplementedError


class ReplayTowers(Towers):
    """Towers whose readings come from ``table[tower][exit]`` (a :meth:`ReaderModel.read` result)."""

    def __init__(
        self,
        table: Sequence[Sequence[SpanGuess]],
        depth: int,
        exits: Sequence[int],
        rows: Sequence[int] | None = None,
    ) -> None:
        super().__init__(len(table), depth, exits)
        self.table = table
        self.rows = list(rows) if rows is not None else [1] * len(table)

    def _build(self, towers: list[int]) -> None:
        for t in towers:
            self.layer_units += self.rows[t]
            height = self.height[t] + 1
            if height in self.exits:
                self.reading[t] = self.table[t][self.exits.index(height)]


class LiveTowers(Towers):
    """Towers built by the reader's encoder: each build runs the next layer on the towers' rows and,
    at an exit layer, the heads on what it just computed."""

    def __init__(
        self, model: ReaderModel, question: str, passages: Sequence[str], cost: Cost | None = None
    ) -> None:
        super().__init__(len(passages), model.encoder.num_layers, model.exits)
        self.model = model
        features = model.featurize([question] * len(passages), list(passages))
        of_tower: list[list[int]] = [[] for _ in passages]
        for r, src in enumerate(features.source):
            of_tower[src].append(r)
        self._features, self._of_tower = features, of_tower
        self.cost = cost if cost is not None else Cost()
        self.state: EncoderState = model.encoder.start(
            features, model.pad_id, model.batch_size, self.cost, model.shapes
        )

    def _build(self, towers: list[int]) -> None:
        rows = [r for t in towers for r in self._of_tower[t]]
        before = self.cost.layer_units
        groups = self.model.encoder.advance(self.state, rows, self.model.batch_size, shapes=self.model.shapes)
        self.layer_units += self.cost.layer_units - before
        features = self._features
        assert features.segment_ids is not None and features.offsets is not None
        by_row: dict[int, SpanGuess] = {}
        for group in groups:
            index = self.model.exit_index(self.state.depth[group.rows[0]])
            if index is None:
                continue
            width = group.hidden.shape[1]
            context = torch.zeros((len(group.rows), width), dtype=torch.bool)
            for j, r in enumerate(group.rows):
                segs = features.segment_ids[r]
                context[j, : len(segs)] = torch.tensor(segs) == 1
            n = len(group.rows)  # rows past n pad the group to its shape
            has, start, end = (x[:n] for x in self.model.heads(index, group.hidden, group.mask))
            offsets = [features.offsets[r] for r in group.rows]
            by_row.update(
                zip(group.rows, self.model.guesses(index, has, start, end, context, offsets), strict=True)
            )
        for t in towers:
            windows = [by_row[r] for r in self._of_tower[t] if r in by_row]
            if windows:
                self.reading[t] = combine(windows)
            if self.height[t] + 1 == self.depth:  # full height: no layer will read these rows again
                self.state.release(self._of_tower[t])
