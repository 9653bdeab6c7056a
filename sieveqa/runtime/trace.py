"""Cascade traces: the pruning loop every cascade-like ranker shares, and what its decisions cost.

At each stage a question's remaining candidates are scored and, except after the last, ⌊α·k⌋ of the
lowest are dropped (or every row below a threshold). The loop is the same whether the scores come
from a real cascade (hidden states carried from exit to exit), from a sequential ranker (independent
models of growing depth), or from exit scores computed once with nothing pruned (``simulate``, what
the drop-ratio search uses). Rows are independent in a transformer, so all three agree wherever their
scores agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from sieveqa.data.records import RankingExample
from sieveqa.runtime.pruning import grouped_order, keep_top

StageScorer = Callable[[int, Tensor], Tensor]


def groups_of(examples: Sequence[RankingExample]) -> Tensor:
    """Question index of every candidate, in example order (the layout every trace uses)."""
    return torch.tensor([q for q, ex in enumerate(examples) for _ in ex.candidates], dtype=torch.long)


@dataclass
class CascadeTrace:
    """Where each candidate left the cascade, and what each exit it reached thought of it.

    Rows are candidates in example order; ``groups[r]`` is row r's question (0 .. n_groups-1,
    non-decreasing; a question may have no rows). ``scores[r, i]`` is exit i's score of row r (NaN
    where r was dropped earlier), ``last_exit[r]`` the last exit that scored it, and ``survivors[i]``
    how many rows exit i scored.
    """

    scores: Tensor
    last_exit: Tensor
    groups: Tensor
    n_groups: int
    survivors: list[int]

    def stopped_at(self, exit_index: int) -> tuple[Tensor, Tensor]:
        """(exit, score) of every row if the cascade had ended at ``exit_index``."""
        exits = self.last_exit.clamp(max=exit_index)
        return exits, self.scores.gather(1, exits.unsqueeze(1)).squeeze(1)

    def cascade_scores(self) -> Tensor:
        """One score per row that sorts like the cascade's ranking: the index of the last exit
        reached plus the sigmoid of that exit's score (scores of different exits are not comparable)."""
        exits, scores = self.stopped_at(self.scores.shape[1] - 1)
        return exits.double() + torch.sigmoid(scores.double())

    def orders(self, exit_index: int | None = None) -> list[list[int]]:
        """Per question, its candidates' local indices best first (cascade order)."""
        exits, scores = self.stopped_at(self.scores.shape[1] - 1 if exit_index is None else exit_index)
        order = grouped_order(exits, scores, self.groups).tolist()
        counts = torch.bincount(self.groups, minlength=self.n_groups).tolist()
        out, start = [], 0
        for count in counts:
            out.append([r - start for r in order[start : start + count]])
            start += count
        return out


def best_windows(trace: CascadeTrace, source: Sequence[int], groups: Tensor) -> CascadeTrace:
    """The trace of texts read in windows (``trace``'s rows; ``source[w]`` is window w's text, every text
    has one or more): each text's row is its window the cascade ranks best (the last exit reached,
    then that exit's score), and ``groups`` are the texts' questions."""
    key = trace.cascade_scores().tolist()
    best: dict[int, int] = {}
    for w, text in enumerate(source):
        if text not in best or key[w] > key[best[text]]:
            best[text] = w
    picked = torch.tensor([best[t] for t in range(len(groups))], dtype=torch.long)
    last = trace.last_exit[picked]
    survivors = [int((last >= i).sum()) for i in range(trace.scores.shape[1])]
    return CascadeTrace(trace.scores[picked], last, groups, trace.n_groups, survivors)


def prune_loop(
    groups: Tensor,
    n_stages: int,
    score_stage: StageScorer,
    drop_ratios: Sequence[float] | None = None,
    thresholds: Sequence[float] | None = None,
    n_groups: int | None = None,
) -> CascadeTrace:
    """Score rows stage by stage; after each stage but the last drop ⌊α·k⌋ per question (or, with
    ``thresholds``, every row scoring below the stage's threshold).

    ``score_stage(i, rows)`` returns stage i's scores of ``rows`` (indices into ``groups``).
    ``n_groups`` counts questions without candidates too (default: ``groups.max() + 1``).
    """
    if (drop_ratios is None) == (thresholds is None):
        raise ValueError("give either drop_ratios or thresholds, not both or neither")
    limits = list(drop_ratios if drop_ratios is not None else thresholds or [])
    if len(limits) != n_stages - 1:
        raise ValueError(
            f"need {n_stages - 1} pruning settings (one per exit but the last), got {len(limits)}"
        )
    if len(groups) and bool((groups[1:] < groups[:-1]).any()):
        raise ValueError("groups must be non-decreasing (candidates of a question next to each other)")
    n = len(groups)
    scores = torch.full((n, n_stages), float("nan"))
    last_exit = torch.zeros(n, dtype=torch.long)
    alive = torch.arange(n)
    survivors = [0] * n_stages
    for i in range(n_stages):
        if len(alive) == 0:
            break
        survivors[i] = len(alive)
        stage = score_stage(i, alive).float()
        scores[alive, i] = stage
        last_exit[alive] = i
        if i < n_stages - 1:
            fixed = drop_ratios is not None
            alive = alive[keep_top(stage, groups[alive], limits[i]) if fixed else stage >= limits[i]]
    if n_groups is None:
        n_groups = int(groups.max()) + 1 if n else 0
    return CascadeTrace(scores, last_exit, groups, n_groups, survivors)


def merge_traces(traces: Sequence[CascadeTrace]) -> CascadeTrace:
    """One trace from the traces of consecutive batches of questions."""
    groups, offset = [], 0
    for t in traces:
        groups.append(t.groups + offset)
        offset += t.n_groups
    return CascadeTrace(
        torch.cat([t.scores for t in traces]),
        torch.cat([t.last_exit for t in traces]),
        torch.cat(groups),
        offset,
        [sum(col) for col in zip(*(t.survivors for t in traces), strict=True)],
    )


def simulate(
    exit_scores: Tensor,
    groups: Tensor,
    drop_ratios: Sequence[float] | None = None,
    thresholds: Sequence[float] | None = None,
    n_groups: int | None = None,
) -> CascadeTrace:
    """The cascade's decisions from exit scores computed with nothing pruned (rows × exits)."""
    return prune_loop(
        groups, exit_scores.shape[1], lambda i, rows: exit_scores[rows, i], drop_ratios, thresholds, n_groups
    )


def cascade_layer_units(survivors: Sequence[int], exits: Sequence[int]) -> int:
    """Layer-units a cascade spends: rows scored at each exit times the layers run since the last one."""
    steps = [b - a for a, b in zip([0, *exits[:-1]], exits, strict=True)]
    return sum(k * s for k, s in zip(survivors, steps, strict=True))


def sequential_layer_units(survivors: Sequence[int], depths: Sequence[int]) -> int:
    """Layer-units of a sequential ranker: every stage re-runs its own model from the first layer."""
    return sum(k * d for k, d in zip(survivors, depths, strict=True))


def relative_cost(layer_units: int, n_pairs: int, full_depth: int) -> float:
    """Layer-units spent over those of the full-depth monolithic model (the paper's cost column)."""
    return layer_units / (n_pairs * full_depth) if n_pairs else 0.0


def empty_trace(n_stages: int) -> CascadeTrace:
    """The trace of a run over no candidates at all."""
    return CascadeTrace(
        torch.empty(0, n_stages),
        torch.empty(0, dtype=torch.long),
        torch.empty(0, dtype=torch.long),
        0,
        [0] * n_stages,
    )
