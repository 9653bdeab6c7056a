"""Which tower gets the next layer: the static readers, TowerBuilder and SkylineBuilder.

- ``standard``: every passage to full height (the paper's standard baseline); with a reader trained
  shallower, the efficient baseline.
- ``top-k``: only the ``k`` best-retrieved passages, to full height.
- ``tower`` (TowerBuilder, section 3.1): each tower is built until its calibrated probability of *not*
  holding the answer reaches ``threshold`` (Schwartz et al.'s early exit, with the paper's exit
  probability), or full height. Towers are independent, so they are advanced together.
- ``skyline`` (SkylineBuilder(-RL), section 3.2): one priority queue over all towers by calibrated
  has-answer probability (``init_priority`` for a tower not read yet) until ``budget`` layers per
  passage are spent.
- ``learned`` (SkylineBuilder, section 3.3): the same loop, priorities from a trained
  :class:`~sieveqa.models.skyline_policy.SkylinePolicy`, greedy.

The adaptive methods then keep the ``m`` highest towers (height, then has-answer probability), build
them to full height under the ``last`` strategy (or read them where they stand: ``any``) and answer
with the best span among them by ``has_weight * log P(has) + log P(start) + log P(end)`` (chosen on
dev). ``group`` towers are built per step (1: the paper's one at a time; more costs fewer, larger steps
on a CPU).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from sieveqa.errors import ConfigError
from sieveqa.models.skyline_policy import SkylinePolicy
from sieveqa.runtime.answer.towers import Towers

METHODS = ("standard", "top-k", "tower", "skyline", "learned")
STRATEGIES = ("last", "any")
# Towers kept for the answer by default: each adaptive method's choice on squad-open-mini dev0 for the
# shipped recipe's reader (docs/RESULTS.md, issue 12).
KEEP = {"tower": 5, "skyline": 1, "learned": 3}
Priority = Callable[[Towers, list[int]], list[float]]


@dataclass(frozen=True)
class Schedule:
    """A tower-building policy and its settings (what ``sieveqa eval-reader --method`` selects)."""

    method: str = "skyline"
    budget: float | None = None  # average layers per passage while scheduling (skyline, learned)
    threshold: float = 0.9  # tower: stop a tower when P(no answer) reaches it
    k: int = 5  # top-k
    m: int | None = None  # towers kept for the answer (None: the method's default, KEEP)
    strategy: str = "last"
    init_priority: float = 0.0  # skyline: priority of a tower not read yet (chosen on dev0)
    group: int = 1  # towers built per step (skyline, learned)
    has_weight: float = 1.0  # the answer across towers: weight of log P(has) beside the span's

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"--method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"--strategy must be 'last' or 'any', got {self.strategy!r}")
        if self.method in ("skyline", "learned") and (self.budget is None or not 0 < self.budget < math.inf):
            raise ConfigError(
                f"--budget must be a finite number of layers per passage above 0, got {self.budget}"
            )
        if not 0 < self.threshold <= 1:
            raise ConfigError(f"--threshold must be a probability in (0, 1], got {self.threshold}")
        if not (self.has_weight >= 0 and math.isfinite(self.has_weight)):
            raise ConfigError(f"--has-weight must be a finite number >= 0, got {self.has_weight}")
        for flag, value in (("--k", self.k), ("--m", self.keep), ("--group", self.group)):
            if value < 1:
                raise ConfigError(f"{flag} must be >= 1, got {value}")

    @property
    def keep(self) -> int:
        """Towers kept for the answer: ``m``, or the method's default."""
        return self.m if self.m is not None else KEEP.get(self.method, 1)


@dataclass(frozen=True)
class Outcome:
    """What a schedule answered (``tower`` -1 when no tower gave a span) and what it built."""

    tower: int
    start: int
    end: int
    score: float
    tower_layers: int
    layer_units: int


