"""Schedule settings are checked before any reading starts."""

import pytest

from sieveqa.errors import ConfigError
from sieveqa.models.reader import SpanGuess
from sieveqa.runtime.answer.schedulers import Schedule, run_schedule
from sieveqa.runtime.answer.towers import ReplayTowers


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"method": "skyline", "budget": 0},
            "--budget must be a finite number of layers per passage above 0",
        ),
        ({"method": "skyline", "budget": float("inf")}, "finite"),  # was an OverflowError later
        ({"method": "skyline", "budget": 1e400}, "finite"),
        ({"method": "skyline", "budget": -1.0}, "above 0"),
        ({"method": "learned", "budget": None}, "above 0"),
        ({"method": "skyline", "budget": float("nan")}, "above 0"),
        ({"method": "nope"}, "--method must be one of"),
        ({"method": "tower", "strategy": "middle"}, "--strategy"),
        ({"method": "tower", "m": 0}, "^--m must be >= 1, got 0$"),
        ({"method": "top-k", "k": 0}, "^--k must be >= 1, got 0$"),
        ({"method": "tower", "threshold": 1.5}, r"^--threshold must be a probability in \(0, 1\], got 1.5$"),
    ],
)
def test_bad_schedules_are_refused(settings: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Schedule(**settings)


def test_static_methods_need_no_budget() -> None:
    assert Schedule("standard").budget is None
    assert Schedule("top-k", k=3).k == 3


def test_each_method_keeps_its_dev_chosen_towers_unless_m_is_given() -> None:
    assert Schedule("skyline", budget=1.0).keep == 1
    assert Schedule("learned", budget=1.0).keep == 3
    assert Schedule("tower").keep == 5
    assert Schedule("learned", budget=1.0, m=2).keep == 2
    assert Schedule("skyline", budget=1.0).init_priority == 0.0


def test_a_small_budget_over_few_passages_still_reads_one() -> None:
    # 0.25 layers per passage over 2 passages rounded to no layer at all: no answer (found by the
    # shipped reader's default budget on the demo corpus).
    table = [[SpanGuess(1.0, 0, 2, -1.0)] * 2, [SpanGuess(0.0, 0, 1, -2.0)] * 2]
    towers = ReplayTowers(table, depth=2, exits=[1, 2])
    outcome = run_schedule(towers, Schedule("skyline", budget=0.25, m=1))
    assert outcome.tower == 0 and towers.tower_layers == 2  # one layer scheduled, then finished
