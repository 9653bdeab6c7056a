"""Cascade inference (section 4.3.2): all candidates of a question climb one encoder together and each
exit drops a fixed share of them, per question, even when many questions share one batch.

``CascadeRanker`` keeps the candidates' hidden states in a ``PackedState`` (padded batches, the
survivors gathered into new ones after each exit) and advances only the survivors, exit by exit;
``SequentialRanker`` is the paper's baseline of independent models of growing depth. Both run the
pruning loop of ``runtime.trace`` and apply a ``CascadePolicy``.
"""

from __future__ import annotations

import itertools
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

import torch
from torch import Tensor
from tqdm.auto import tqdm

from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError, shorten
from sieveqa.features import Features
from sieveqa.models.base import Ranker, RankResult, flatten_pairs, regroup
from sieveqa.models.cascade import CascadeTransformer
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.packed import PackedState, head_scores
from sieveqa.runtime.policy import Policy
from sieveqa.runtime.pruning import check_drop_ratios, ratio_for_budget
from sieveqa.runtime.trace import (
    CascadeTrace,
    best_windows,
    empty_trace,
    groups_of,
    merge_traces,
    prune_loop,
    relative_cost,
)


@dataclass(frozen=True)
class CascadePolicy(Policy):
    """Drop ⌊α·k⌋ of each question's candidates after every exit but the last (one α for all exits,
    or one each), or, with ``thresholds``, every candidate scoring below the exit's threshold."""

    kind = "cascade"
    drop_ratios: tuple[float, ...] | None = None
    thresholds: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("drop_ratios", "thresholds"):
            value = getattr(self, name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                value = (value,)
            numbers = isinstance(value, list | tuple) and all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in value
            )
            if value is not None and not numbers:
                raise ConfigError(f"{name} must be a list of numbers, got {shorten(repr(value), 60)}")
            if value is not None:
                object.__setattr__(self, name, tuple(float(x) for x in value))
        if self.drop_ratios is not None and self.thresholds is not None:
            raise ConfigError("a cascade policy has drop ratios or thresholds, not both")
        if self.drop_ratios is not None:
            check_drop_ratios(self.drop_ratios, len(self.drop_ratios) + 1)  # each in [0, 1)

    def resolved(self, n_stages: int) -> CascadePolicy:
        """The policy with one setting per pruning stage (α = 0 when it has none)."""
        if self.thresholds is not None:
            if len(self.thresholds) != n_stages - 1:
                raise ConfigError(
                    f"need {n_stages - 1} thresholds (one per exit but the last), got {len(self.thresholds)}"
                )
            return CascadePolicy(thresholds=tuple(float(t) for t in self.thresholds))
        ratios = check_drop_ratios(self.drop_ratios if self.drop_ratios is not None else 0.0, n_stages)
        return CascadePolicy(drop_ratios=tuple(ratios))


