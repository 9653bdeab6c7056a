"""Ensemble weights tuned on dev: the search finds the weights a hand calculation says are needed."""

from __future__ import annotations

import pytest
import torch

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import ConfigError, ModelFormatError
from sieveqa.evaluation import ensemble_search
from sieveqa.evaluation.ensemble_search import tune_ensemble


def _pairs(n: int) -> list[RankingExample]:
    """Questions of two candidates, the correct one first."""
    return [
        RankingExample(
            Question(f"q{i}", "?"), [Candidate(f"q{i}a", "a", True), Candidate(f"q{i}b", "b", False)]
        )
        for i in range(n)
    ]


def test_tuning_finds_the_only_ratio_that_ranks_every_question_right(monkeypatch: pytest.MonkeyPatch) -> None:
    # Per question, correct-minus-wrong margins (first, second): (1, -2) wants w1/w2 > 2, (-1, 4) wants
    # w1/w2 < 4. Either member alone, or equal weights, gets half right; only 2 < w1/w2 < 4 gets all.
    columns = {"first": [1.0, 0.0, 0.0, 1.0] * 3, "second": [0.0, 2.0, 4.0, 0.0] * 3}
    monkeypatch.setattr(ensemble_search, "check_member", lambda m: None)
    monkeypatch.setattr(
        ensemble_search, "cached_scores", lambda m, *a, **k: torch.tensor(columns[m]).unsqueeze(1)
    )
    result = tune_ensemble(["first", "second"], "toy", _pairs(6), trials=80, metric="p@1")
    assert result.members == {"first": 0.5, "second": 0.5}
    assert result.value == 1.0
    first, second = result.spec.weights
    assert 2 < first / second < 4 and sum(result.spec.weights) == pytest.approx(1.0)
    assert result.spec.tuning["metric"] == "p@1"


def test_bad_requests_are_refused_before_scoring(tmp_path) -> None:
    with pytest.raises(ConfigError, match="needs at least 2"):
        tune_ensemble(["default"], "toy", _pairs(2))
    with pytest.raises(ConfigError, match="--metric must be one of"):
        tune_ensemble(["a", "b"], "toy", _pairs(2), metric="accuracy")
    with pytest.raises(ConfigError, match="--trials must be at least 3"):
        tune_ensemble(["a", "b"], "toy", _pairs(2), trials=2)
    with pytest.raises(ModelFormatError, match="neither a shipped model"):
        tune_ensemble(["default", "nope"], "toy", _pairs(2))
