"""Stages timed while a profile is active: nesting, the shared leaves, FLOPs from a cost, nothing
recorded without a profile."""

from __future__ import annotations

import time

import pytest

from sieveqa.cost import Cost
from sieveqa.profiling import Profile, profiled, stage, timed


@timed("tokenize")
def _tokenize() -> str:
    time.sleep(0.01)
    return "ids"


def test_stages_nest_and_count_their_leaves_flops_and_own_work() -> None:
    cost = Cost()
    with profiled() as spent:
        with stage("judge"):
            assert _tokenize() == "ids"
            with stage("model", cost):
                cost.flops += 3_000_000_000
                time.sleep(0.02)
            time.sleep(0.01)  # the stage's own Python work
        time.sleep(0.005)  # outside every stage
    (judge, unstaged) = spent.stages()
    assert judge["stage"] == "judge" and judge["gflops"] == pytest.approx(3.0)
    assert judge["tokenize"] >= 10 and judge["model"] >= 20 and judge["collate"] == 0
    assert judge["other"] >= 10 and judge["ms"] == pytest.approx(
        judge["tokenize"] + judge["model"] + judge["other"], abs=0.01
    )
    assert unstaged["stage"] == "unstaged" and unstaged["ms"] >= 5
    assert spent.as_dict()["calls"] == 1


def test_calls_are_averaged_and_nothing_is_kept_without_a_profile() -> None:
    spent = Profile()
    for _ in range(2):
        with profiled(spent), stage("retrieval"):
            time.sleep(0.01)
    assert spent.calls == 2 and 10 <= spent.stages()[0]["ms"] < 1000
    assert list(spent.seconds) == [("retrieval",)]
    with stage("retrieval"):  # no profile active: nothing is recorded anywhere
        pass
    assert spent.calls == 2 and list(spent.seconds) == [("retrieval",)]


def test_a_generator_abandoned_inside_a_stage_leaves_the_next_stages_right() -> None:
    def batches():
        for i in range(3):
            with stage("model"):
                yield i

    with profiled() as spent:
        with stage("passage rerank"):
            left = batches()
            next(left)  # suspended inside its "model" stage, and kept so
        with stage("judge"):
            pass
        left.close()
    assert [r["stage"] for r in spent.stages()] == ["passage rerank", "judge", "unstaged"]