def probability_priority(init: float) -> Priority:
    """SkylineBuilder(-RL): the calibrated has-answer probability, ``init`` before a tower is read."""

    def priority(towers: Towers, open_: list[int]) -> list[float]:
        return [p if (p := towers.has_answer(t)) is not None else init for t in open_]

    return priority


def policy_priority(policy: SkylinePolicy) -> Priority:
    """SkylineBuilder: the learned policy's priorities."""

    def priority(towers: Towers, open_: list[int]) -> list[float]:
        with torch.inference_mode():
            return policy.priorities(*policy_inputs(towers, open_)).tolist()

    return priority


def policy_inputs(towers: Towers, open_: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The policy's view of the open towers: has-answer probability (0 before a reading), height, rank."""
    probs = [p if (p := towers.has_answer(t)) is not None else 0.0 for t in open_]
    return (
        torch.tensor(probs, dtype=torch.float32),
        torch.tensor([towers.height[t] for t in open_], dtype=torch.long),
        torch.tensor(list(open_), dtype=torch.long),
    )


def build_by_priority(towers: Towers, budget: float, priority: Priority, group: int = 1) -> None:
    """Spend ``budget`` layers per passage on the highest-priority open towers, ``group`` a step."""
    # At least one layer: a small budget over few passages (0.25 x 2) must still read something.
    total = max(1, round(budget * len(towers)))
    while (left := total - towers.tower_layers) > 0 and (open_ := towers.open()):
        scores = priority(towers, open_)
        order = sorted(range(len(open_)), key=lambda i: (-scores[i], open_[i]))
        towers.build([open_[i] for i in order[: min(group, left)]])


def build_towers(towers: Towers, threshold: float) -> None:
    """TowerBuilder: every tower grows until P(no answer) >= ``threshold`` or full height."""
    active = towers.open()
    while active:
        towers.build(active)
        active = [
            t
            for t in active
            if towers.height[t] < towers.depth
            and not ((p := towers.has_answer(t)) is not None and 1 - p >= threshold)
        ]


def run_schedule(towers: Towers, schedule: Schedule, policy: SkylinePolicy | None = None) -> Outcome:
    """Build ``towers`` by ``schedule``, pick the answer tower and span."""
    n = len(towers)
    if schedule.method == "standard":
        towers.finish(range(n))
    elif schedule.method == "top-k":
        towers.finish(range(min(schedule.k, n)))
    elif schedule.method == "tower":
        build_towers(towers, schedule.threshold)
    else:
        assert schedule.budget is not None
        if schedule.method == "learned":
            if policy is None:
                raise ConfigError("the learned SkylineBuilder needs a trained scheduler (--scheduler)")
            priority = policy_priority(policy)
        else:
            priority = probability_priority(schedule.init_priority)
        build_by_priority(towers, schedule.budget, priority, schedule.group)
    return answer(towers, schedule)


def answer(towers: Towers, schedule: Schedule) -> Outcome:
    """Keep the ``m`` highest towers, finish them under the last-layer strategy, answer from them."""
    built = [t for t in range(len(towers)) if towers.height[t] > 0]
    if schedule.method in ("tower", "skyline", "learned"):
        built.sort(key=lambda t: (-towers.height[t], -(towers.has_answer(t) or 0.0), t))
        kept = built[: schedule.keep]
    else:  # the static readers read whole passages and answer from all of them
        kept = built
    if schedule.strategy == "last":
        towers.finish(kept)
    best, best_t, best_key = None, -1, -math.inf
    for t in kept:
        r = towers.reading[t]
        if r is not None and r.start >= 0 and (best is None or r.weighted(schedule.has_weight) > best_key):
            best, best_t, best_key = r, t, r.weighted(schedule.has_weight)
    if best is None:
        return Outcome(-1, -1, -1, float("-inf"), towers.tower_layers, towers.layer_units)
    return Outcome(best_t, best.start, best.end, best.score, towers.tower_layers, towers.layer_units)
