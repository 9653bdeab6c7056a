"""Towers built for real on the reader's encoder equal towers replayed from one static reading, for
every schedule; building obeys heights, budgets and thresholds."""

import pytest
import torch

from sieveqa.data.open_qa import OpenExample, RetrievedPassage
from sieveqa.evaluation.odqa import read_table, replay
from sieveqa.models.reader import ReaderConfig, ReaderModel, SpanGuess
from sieveqa.runtime.answer.schedulers import Schedule, run_schedule
from sieveqa.runtime.answer.towers import LiveTowers, ReplayTowers

PASSAGES = [
    "The capital of France is Paris, a city on the Seine with many museums and old bridges.",
    "Berlin is the capital of Germany.",
    "Rome is an old city.",
    "Madrid is in Spain, and it is large.",
]
EXAMPLE = OpenExample(
    "q",
    "What is the capital of France?",
    ["Paris"],
    [RetrievedPassage(str(i), p) for i, p in enumerate(PASSAGES)],
)


@pytest.fixture(scope="module")
def reader() -> ReaderModel:
    torch.manual_seed(1)
    return ReaderModel(
        ReaderConfig(backbone="tiny", max_length=24, stride=4, temperatures=[0.5, 1.0, 2.0, 1.0])
    )


SCHEDULES = [
    Schedule("standard"),
    Schedule("top-k", k=2),
    Schedule("tower", threshold=0.5),
    Schedule("tower", threshold=0.5, strategy="any", m=2),
    Schedule("skyline", budget=1.5, m=2),
    Schedule("skyline", budget=2.0, group=3, init_priority=0.0),
]


@pytest.mark.parametrize(
    ("schedule", "buckets"),
    [*((s, False) for s in SCHEDULES), (SCHEDULES[2], True), (SCHEDULES[4], True)],
    ids=lambda x: f"{x.method}-{x.strategy}-{x.group}" if isinstance(x, Schedule) else f"buckets={x}",
)
def test_live_towers_equal_replayed_towers(reader: ReaderModel, schedule: Schedule, buckets: bool) -> None:
    """Also with towers built in bucketed batch shapes (bf16's), padding rows and tokens included."""
    reader.buckets = buckets
    table = read_table(reader, [EXAMPLE])
    assert table.rows[0][0] > 1  # the first passage is read in windows
    (replayed,), (built,) = replay(table, schedule, reader.config.temperatures)
    with reader.inference() as model:
        live = LiveTowers(model, EXAMPLE.question, PASSAGES)
        outcome = run_schedule(live, schedule)
    assert (outcome.tower, outcome.start, outcome.end) == (replayed.tower, replayed.start, replayed.end)
    assert outcome.score == pytest.approx(replayed.score, abs=1e-4)
    assert (outcome.tower_layers, outcome.layer_units) == (replayed.tower_layers, replayed.layer_units)
    assert live.height == built.height and live.steps == built.steps
    assert live.cost.layer_units == live.layer_units
    reader.buckets = None


def _table(probs: list[list[float]]) -> ReplayTowers:
    """Towers whose has-answer logit after each layer is given (as a probability)."""
    logit = lambda p: float(torch.logit(torch.tensor(p)))  # noqa: E731
    rows = [[SpanGuess(logit(p), 0, 1, -1.0) for p in tower] for tower in probs]
    return ReplayTowers(rows, depth=len(probs[0]), exits=range(1, len(probs[0]) + 1))


def test_skyline_builds_the_most_promising_tower_within_its_budget() -> None:
    towers = _table([[0.2, 0.1, 0.1], [0.6, 0.7, 0.9], [0.3, 0.2, 0.1]])
    run_schedule(towers, Schedule("skyline", budget=5 / 3, init_priority=1.0, m=1, strategy="any"))
    # every tower is read once (unread priority 1.0 is highest), then tower 1 is built on
    assert towers.steps == [0, 1, 2, 1, 1]
    assert towers.height == [1, 3, 1]


def test_tower_builder_stops_towers_without_an_answer() -> None:
    towers = _table([[0.05, 0.5, 0.5], [0.6, 0.7, 0.9], [0.3, 0.02, 0.1]])
    outcome = run_schedule(towers, Schedule("tower", threshold=0.9, m=1, strategy="any"))
    assert towers.height == [1, 3, 2]
    assert outcome.tower == 1 and outcome.tower_layers == 6


def test_last_layer_strategy_finishes_the_kept_towers() -> None:
    towers = _table([[0.05, 0.5, 0.5], [0.6, 0.7, 0.9], [0.3, 0.02, 0.1]])
    run_schedule(towers, Schedule("skyline", budget=1.0, m=2, init_priority=1.0))
    assert sorted(towers.height) == [1, 3, 3]


def test_a_tower_cannot_be_built_past_full_height() -> None:
    towers = _table([[0.5, 0.5]])
    towers.finish([0])
    with pytest.raises(ValueError, match="below height 2"):
        towers.build([0])