@dataclass(kw_only=True)
class CascadeResult(RankResult):
    """A pruned run: scores that sort like the cascade's ranking, its trace, and its cost against
    running every pair through every layer."""

    trace: CascadeTrace
    exits: list[int]
    full_depth: int
    policy: CascadePolicy
    #: Scores are the exit reached plus the probability there (see ``CascadeTrace.cascade_scores``).
    logits: ClassVar[bool] = False

    @property
    def relative_cost(self) -> float:
        return relative_cost(self.cost.layer_units, self.n_pairs, self.full_depth)

    def orders(self) -> list[list[int]]:
        return self.trace.orders()

    def own_scores(self) -> list[list[float]]:
        """The logit of the last exit each candidate reached (``scores`` add the exit's index to its
        sigmoid, which sorts right but squeezes the best answers into the last 0.01 below an integer)."""
        flat = self.trace.stopped_at(self.trace.scores.shape[1] - 1)[1].tolist()
        out, start = [], 0
        for group in self.scores:
            out.append(flat[start : start + len(group)])
            start += len(group)
        return out

    def variants(self) -> dict[str, list[list[int]]]:
        """The ranking of the cascade stopped at each exit (at α = 0: each exit alone)."""
        return {f"L{layer}": self.trace.orders(i) for i, layer in enumerate(self.exits)}

    def info(self) -> dict[str, Any]:
        ratios, cuts = self.policy.drop_ratios, self.policy.thresholds
        return {
            "exits": self.exits,
            "drop_ratios": None if ratios is None else list(ratios),
            "thresholds": None if cuts is None else list(cuts),
            "relative_cost": round(self.relative_cost, 4),
            "survivors": self.trace.survivors,
        }


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

    def __init__(self, stages: Sequence[int], max_rows: int, policy: CascadePolicy) -> None:
        if max_rows < 1:
            raise ConfigError(f"max_rows must be >= 1, got {max_rows}")
        self.stages, self.max_rows = list(stages), max_rows
        self.policy = policy.resolved(len(stages))

    @property
    def drop_ratios(self) -> list[float] | None:
        return None if self.policy.drop_ratios is None else list(self.policy.drop_ratios)

    @property
    def thresholds(self) -> list[float] | None:
        return None if self.policy.thresholds is None else list(self.policy.thresholds)

    @abstractmethod
    def _run_chunk(
        self, questions: list[str], texts: list[str], groups: Tensor, n_groups: int, cost: Cost
    ) -> CascadeTrace:
        """Prune and score one batch of whole questions, adding what it cost to ``cost``."""

    def _prune(self, groups: Tensor, n_groups: int, score_stage: Any) -> CascadeTrace:
        return prune_loop(groups, len(self.stages), score_stage, self.drop_ratios, self.thresholds, n_groups)

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> CascadeResult:
        """Rank every example's candidates; the result also says what it cost."""
        started, cost, traces = time.perf_counter(), Cost(), []
        bar = tqdm(total=len(examples), desc="ranking", unit="q", disable=not progress, leave=False)
        for lo, hi in _question_chunks(examples, self.max_rows):
            chunk = examples[lo:hi]
            traces.append(self._run_chunk(*flatten_pairs(chunk), groups_of(chunk), len(chunk), cost))
            bar.update(len(chunk))
        bar.close()
        trace = merge_traces(traces) if traces else empty_trace(len(self.stages))
        cost.seconds = time.perf_counter() - started
        scores = regroup(examples, trace.cascade_scores().tolist())
        return CascadeResult(
            scores, cost, trace=trace, exits=self.stages, full_depth=self.stages[-1], policy=self.policy
        )


