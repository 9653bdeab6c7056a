"""The reader's question-time settings, chosen on dev and saved beside it as ``policy.json``.

A reader folder may carry the settings its answering methods use when a flag does not say otherwise
(the budget, the threshold, towers kept, how the answer across passages weighs the has-answer
probability) and, in a ``scheduler`` subfolder, the learned SkylineBuilder policy trained for it. The
shipped ``reader`` carries both, so ``sieveqa answer ... --method skyline`` needs no other flag.
Precedence: a flag (or a request's setting) > the reader's policy > the defaults below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from sieveqa.errors import ConfigError
from sieveqa.runtime.answer.schedulers import KEEP
from sieveqa.runtime.policy import Policy

__all__ = ["NO_SCHEDULER", "OWN_SCHEDULER", "SCHEDULER_FOLDER", "ReaderPolicy"]

#: The subfolder of a reader folder that holds its learned scheduler.
SCHEDULER_FOLDER = "scheduler"
#: ``--scheduler none``: SkylineBuilder(-RL), calibrated probabilities, even where the reader ships a policy.
NO_SCHEDULER = "none"
#: ``--scheduler learned``: the reader's own learned scheduler, even where dev preferred probabilities.
OWN_SCHEDULER = "learned"


@dataclass(frozen=True)
class ReaderPolicy(Policy):
    """Settings of the reader methods (``reader``, ``tower``, ``skyline``) for one reader."""

    kind = "reader"

    #: The answer across passages maximizes ``has_weight * log P(has) + log P(start) + log P(end)``:
    #: 0 trusts the span alone, 1 the joint probability, large values read passage-first.
    has_weight: float = 1.0
    threshold: float = 0.9  # tower: stop a passage at this calibrated P(no answer)
    budget: float = 2.0  # skyline: layers per passage
    tower_m: int = KEEP["tower"]  # towers kept for the answer
    skyline_m: int = KEEP["skyline"]
    learned_m: int = KEEP["learned"]
    #: The learned scheduler's folder relative to the reader's (None: the reader ships none).
    scheduler: str | None = None
    #: Whether ``skyline`` uses that scheduler by default (dev preferred it to calibrated probabilities).
    learned: bool = True

    def __post_init__(self) -> None:
        if not (self.has_weight >= 0 and math.isfinite(self.has_weight)):
            raise ConfigError(f"has_weight must be a finite number >= 0, got {self.has_weight}")
        if not 0 < self.threshold <= 1:
            raise ConfigError(f"threshold must be a probability in (0, 1], got {self.threshold}")
        if not (0 < self.budget < math.inf):
            raise ConfigError(f"budget must be finite layers per passage above 0, got {self.budget}")
        for name in ("tower_m", "skyline_m", "learned_m"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")

    def keep(self, schedule: str) -> int | None:
        """Towers kept for the answer by ``schedule`` (tower, skyline, learned; else None)."""
        return {"tower": self.tower_m, "skyline": self.skyline_m, "learned": self.learned_m}.get(schedule)

    def scheduler_path(self, reader_folder: Path | None) -> Path | None:
        """The learned scheduler this policy names, inside ``reader_folder`` (None: none)."""
        if self.scheduler is None or reader_folder is None:
            return None
        path = (reader_folder / self.scheduler).resolve()
        if not path.is_relative_to(reader_folder.resolve()) or not path.is_dir():
            raise ConfigError(
                f"{reader_folder}/policy.json: scheduler {self.scheduler!r} is not a folder in the reader's"
            )
        return path

    def resolve_scheduler(self, given: str | None, reader_folder: Path | None) -> str | None:
        """The scheduler a skyline run uses: ``--scheduler`` (``none``: probabilities; ``learned``:
        the reader's own), else the reader's own where dev preferred it."""
        if given == NO_SCHEDULER or (given is None and not self.learned):
            return None
        if given is not None and given != OWN_SCHEDULER:
            return given
        path = self.scheduler_path(reader_folder)
        if path is None and given == OWN_SCHEDULER:
            raise ConfigError(f"--scheduler learned: {reader_folder} ships no learned scheduler")
        return None if path is None else str(path)
