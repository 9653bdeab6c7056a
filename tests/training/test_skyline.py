"""Temperature calibration and the REINFORCE scheduler, on replay tables made by hand."""

import math
import random
from pathlib import Path

import pytest
import torch

from sieveqa.errors import ConfigError
from sieveqa.evaluation.odqa import ReadTable, replay
from sieveqa.models.reader import SpanGuess
from sieveqa.models.skyline_policy import SkylinePolicy
from sieveqa.runtime.answer.schedulers import Schedule, answer
from sieveqa.runtime.answer.towers import Towers
from sieveqa.training.skyline import (
    PolicyOptions,
    calibrate,
    calibration_errors,
    episode,
    returns,
    train_policy,
)


def _table(n_questions: int, seed: int = 0) -> ReadTable:
    """Questions of 6 towers, 3 layers. The answer is in tower 0 or 1 (retrieval ranks matter), and
    the has-answer probability tells only from layer 2 on; the answer tower has the best span."""
    rng = random.Random(seed)
    guesses, labels = [], []
    for _ in range(n_questions):
        answer = rng.randrange(2)
        towers = []
        for t in range(6):
            probs = [0.3, 0.8, 0.9] if t == answer else [0.3, 0.1, 0.05]
            logits = [math.log(p / (1 - p)) + rng.uniform(-0.1, 0.1) for p in probs]
            towers.append([SpanGuess(x, 0, 1, 0.0 if t == answer else -3.0) for x in logits])
        guesses.append(towers)
        labels.append([t == answer for t in range(6)])
    return ReadTable(
        [f"q{i}" for i in range(n_questions)], guesses, [[1] * 6] * n_questions, labels, 3, [1, 2, 3]
    )


def test_calibration_recovers_each_exits_temperature() -> None:
    """Labels drawn from known probabilities; each exit's logits are those log-odds times a scale."""
    rng = random.Random(5)
    scales = [3.0, 1.0, 0.5]
    guesses, labels = [], []
    for _ in range(400):
        p = rng.uniform(0.02, 0.98)
        guesses.append([[SpanGuess(s * math.log(p / (1 - p)), 0, 1, 0.0) for s in scales]])
        labels.append([rng.random() < p])
    table = ReadTable([str(i) for i in range(400)], guesses, [[1]] * 400, labels, 3, [1, 2, 3])
    temps = calibrate(table)
    assert temps == pytest.approx(scales, rel=0.25)
    before, after = calibration_errors(table), calibration_errors(table, temps)
    assert after[0] < before[0] and after[2] < before[2]
    assert max(after) < 0.06


def test_returns_are_discounted_and_pay_for_each_step() -> None:
    assert returns([1.0, 0.0, 1.0], step_cost=0.1, discount=0.5) == pytest.approx(
        [0.9 + 0.5 * (-0.1 + 0.5 * 0.9), -0.1 + 0.5 * 0.9, 0.9]
    )


@pytest.mark.slow
def test_reinforce_learns_to_build_on_answer_towers(tmp_path: Path) -> None:
    train, dev = _table(64, seed=1), _table(48, seed=2)
    schedule = Schedule("learned", budget=1.0, m=1, strategy="any")
    # The answer tower has the best span score, so EM here is "the kept tower holds the answer".

    def validate(policy: SkylinePolicy) -> float:
        outcomes, _ = replay(dev, schedule, policy=policy)
        return 100 * sum(dev.has_answer[q][o.tower] for q, o in enumerate(outcomes)) / len(outcomes)

    untrained = validate(SkylinePolicy())
    options = PolicyOptions(budgets=[1.0], epochs=8, batch_size=16, lr=0.05, seed=3)
    result = train_policy(train, [1.0, 1.0, 1.0], options, validate, tmp_path / "s", progress=False)
    policy = SkylinePolicy.from_pretrained(tmp_path / "s" / "best")
    assert validate(policy) == result["best_dev_em"] > untrained
    assert result["best_dev_em"] >= 90  # build towers 0 and 1 up, instead of reading all six once


def _distractor_table(n_questions: int, seed: int = 0) -> ReadTable:
    """Towers 0 to 3 all hold the answer string, but only tower 0's span is right; the others look
    surer than tower 0 after a first layer, tower 0 only after its second."""
    rng = random.Random(seed)
    guesses = []
    for _ in range(n_questions):
        towers = []
        for t in range(6):
            probs = [0.3, 0.9, 0.95] if t == 0 else [0.7, 0.7, 0.7] if t < 4 else [0.3, 0.1, 0.05]
            logits = [math.log(p / (1 - p)) + rng.uniform(-0.05, 0.05) for p in probs]
            towers.append([SpanGuess(x, t, t + 1, -3.0) for x in logits])
        guesses.append(towers)
    labels = [[t < 4 for t in range(6)] for _ in range(n_questions)]
    return ReadTable(
        [f"q{i}" for i in range(n_questions)], guesses, [[1] * 6] * n_questions, labels, 3, [1, 2, 3]
    )


@pytest.mark.slow
def test_the_answer_reward_credits_what_the_answer_gets_right(tmp_path: Path) -> None:
    """The paper's reward pays for building either answer-holding tower alike; the answer's EM pays
    only for the tower whose span is right, so only that policy learns to build tower 0 up."""
    train, dev = _distractor_table(64, seed=1), _distractor_table(32, seed=2)
    schedule = Schedule("learned", budget=0.5, m=1, strategy="any")

    def right(q: int, towers: Towers) -> float:
        return float(answer(towers, schedule).tower == 0)

    def validate(policy: SkylinePolicy) -> float:
        outcomes, _ = replay(dev, schedule, policy=policy)
        return 100 * sum(o.tower == 0 for o in outcomes) / len(outcomes)

    options = PolicyOptions(budgets=[0.5], epochs=20, batch_size=16, lr=0.05, seed=3)
    by_passage = train_policy(train, [1.0] * 3, options, validate, tmp_path / "p", progress=False)
    answer_options = PolicyOptions(budgets=[0.5], epochs=20, batch_size=16, lr=0.05, seed=3, reward="answer")
    by_answer = train_policy(train, [1.0] * 3, answer_options, validate, tmp_path / "a", False, right)
    assert by_answer["best_dev_em"] >= 90
    assert by_answer["best_dev_em"] > by_passage["best_dev_em"] + 20


def test_an_answer_rewarded_episode_pays_only_at_its_end() -> None:
    table, calls = _table(1), []

    def reward(q: int, towers: Towers) -> float:
        calls.append((q, towers.tower_layers))
        return 0.75

    gen = torch.Generator().manual_seed(0)
    log_probs, rewards = episode(SkylinePolicy(), table, 0, [1.0] * 3, 0.5, gen, reward)
    assert rewards == [0.0, 0.0, 0.75] and len(log_probs) == 3
    assert calls == [(0, 3)]  # once, after the budget's 3 steps (6 towers x 0.5)


def test_an_unknown_reward_is_refused() -> None:
    with pytest.raises(ConfigError, match="--reward"):
        PolicyOptions(reward="em")


@pytest.mark.parametrize(("reward", "scorer"), [("answer", None), ("passage", lambda q, towers: 1.0)])
def test_the_reward_and_its_scorer_come_together(tmp_path: Path, reward: str, scorer) -> None:
    options = PolicyOptions(budgets=[0.5], epochs=1, reward=reward)
    with pytest.raises(ValueError, match="answer_reward"):
        train_policy(_table(4), [1.0] * 3, options, lambda p: 0.0, tmp_path / "s", False, scorer)
    assert not (tmp_path / "s").exists()
