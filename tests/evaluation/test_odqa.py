"""ODQA evaluation: EM/F1 and layers of outcomes, the analysis of how layers were spent, cached tables."""

from pathlib import Path

import pytest
import torch

from sieveqa.data.open_qa import OpenExample, RetrievedPassage
from sieveqa.evaluation.odqa import (
    ReadTable,
    analyse,
    answer_reward,
    cached_table,
    evaluate_schedule,
    read_table,
    score_outcomes,
)
from sieveqa.models.reader import ReaderConfig, ReaderModel, SpanGuess
from sieveqa.runtime.answer.schedulers import Outcome, Schedule
from sieveqa.runtime.answer.towers import ReplayTowers

EXAMPLE = OpenExample(
    "q",
    "Who wrote it?",
    ["Ada Lovelace"],
    [RetrievedPassage("a", "It was Ada Lovelace."), RetrievedPassage("b", "No.")],
)


def test_outcomes_score_em_f1_and_layers() -> None:
    right = Outcome(0, 7, 19, -1.0, tower_layers=6, layer_units=7)
    partial = Outcome(0, 11, 19, -1.0, tower_layers=2, layer_units=2)
    scores = score_outcomes([EXAMPLE, EXAMPLE], [right, partial])
    assert scores["em"] == 50.0
    assert scores["f1"] == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert scores["layers_per_passage"] == 2.0 and scores["layer_units"] == 4.5
    nothing = score_outcomes([EXAMPLE], [Outcome(-1, -1, -1, float("-inf"), 0, 0)])
    assert nothing["em"] == 0.0


def test_the_answer_reward_is_the_em_of_what_the_towers_answer() -> None:
    """Passage "a" gives "Lovelace" after its first exit and "Ada Lovelace" after its last; "b" gives
    "No.". The reward answers as the schedule would: the kept tower, finished under ``last``."""
    a = [SpanGuess(1.0, 11, 19, -1.0), SpanGuess(1.0, 11, 19, -1.0), SpanGuess(2.0, 7, 19, -0.5)]
    b = [SpanGuess(0.0, 0, 3, -1.0)] * 3
    last = answer_reward([EXAMPLE], Schedule("learned", budget=1.0, m=1))
    where_they_stand = answer_reward([EXAMPLE], Schedule("learned", budget=1.0, m=1, strategy="any"))

    def built(*steps: int) -> ReplayTowers:
        towers = ReplayTowers([a, b], 3, [1, 2, 3])
        for t in steps:
            towers.build([t])
        return towers

    assert last(0, built(0)) == 1.0  # "a" is kept and read to its last exit
    assert where_they_stand(0, built(0)) == 0.0  # "a" read once says "Lovelace"
    assert last(0, built(1, 1, 0)) == 0.0  # the higher tower "b" is kept


def test_analysis_counts_heights_ranks_flips_and_precision() -> None:
    guesses = [[[SpanGuess(0.0, 0, 1, 0.0)] * 3 for _ in range(3)]]
    table = ReadTable(["q"], guesses, [[1, 1, 1]], [[False, True, False]], 3, [1, 2, 3])
    towers = ReplayTowers(guesses[0], 3, [1, 2, 3])
    for t in (0, 1, 1, 2, 1):
        towers.build([t])
    stats = analyse(table, [towers])
    assert towers.height == [1, 3, 1]
    assert stats["height_variance"] == pytest.approx(8 / 9)
    assert stats["average_rank"] == pytest.approx((1 + 2 + 2 + 3 + 2) / 5)
    assert stats["flips"] == 3
    assert stats["height_with_answer"] == 3 and stats["height_without_answer"] == 1
    assert stats["hap"] == pytest.approx(60.0)


def test_tables_are_cached_by_model_and_data(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path))
    torch.manual_seed(0)
    reader = ReaderModel(ReaderConfig(backbone="tiny", max_length=32))
    first = cached_table(reader, [EXAMPLE])
    assert len(list((tmp_path / "reader-tables").glob("*.json.gz"))) == 1
    again = cached_table(reader, [EXAMPLE])
    assert again == first == read_table(reader, [EXAMPLE])
    reader.config.temperatures = [2.0] * 4  # calibration does not change the raw readings
    assert cached_table(reader, [EXAMPLE]) == first
    cached_table(reader, [EXAMPLE], passages=1)
    assert len(list((tmp_path / "reader-tables").glob("*.json.gz"))) == 2


def test_a_question_without_passages_gets_an_empty_answer(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path))
    reader = ReaderModel(ReaderConfig(backbone="tiny", max_length=32))
    empty = OpenExample("e", "Who?", ["x"], [])
    for live in (True, False):
        report = evaluate_schedule(reader, [empty, EXAMPLE], Schedule("skyline", budget=1.0), live=live)
        assert report["em"] <= 50.0 and report["layers_per_passage"] >= 0
