"""Cascade inference (section 4.3.2): all candidates of a question climb one encoder together and each
exit drops a fixed share of them, per question, even when many questions share one batch.

The same pruning loop drives three rankers: the real cascade (hidden states carried from exit to
exit), the sequential ranker baseline (independent models of growing depth, nothing shared), and a
simulation over exit scores computed once with nothing pruned (what the drop-ratio search uses).
Rows are independent in a transformer, so the three agree wherever their scores agree.
"""

from __future__ import annotations

import itertools
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence
from tqdm.auto import tqdm

from sieveqa.batching import collate, length_batches
from sieveqa.data.records import RankingExample, ScoredCandidate
from sieveqa.models.base import Ranker, flatten_pairs, regroup
from sieveqa.models.cascade import CascadeTransformer, check_drop_ratios
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.precision import Precision, apply_precision
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


@dataclass
class CascadeResult:
    """A ranking run: the trace, and what it cost against running every pair through every layer.

    ``seconds`` covers tokenization too, like ``PairModel.last_stats``.
    """

    trace: CascadeTrace
    n_pairs: int
    full_depth: int
    layer_units: int
    flops: int = 0
    seconds: float = 0.0

    @property
    def relative_cost(self) -> float:
        return relative_cost(self.layer_units, self.n_pairs, self.full_depth)

    @property
    def pairs_per_second(self) -> float:
        return self.n_pairs / self.seconds if self.seconds > 0 else 0.0


def _question_chunks(examples: Sequence[RankingExample], max_rows: int) -> Iterator[tuple[int, int]]:
    """Consecutive (start, end) example ranges of whole questions with at most ``max_rows``
    candidates, except that a question larger than ``max_rows`` forms a range of its own: splitting
    it would change ⌊α·k⌋."""
    start, rows = 0, 0
    for i, ex in enumerate(examples):
        if rows and rows + len(ex.candidates) > max_rows:
            yield start, i
            start, rows = i, 0
        rows += len(ex.candidates)
    if start < len(examples):
        yield start, len(examples)


class _PrunedRanker(Ranker, ABC):
    """Shared driver: batches of whole questions through ``prune_loop``; ranks in cascade order."""

    def __init__(
        self,
        n_stages: int,
        full_depth: int,
        max_rows: int,
        drop_ratios: float | Sequence[float] | None,
        thresholds: Sequence[float] | None,
    ) -> None:
        if max_rows < 1:
            raise ValueError(f"max_rows must be >= 1, got {max_rows}")
        if drop_ratios is not None and thresholds is not None:
            raise ValueError("give drop ratios or thresholds, not both")
        self.n_stages, self.full_depth, self.max_rows = n_stages, full_depth, max_rows
        self.drop_ratios: list[float] | None = None
        self.thresholds: list[float] | None = None
        if thresholds is not None:
            if len(thresholds) != n_stages - 1:
                raise ValueError(
                    f"need {n_stages - 1} thresholds (one per exit but the last), got {len(thresholds)}"
                )
            self.thresholds = [float(t) for t in thresholds]
        else:
            self.drop_ratios = check_drop_ratios(drop_ratios if drop_ratios is not None else 0.0, n_stages)
        self.units = self.flops = 0
        self.last_result: CascadeResult | None = None

    @abstractmethod
    def _run_chunk(
        self, questions: list[str], texts: list[str], groups: Tensor, n_groups: int
    ) -> CascadeTrace:
        """Prune and score one batch of whole questions, adding what it cost to ``units``/``flops``."""

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> CascadeResult:
        """Rank every example's candidates; the result also says what it cost."""
        traces = []
        self.units = self.flops = 0
        start = time.perf_counter()
        bar = tqdm(total=len(examples), desc="ranking", unit="q", disable=not progress, leave=False)
        for lo, hi in _question_chunks(examples, self.max_rows):
            chunk = examples[lo:hi]
            questions, texts = flatten_pairs(chunk)
            traces.append(self._run_chunk(questions, texts, groups_of(chunk), len(chunk)))
            bar.update(len(chunk))
        bar.close()
        seconds = time.perf_counter() - start
        n_pairs = sum(len(ex.candidates) for ex in examples)
        trace = (
            merge_traces(traces)
            if traces
            else simulate(
                torch.empty(0, self.n_stages),
                torch.empty(0, dtype=torch.long),
                thresholds=[0.0] * (self.n_stages - 1),
            )
        )
        self.last_result = CascadeResult(trace, n_pairs, self.full_depth, self.units, self.flops, seconds)
        return self.last_result

    def score(self, examples: Sequence[RankingExample], progress: bool = False) -> list[list[float]]:
        """Scores that sort like the cascade's ranking: last exit reached + sigmoid of its score
        (see ``CascadeTrace.cascade_scores``); ``last_result.trace`` keeps every exit's raw score."""
        return regroup(examples, self.run(examples, progress).trace.cascade_scores().tolist())

    def rank(self, examples: Sequence[RankingExample], progress: bool = False) -> list[list[ScoredCandidate]]:
        """Candidates in cascade order (exact, even where sigmoids saturate), with cascade scores."""
        trace = self.run(examples, progress).trace
        scores = regroup(examples, trace.cascade_scores().tolist())
        return [
            [ScoredCandidate(ex.candidates[i], sc[i], r + 1) for r, i in enumerate(order)]
            for ex, sc, order in zip(examples, scores, trace.orders(), strict=True)
        ]