class CascadeRanker(_PrunedRanker):
    """Runs a ``CascadeTransformer`` with per-question pruning at its exits.

    ``drop_ratios`` (one α for all exits or one per exit but the last) or ``thresholds`` override
    ``policy``, which defaults to the one saved beside the model (else no pruning). Questions are
    packed into batches of about ``max_rows`` candidates (a bigger question stays whole, alone);
    inside a batch each layer runs on length-sorted groups of ``batch_size`` rows (default: the
    model's), re-formed after every exit from the rows still alive.
    """

    def __init__(
        self,
        model: CascadeTransformer,
        drop_ratios: float | Sequence[float] | None = None,
        thresholds: Sequence[float] | None = None,
        batch_size: int | None = None,
        max_rows: int = 2048,
        policy: CascadePolicy | None = None,
    ) -> None:
        if drop_ratios is not None or thresholds is not None:
            if drop_ratios is not None and thresholds is not None:
                raise ConfigError("give drop ratios or thresholds, not both")
            ratios = None if drop_ratios is None else tuple(check_drop_ratios(drop_ratios, len(model.exits)))
            policy = CascadePolicy(ratios, None if thresholds is None else tuple(thresholds))
        elif policy is None:
            policy = CascadePolicy.saved(model) or CascadePolicy()
        super().__init__(model.exits, max_rows, policy)
        self.model = model
        self.batch_size = batch_size or model.batch_size

    request_settings = ("alpha", "budget")

    def with_settings(
        self, alpha: float | Sequence[float] | None = None, budget: float | None = None, **other: Any
    ) -> CascadeRanker:
        """This cascade with a request's drop ratios ``alpha``, or the ratio that spends about
        ``budget`` (a share of the full cost, 0-1) of the computation."""
        super().with_settings(**other)
        if alpha is None and budget is None:
            return self
        if alpha is not None and budget is not None:
            raise ConfigError("give alpha or budget, not both")
        ratios = alpha if alpha is not None else ratio_for_budget(budget or 1.0, self.model.exits)
        return CascadeRanker(self.model, drop_ratios=ratios, batch_size=self.batch_size)

    @classmethod
    def from_model(
        cls, model: CascadeTransformer, policy: str | Path | None = None, **overrides: Any
    ) -> Self:
        """The ranker ``load_ranker`` builds: the saved policy, or one read from a ``policy`` file,
        overridden by ``drop_ratios`` / ``thresholds``."""
        unknown = sorted(set(overrides) - {"drop_ratios", "thresholds"})
        if unknown:
            raise ConfigError(f"a cascade takes drop_ratios or thresholds, not {unknown}")
        given = {k: v for k, v in overrides.items() if v is not None}
        base = CascadePolicy.read(policy) if policy is not None else None
        return cls(model, policy=base, **given)

    def _run_chunk(
        self, questions: list[str], texts: list[str], groups: Tensor, n_groups: int, cost: Cost
    ) -> CascadeTrace:
        # A text longer than the model's input is read in windows (each a candidate at the exits, so
        # a ratio counts windows), and keeps its best window, as a ranker's does (PairModel.windows).
        windows = self.model.windows
        features = self.model.pair_rows(questions, texts, windows)
        trace = self._prune_features(
            features, groups[torch.as_tensor(features.source, dtype=torch.long)], n_groups, cost
        )
        return best_windows(trace, features.source, groups) if windows else trace

    def _prune_features(self, features: Features, groups: Tensor, n_groups: int, cost: Cost) -> CascadeTrace:
        exits = self.stages
        with self.model.inference() as model:
            state = PackedState.start(
                model.encoder, features, model.pad_id, self.batch_size, cost, model.shapes
            )

            def score_stage(i: int, alive: Tensor) -> Tensor:
                rows = alive.tolist()
                state.keep(rows)  # rows dropped at the previous exit are gone (their memory freed)
                for _ in range(exits[i] - (exits[i - 1] if i else 0)):
                    state.advance(model.encoder)
                return head_scores(state.groups, model.heads[i], rows)

            return self._prune(groups, n_groups, score_stage)


class SequentialRanker(_PrunedRanker):
    """The SR baseline: independently trained monolithic models of growing depth in sequence, each
    scoring only what the previous one kept; nothing is shared, so every stage starts at layer 0."""

    def __init__(
        self,
        models: Sequence[CrossEncoder],
        drop_ratios: float | Sequence[float] = 0.0,
        thresholds: Sequence[float] | None = None,
        max_rows: int = 2048,
    ) -> None:
        depths = [m.encoder.num_layers for m in models]
        if len(models) < 2 or any(b <= a for a, b in itertools.pairwise(depths)):
            raise ConfigError(f"need two or more models in increasing depth, got depths {depths}")
        if thresholds is not None:
            policy = CascadePolicy(thresholds=tuple(thresholds))
        else:
            policy = CascadePolicy(drop_ratios=tuple(check_drop_ratios(drop_ratios, len(models))))
        super().__init__(depths, max_rows, policy)
        self.models = list(models)

    def _run_chunk(
        self, questions: list[str], texts: list[str], groups: Tensor, n_groups: int, cost: Cost
    ) -> CascadeTrace:
        def score_stage(i: int, alive: Tensor) -> Tensor:
            rows = alive.tolist()
            matrix, spent = self.models[i].score_matrix(
                [questions[r] for r in rows], [texts[r] for r in rows], last_only=True
            )
            cost.add(spent)
            return matrix[:, 0]

        return self._prune(groups, n_groups, score_stage)
