"""The micro-batcher: who shares a batch, in what order, within what budget, and what a failure does."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import BusyError
from sieveqa.models.base import Ranker, RankResult
from sieveqa.serving.batcher import BatchStats, MicroBatcher, QueueFullError
from tests.serving.conftest import RecordingRanker


def _example(question: str, *texts: str) -> RankingExample:
    return RankingExample(Question(question, question), [Candidate(str(i), t) for i, t in enumerate(texts)])


def _held(ranker: RecordingRanker, batcher: MicroBatcher) -> None:
    """Occupy the worker with a first request held at the ranker's gate."""
    ranker.gate.clear()
    batcher.submit(_example("first", "x"), 1, ranker)
    assert ranker.entered.wait(5)


def test_requests_queued_together_share_one_batch_in_arrival_order() -> None:
    ranker, stats = RecordingRanker(), []
    batcher = MicroBatcher(max_tokens=1000, max_wait=0.0, on_batch=stats.append)
    batcher.start()
    _held(ranker, batcher)
    futures = [batcher.submit(_example(f"q{i}", "a" * (i + 1), "bb"), 10, ranker) for i in range(4)]
    assert batcher.depth == 4
    ranker.gate.set()
    done = [f.result(5) for f in futures]
    batcher.stop()
    assert ranker.calls == [["first"], ["q0", "q1", "q2", "q3"]]
    assert [d.scores for d in done] == [[1.0, 2.0], [2.0, 2.0], [3.0, 2.0], [4.0, 2.0]]
    assert done[3].order == [0, 1]
    assert all(d.batch_requests == 4 and d.batch_pairs == 8 for d in done)
    # Each request pays for its own pairs: 2 of the batch's 8, at 2 layer-units a pair.
    assert [(d.cost.sequences, d.cost.layer_units) for d in done] == [(2, 4)] * 4
    assert stats[-1] == BatchStats(4, 8, 40, stats[-1].seconds, 16)


def test_the_token_budget_splits_a_batch_and_keeps_fifo() -> None:
    ranker = RecordingRanker()
    batcher = MicroBatcher(max_tokens=25, max_wait=0.0)
    batcher.start()
    _held(ranker, batcher)
    futures = [batcher.submit(_example(f"q{i}", "t"), 10, ranker) for i in range(5)]
    ranker.gate.set()
    for f in futures:
        f.result(5)
    batcher.stop()
    assert ranker.calls == [["first"], ["q0", "q1"], ["q2", "q3"], ["q4"]]


def test_a_request_over_the_budget_still_runs_alone() -> None:
    ranker = RecordingRanker()
    batcher = MicroBatcher(max_tokens=5, max_wait=0.0)
    batcher.start()
    assert batcher.submit(_example("big", "abc"), 50, ranker).result(5).scores == [3.0]
    batcher.stop()


def test_requests_for_different_rankers_never_share_a_batch() -> None:
    one, two = RecordingRanker(), RecordingRanker()
    batcher = MicroBatcher(max_wait=0.0)
    batcher.start()
    _held(one, batcher)
    futures = [batcher.submit(_example(f"q{i}", "t"), 1, r) for i, r in enumerate([one, two, one, two])]
    one.gate.set()
    for f in futures:
        f.result(5)
    batcher.stop()
    assert one.calls == [["first"], ["q0", "q2"]]
    assert two.calls == [["q1", "q3"]]


def test_a_lone_client_never_waits_but_concurrent_ones_wait_for_company() -> None:
    ranker = RecordingRanker()
    batcher = MicroBatcher(max_wait=0.3)
    batcher.start()
    alone = batcher.submit(_example("alone", "t"), 1, ranker).result(5)
    assert alone.queue_seconds < 0.25
    _held(ranker, batcher)  # a batch of one, then two queued together: concurrency
    pair = [batcher.submit(_example(f"q{i}", "t"), 1, ranker) for i in range(2)]
    ranker.gate.set()
    [f.result(5) for f in pair]
    late = batcher.submit(_example("late", "t"), 1, ranker)
    assert late.result(5).queue_seconds >= 0.2  # waited for company after a batch of two
    batcher.stop()


class Broken(Ranker):
    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        raise RuntimeError("model exploded")


def test_a_failing_batch_fails_its_requests_and_the_worker_goes_on() -> None:
    batcher = MicroBatcher(max_wait=0.0)
    batcher.start()
    with pytest.raises(RuntimeError, match="model exploded"):
        batcher.submit(_example("q", "t"), 1, Broken()).result(5)
    assert batcher.submit(_example("q", "abcd"), 1, RecordingRanker()).result(5).scores == [4.0]
    batcher.stop()


def test_a_full_queue_is_refused_with_a_retry_time() -> None:
    ranker = RecordingRanker()
    batcher = MicroBatcher(max_wait=0.0, max_queue=2)
    batcher.start()
    _held(ranker, batcher)
    batcher.submit(_example("a", "t"), 1, ranker)
    batcher.submit(_example("b", "t"), 1, ranker)
    with pytest.raises(QueueFullError, match="queue is full") as err:
        batcher.submit(_example("c", "t"), 1, ranker)
    assert err.value.retry_after >= 1
    ranker.gate.set()
    batcher.stop()


def test_stop_finishes_what_is_queued_then_refuses_more() -> None:
    ranker = RecordingRanker()
    batcher = MicroBatcher(max_wait=0.0)
    batcher.start()
    _held(ranker, batcher)
    queued = [batcher.submit(_example(f"q{i}", "t"), 1, ranker) for i in range(3)]
    ranker.gate.set()
    batcher.stop(timeout=5)
    assert all(f.done() and f.result().scores == [1.0] for f in queued)
    with pytest.raises(BusyError, match="shutting down"):
        batcher.submit(_example("late", "t"), 1, ranker)