class CascadeRanker(_PrunedRanker):
    """Runs a ``CascadeTransformer`` with per-question pruning at its exits.

    ``drop_ratios``: one α for all exits or one per exit but the last (default: the ratios saved
    with the model, else none). ``thresholds`` replaces them by score thresholds. Questions are packed
    into batches of about ``max_rows`` candidates (a bigger question stays whole, alone); inside a
    batch each layer runs on length-sorted mini-batches of ``batch_size`` rows, re-formed after every
    exit from the rows still alive.
    """

    def __init__(
        self,
        model: CascadeTransformer,
        drop_ratios: float | Sequence[float] | None = None,
        thresholds: Sequence[float] | None = None,
        batch_size: int = 64,
        max_rows: int = 2048,
        precision: Precision = "fp32",
    ) -> None:
        saved = model.config.drop_ratios if thresholds is None else None
        ratios = drop_ratios if drop_ratios is not None else saved
        super().__init__(len(model.exits), model.encoder.num_layers, max_rows, ratios, thresholds)
        self.model, self.batch_size, self.precision = model, batch_size, precision

    def _run_chunk(
        self, questions: list[str], texts: list[str], groups: Tensor, n_groups: int
    ) -> CascadeTrace:
        features = self.model.featurize(questions, texts)
        lengths = torch.tensor(features.lengths)
        pad_id = self.model.tokenizer.pad_token_id
        exits = self.model.exits
        store: dict[int, Tensor] = {}
        was_training = self.model.training
        self.model.eval()
        with torch.inference_mode(), apply_precision(self.model, self.precision) as model:
            encoder = model.encoder
            encoder.cost.reset()

            def score_stage(i: int, alive: Tensor) -> Tensor:
                nonlocal store
                # Rows dropped at the previous exit leave the store (their states are copies, so
                # the memory is freed with them).
                store = {r: store[r] for r in alive.tolist()} if i else {}
                out = torch.empty(len(alive))
                for pos in length_batches(lengths[alive].tolist(), self.batch_size):
                    rows = alive[pos].tolist()
                    if i == 0:
                        batch = collate(features, rows, pad_id)
                        mask = batch["attention_mask"]
                        hidden = encoder.embed(batch["input_ids"], mask, batch["token_type_ids"]).hidden
                    else:
                        hidden = pad_sequence([store[r] for r in rows], batch_first=True)
                        mask = (torch.arange(hidden.shape[1]) < lengths[rows].unsqueeze(1)).long()
                    for layer in range(exits[i - 1] if i else 0, exits[i]):
                        hidden = encoder.run_layer(layer, hidden, mask)
                    out[pos] = model.heads[i](hidden, mask).float()
                    if i < len(exits) - 1:
                        for j, r in enumerate(rows):
                            store[r] = hidden[j, : int(lengths[r])].clone()
                return out

            trace = prune_loop(groups, len(exits), score_stage, self.drop_ratios, self.thresholds, n_groups)
            self.units += encoder.cost.layer_units
            self.flops += encoder.cost.flops
        self.model.train(was_training)
        return trace


class SequentialRanker(_PrunedRanker):
    """The SR baseline: independently trained monolithic models of growing depth in sequence, each
    scoring only what the previous one kept; nothing is shared, so every stage starts at layer 0."""

    def __init__(
        self,
        models: Sequence[CrossEncoder],
        drop_ratios: float | Sequence[float] = 0.0,
        thresholds: Sequence[float] | None = None,
        batch_size: int = 64,
        max_rows: int = 2048,
    ) -> None:
        depths = [m.encoder.num_layers for m in models]
        if len(models) < 2 or any(b <= a for a, b in itertools.pairwise(depths)):
            raise ValueError(f"need two or more models in increasing depth, got depths {depths}")
        super().__init__(len(models), depths[-1], max_rows, drop_ratios, thresholds)
        self.models, self.depths = list(models), depths
        for m in self.models:
            m.batch_size = batch_size

    def _run_chunk(
        self, questions: list[str], texts: list[str], groups: Tensor, n_groups: int
    ) -> CascadeTrace:
        def score_stage(i: int, alive: Tensor) -> Tensor:
            rows, model = alive.tolist(), self.models[i]
            scores = model.score_pairs([questions[r] for r in rows], [texts[r] for r in rows])
            self.units += model.last_stats.layer_units
            self.flops += model.last_stats.flops
            return torch.tensor(scores)

        return prune_loop(groups, self.n_stages, score_stage, self.drop_ratios, self.thresholds, n_groups)
