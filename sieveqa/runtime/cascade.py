"""Cascade inference (section 4.3.2): all candidates of a question climb one encoder together and each
exit drops a fixed share of them, per question, even when many questions share one batch.

The same pruning loop drives three rankers: the real cascade (hidden states carried from exit to
exit), the sequential ranker baseline (independent models of growing depth, nothing shared), and a
simulation over exit scores computed once with nothing pruned (what the drop-ratio search uses).
Rows are independent in a transformer, so the three agree wherever their scores agree.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence
from tqdm.auto import tqdm

from sieveqa.batching import collate, length_batches
from sieveqa.data.records import RankingExample, ScoredCandidate
from sieveqa.models.base import Ranker, regroup
from sieveqa.models.cascade import CascadeTransformer, check_drop_ratios
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.precision import Precision, apply_precision
from sieveqa.runtime.pruning import grouped_order, keep_top

StageScorer = Callable[[int, Tensor], Tensor]


@dataclass
class CascadeTrace:
    """Where each candidate left the cascade, and what each exit it reached thought of it.

    ``scores[r, i]`` is exit i's score of row r (NaN where r was dropped before exit i);
    ``survivors[i]`` is how many rows exit i scored. ``chunk_sizes[c][i]`` is the same per batch of
    questions (the batch sizes the paper wants predictable).
    """

    scores: Tensor
    groups: Tensor
    survivors: list[int]
    chunk_sizes: list[list[int]] = field(default_factory=list)

    @property
    def last_exit(self) -> Tensor:
        return (~torch.isnan(self.scores)).sum(dim=1) - 1

    def stopped_at(self, exit_index: int) -> tuple[Tensor, Tensor]:
        """(exit, score) of every row if the cascade had ended at ``exit_index``."""
        exits = self.last_exit.clamp(max=exit_index)
        return exits, self.scores.gather(1, exits.unsqueeze(1)).squeeze(1)

    def orders(self, exit_index: int | None = None) -> list[list[int]]:
        """Per question, its candidates' local indices best first (cascade order)."""
        exits, scores = self.stopped_at(self.scores.shape[1] - 1 if exit_index is None else exit_index)
        order = grouped_order(exits, scores, self.groups)
        counts = torch.bincount(self.groups, minlength=int(self.groups.max()) + 1 if len(self.groups) else 0)
        starts = torch.cumsum(counts, 0) - counts
        out, pos = [], 0
        for start, count in zip(starts.tolist(), counts.tolist(), strict=True):
            out.append([r - start for r in order[pos : pos + count].tolist()])
            pos += count
        return out


def prune_loop(
    groups: Tensor,
    n_stages: int,
    score_stage: StageScorer,
    drop_ratios: Sequence[float] | None = None,
    thresholds: Sequence[float] | None = None,
) -> CascadeTrace:
    """Score rows stage by stage; after each stage but the last drop ⌊α·k⌋ per question (or, with
    ``thresholds``, every row scoring below the stage's threshold).

    ``score_stage(i, rows)`` returns stage i's scores of ``rows`` (indices into ``groups``).
    """
    if (drop_ratios is None) == (thresholds is None):
        raise ValueError("give either drop_ratios or thresholds")
    limits = list(drop_ratios if drop_ratios is not None else thresholds or [])
    if len(limits) != n_stages - 1:
        raise ValueError(
            f"need {n_stages - 1} pruning settings (one per exit but the last), got {len(limits)}"
        )
    n = len(groups)
    scores = torch.full((n, n_stages), float("nan"))
    alive = torch.arange(n)
    survivors = []
    for i in range(n_stages):
        survivors.append(len(alive))
        if len(alive) == 0:
            break
        stage = score_stage(i, alive).float()
        scores[alive, i] = stage
        if i == n_stages - 1:
            break
        fixed = drop_ratios is not None
        alive = alive[keep_top(stage, groups[alive], limits[i]) if fixed else stage >= limits[i]]
    survivors += [0] * (n_stages - len(survivors))
    return CascadeTrace(scores, groups, survivors, [survivors])


def merge_traces(traces: Sequence[CascadeTrace]) -> CascadeTrace:
    """One trace from traces of consecutive batches of questions."""
    offsets, groups, total = [], [], 0
    for t in traces:
        groups.append(t.groups + total)
        total += int(t.groups.max()) + 1 if len(t.groups) else 0
        offsets.append(total)
    return CascadeTrace(
        torch.cat([t.scores for t in traces]),
        torch.cat(groups),
        [sum(col) for col in zip(*(t.survivors for t in traces), strict=True)],
        [size for t in traces for size in t.chunk_sizes],
    )


def simulate(
    exit_scores: Tensor,
    groups: Tensor,
    drop_ratios: Sequence[float] | None = None,
    thresholds: Sequence[float] | None = None,
) -> CascadeTrace:
    """The cascade's decisions from exit scores computed with nothing pruned (rows × exits)."""
    return prune_loop(
        groups, exit_scores.shape[1], lambda i, rows: exit_scores[rows, i], drop_ratios, thresholds
    )


def cascade_layer_units(survivors: Sequence[int], exits: Sequence[int]) -> int:
    """Layer-units a cascade spends: rows scored at each exit times the layers run since the last one."""
    steps = [b - a for a, b in zip([0, *exits[:-1]], exits, strict=True)]
    return sum(k * s for k, s in zip(survivors, steps, strict=True))


def sequential_layer_units(survivors: Sequence[int], depths: Sequence[int]) -> int:
    """Layer-units of a sequential ranker: every stage re-runs its own model from the first layer."""
    return sum(k * d for k, d in zip(survivors, depths, strict=True))


