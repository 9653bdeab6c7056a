"""Ensemble weights tuned on dev: the search finds the weights a hand calculation says are needed."""

from __future__ import annotations

import pytest
import torch

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import ConfigError
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


def test_tuning_outweighs_a_misleading_member(monkeypatch: pytest.MonkeyPatch) -> None:
    # "good" puts every correct answer first by a margin of 1; "loud" puts it last by 3, so equal
    # weights rank every question wrong and only weights of more than 3 : 1 rank all right.
    columns = {"good": [1.0, 0.0] * 6, "loud": [0.0, 3.0] * 6}
    monkeypatch.setattr(
        ensemble_search, "cached_scores", lambda m, *a, **k: torch.tensor(columns[m]).unsqueeze(1)
    )
    result = tune_ensemble(["good", "loud"], "toy", _pairs(6), trials=60, metric="p@1")
    assert result.members == {"good": 1.0, "loud": 0.0}
    assert result.value == 1.0
    good, loud = result.spec.weights
    assert good > 3 * loud and sum(result.spec.weights) == pytest.approx(1.0)
    assert result.spec.tuning["metric"] == "p@1"


def test_bad_requests_are_refused_before_scoring() -> None:
    with pytest.raises(ConfigError, match="needs at least 2"):
        tune_ensemble(["default"], "toy", _pairs(2))
    with pytest.raises(ConfigError, match="--metric must be one of"):
        tune_ensemble(["a", "b"], "toy", _pairs(2), metric="accuracy")
    with pytest.raises(ConfigError, match="--trials must be at least 3"):
        tune_ensemble(["a", "b"], "toy", _pairs(2), trials=2)