@dataclass
class CascadeResult:
    """A ranking run: the trace, and what it cost against running every pair through every layer."""

    trace: CascadeTrace
    n_pairs: int
    full_depth: int
    layer_units: int
    flops: int = 0
    seconds: float = 0.0

    @property
    def relative_cost(self) -> float:
        """Layer-units spent over those of the full-depth monolithic model (the paper's last column)."""
        return self.layer_units / (self.n_pairs * self.full_depth) if self.n_pairs else 0.0

    @property
    def pairs_per_second(self) -> float:
        return self.n_pairs / self.seconds if self.seconds > 0 else 0.0


def _question_chunks(examples: Sequence[RankingExample], max_rows: int) -> Iterator[tuple[int, int]]:
    """Consecutive (start, end) example ranges with at most ``max_rows`` candidates (whole questions)."""
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
    def _run_chunk(self, questions: list[str], texts: list[str], groups: Tensor) -> CascadeTrace:
        """Prune and score one batch of whole questions, adding what it cost to ``units``/``flops``."""

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> CascadeResult:
        """Rank every example's candidates; the result also says what it cost."""
        traces = []
        self.units = self.flops = 0
        start = time.perf_counter()
        bar = tqdm(total=len(examples), desc="ranking", unit="q", disable=not progress, leave=False)
        for lo, hi in _question_chunks(examples, self.max_rows):
            chunk = examples[lo:hi]
            questions = [ex.question.text for ex in chunk for _ in ex.candidates]
            texts = [c.text for ex in chunk for c in ex.candidates]
            groups = torch.tensor([q for q, ex in enumerate(chunk) for _ in ex.candidates], dtype=torch.long)
            traces.append(self._run_chunk(questions, texts, groups))
            bar.update(len(chunk))
        bar.close()
        seconds = time.perf_counter() - start
        if not traces:
            raise ValueError("nothing to rank: no examples")
        n_pairs = sum(len(ex.candidates) for ex in examples)
        result = CascadeResult(
            merge_traces(traces), n_pairs, self.full_depth, self.units, self.flops, seconds
        )
        self.last_result = result
        return result

    def score(self, examples: Sequence[RankingExample], progress: bool = False) -> list[list[float]]:
        """Each candidate's score at the exit where it stopped. Scores of different exits are not
        comparable, so rank with ``rank`` (or ``run``), which orders by exit first."""
        trace = self.run(examples, progress).trace
        return regroup(examples, trace.stopped_at(self.n_stages - 1)[1].tolist())

    def rank(self, examples: Sequence[RankingExample], progress: bool = False) -> list[list[ScoredCandidate]]:
        trace = self.run(examples, progress).trace
        scores = regroup(examples, trace.stopped_at(self.n_stages - 1)[1].tolist())
        return [
            [ScoredCandidate(ex.candidates[i], sc[i], r + 1) for r, i in enumerate(order)]
            for ex, sc, order in zip(examples, scores, trace.orders(), strict=True)
        ]


class CascadeRanker(_PrunedRanker):
    """Runs a ``CascadeTransformer`` with per-question pruning at its exits.

    ``drop_ratios``: one α for all exits or one per exit but the last (default: the ratios saved
    with the model, else none). ``thresholds`` replaces them by score thresholds. Questions are packed
    into batches of up to ``max_rows`` candidates; inside a batch each layer runs on length-sorted
    mini-batches of ``batch_size`` rows, re-formed after every exit from the rows still alive.
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
        ratios = drop_ratios if drop_ratios is not None else model.config.drop_ratios
        super().__init__(len(model.exits), model.encoder.num_layers, max_rows, ratios, thresholds)
        self.model, self.batch_size, self.precision = model.eval(), batch_size, precision

    def _run_chunk(self, questions: list[str], texts: list[str], groups: Tensor) -> CascadeTrace:
        features = self.model.featurize(questions, texts)
        lengths = torch.tensor(features.lengths)
        pad_id = self.model.tokenizer.pad_token_id
        exits = self.model.exits
        store: dict[int, Tensor] = {}
        with torch.inference_mode(), apply_precision(self.model, self.precision) as model:
            encoder = model.encoder
            encoder.cost.reset()

            def score_stage(i: int, alive: Tensor) -> Tensor:
                nonlocal store
                # Hidden states of rows dropped at the last exit are let go here.
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
                            store[r] = hidden[j, : int(lengths[r])]
                return out

            trace = prune_loop(groups, len(exits), score_stage, self.drop_ratios, self.thresholds)
            self.units += encoder.cost.layer_units
            self.flops += encoder.cost.flops
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
        if len(models) < 2 or depths != sorted(depths):
            raise ValueError(f"need two or more models in increasing depth, got depths {depths}")
        super().__init__(len(models), depths[-1], max_rows, drop_ratios, thresholds)
        self.models, self.depths = list(models), depths
        for m in self.models:
            m.batch_size = batch_size

    def _run_chunk(self, questions: list[str], texts: list[str], groups: Tensor) -> CascadeTrace:
        def score_stage(i: int, alive: Tensor) -> Tensor:
            rows, model = alive.tolist(), self.models[i]
            scores = model.score_pairs([questions[r] for r in rows], [texts[r] for r in rows])
            self.units += model.last_stats.layer_units
            self.flops += model.last_stats.flops
            return torch.tensor(scores)

        return prune_loop(groups, self.n_stages, score_stage, self.drop_ratios, self.thresholds)
