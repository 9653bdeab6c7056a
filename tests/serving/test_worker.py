"""The workers behind /rerank and /answer: a cancelled job is dropped, a failing one never ends the
worker, and the queue's state is what /health reports."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import CancelledError

import pytest

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.serving.batcher import MicroBatcher
from sieveqa.serving.service import AnswerQueue, Service
from sieveqa.serving.worker import Job, ModelThread, QueueFullError, Worker
from tests.serving.conftest import RecordingRanker


def _example(question: str) -> RankingExample:
    return RankingExample(Question(question, question), [Candidate("0", "text")])


def _busy(max_queue: int = 512) -> tuple[RecordingRanker, MicroBatcher]:
    """A started batcher whose worker holds a first request at the ranker's gate."""
    ranker = RecordingRanker()
    batcher = MicroBatcher(max_wait=0.0, max_queue=max_queue)
    batcher.start()
    ranker.gate.clear()
    batcher.submit(_example("held"), 1, ranker)
    assert ranker.entered.wait(5)
    return ranker, batcher


def test_a_job_cancelled_while_queued_is_dropped_and_the_worker_goes_on() -> None:
    """The worker used to call set_result on the cancelled future, die of InvalidStateError, and
    leave every later request hanging."""
    ranker, batcher = _busy()
    gone = batcher.submit(_example("gone"), 1, ranker)
    assert gone.cancel()  # the client went away while it waited
    kept = batcher.submit(_example("kept"), 1, ranker)
    ranker.gate.set()
    assert kept.result(5).scores == [4.0]
    assert batcher.submit(_example("later"), 1, ranker).result(5).scores == [4.0]
    assert batcher.ready
    batcher.stop(5)
    assert ["gone"] not in ranker.calls and all("gone" not in call for call in ranker.calls)
    with pytest.raises(CancelledError):
        gone.result(0)


def test_cancelling_the_awaiting_coroutine_cancels_the_queued_job() -> None:
    """What a client disconnect does in the service: the request's task is cancelled."""
    ranker, batcher = _busy()

    async def client() -> None:
        future = batcher.submit(_example("impatient"), 1, ranker)
        task = asyncio.ensure_future(asyncio.wrap_future(future))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)  # asyncio passes the cancellation on in its next round
        assert future.cancelled()

    asyncio.run(client())
    ranker.gate.set()
    assert batcher.submit(_example("next"), 1, ranker).result(5).scores == [4.0]
    batcher.stop(5)
    assert all("impatient" not in call for call in ranker.calls)


class Flaky(Worker[Job]):
    """Works one job at a time; a job of 0 units raises a BaseException that is no Exception."""

    def __init__(self) -> None:
        super().__init__(max_queue=2, name="flaky")

    def submit(self, units: int):
        return self._enqueue(Job(units))

    def _take(self) -> list[Job]:
        return [self._pending.popleft()]

    def _work(self, jobs: list[Job]) -> None:
        if jobs[0].units == 0:
            raise GeneratorExit("not even an Exception")
        jobs[0].future.set_result(jobs[0].units)


def test_no_failure_ends_the_worker_and_ready_follows_its_state() -> None:
    worker = Flaky()
    assert not worker.ready  # not started
    worker.start()
    with pytest.raises(GeneratorExit):
        worker.submit(0).result(5)
    assert worker.submit(3).result(5) == 3 and worker.ready
    worker.stop(5)
    assert not worker.ready and worker.stopping


def test_retry_after_comes_from_the_measured_rate() -> None:
    ranker = RecordingRanker()
    batcher = MicroBatcher(max_wait=0.0, max_queue=1)
    batcher.start()
    assert batcher.retry_after() == 1.0  # nothing measured yet
    batcher.submit(_example("warm"), 1, ranker).result(5)
    batcher._rate = 0.5  # pairs per second, as if the model were slow
    ranker.gate.clear()
    ranker.entered.clear()
    batcher.submit(_example("held"), 1, ranker)
    assert ranker.entered.wait(5)
    big = RankingExample(Question("q", "q"), [Candidate(str(i), "t") for i in range(4)])
    batcher.submit(big, 1, ranker)
    with pytest.raises(QueueFullError) as err:
        batcher.submit(_example("refused"), 1, ranker)
    assert err.value.retry_after == 10.0  # 4 queued pairs and the running one at 0.5 pairs/s
    ranker.gate.set()
    batcher.stop(5)


def test_cancelled_jobs_hold_no_place_in_the_queue() -> None:
    ranker, batcher = _busy(max_queue=1)
    batcher.submit(_example("gone"), 1, ranker).cancel()
    assert batcher.depth == 0
    kept = batcher.submit(_example("kept"), 1, ranker)  # the place "gone" held is free again
    ranker.gate.set()
    assert kept.result(5).scores == [4.0]
    batcher.stop(5)


class _ThreadAnswerer:
    """An answerer that only says which thread answered."""

    index = None

    def answer(self, question: str, top: int, confidences: str | None = None) -> str:
        return threading.current_thread().name


def test_a_service_loads_scores_and_answers_on_one_thread(monkeypatch) -> None:
    """Two threads that have each run a model make GNU OpenMP stop spinning: the service lost a
    third of its throughput on 2 cores while its loader, batcher and answer queue were three threads."""
    import sieveqa.serving.service as service_module

    loaded_on: list[str] = []

    def load(model: str, **settings: object) -> RecordingRanker:
        loaded_on.append(threading.current_thread().name)
        return ThreadRanker()

    class ThreadRanker(RecordingRanker):
        def run(self, examples, progress=False):  # type: ignore[no-untyped-def]
            self.calls.append([threading.current_thread().name])
            return super().run(examples, progress)

    monkeypatch.setattr(service_module, "load_ranker", load)
    service = Service.load("anything")
    service.start()
    service.batcher.submit(_example("q"), 1, service.ranker).result(5)
    answered_on = service.answers.submit(_ThreadAnswerer(), "q", 1).result(5)  # type: ignore[arg-type]
    service.stop()
    assert loaded_on == [service.thread.name] == service.ranker.calls[0] == [answered_on]
    assert threading.current_thread().name not in loaded_on
    assert not service.thread.alive  # both workers stopped: the thread ended


def test_workers_sharing_a_thread_take_the_oldest_job_first_and_stop_one_by_one() -> None:
    thread = ModelThread("shared")
    ranker = RecordingRanker()
    batcher = MicroBatcher(max_wait=0.0, thread=thread)
    answers = AnswerQueue(4, thread)
    batcher.start()
    answers.start()
    ranker.gate.clear()
    batcher.submit(_example("held"), 1, ranker)
    assert ranker.entered.wait(5)
    first = answers.submit(_ThreadAnswerer(), "first", 1)  # type: ignore[arg-type]
    second = batcher.submit(_example("second"), 1, ranker)
    ranker.gate.set()
    assert first.result(5) == "shared" and second.result(5).scores == [4.0]
    assert ranker.calls == [["held"], ["second"]]
    batcher.stop(5)
    assert thread.alive and answers.ready and not batcher.ready  # the answer queue still works
    assert answers.submit(_ThreadAnswerer(), "later", 1).result(5) == "shared"  # type: ignore[arg-type]
    answers.stop(5)
    assert not thread.alive


def test_a_call_runs_on_the_thread_and_raises_what_it_raised() -> None:
    thread = ModelThread("calls")
    assert thread.call(lambda: threading.current_thread().name) == "calls"
    with pytest.raises(ZeroDivisionError):
        thread.call(lambda: 1 / 0)
    assert thread.call(lambda: thread.call(lambda: 7)) == 7  # from the thread itself: no deadlock


def test_a_cancelled_call_is_dropped_and_the_thread_goes_on() -> None:
    """Cancelling a queued call's future used to kill the thread (set_result on a cancelled future)."""
    thread = ModelThread("cancels")
    gate = threading.Event()
    running = thread.submit(gate.wait)
    queued = thread.submit(lambda: "never")
    assert queued.cancel()
    gate.set()
    assert running.result(5) is True
    assert thread.call(lambda: "next") == "next" and thread.alive


def test_a_call_after_the_thread_ended_starts_it_again() -> None:
    thread = ModelThread("again")
    worker = AnswerQueue(1, thread)
    worker.start()
    worker.stop(5)
    thread.join(5)
    assert not thread.alive
    assert thread.call(lambda: threading.current_thread().name) == "again"


def test_a_call_submitted_while_the_loop_returns_is_not_stranded(monkeypatch) -> None:
    """The loop let go of its thread after releasing the lock: a call queued in between found the
    thread still set, started none, and its call() blocked forever (issue 42)."""
    thread = ModelThread("returning")
    worker = AnswerQueue(1, thread)
    returned, go_on = threading.Event(), threading.Event()
    real = thread._work_off

    def work_off_then_linger() -> None:  # the window between the loop's return and its finally
        real()
        if not returned.is_set():
            returned.set()
            go_on.wait(5)

    monkeypatch.setattr(thread, "_work_off", work_off_then_linger)
    worker.start()
    worker._stopping = True  # as stop() does, without waiting for the thread
    with thread.cond:
        thread.cond.notify_all()
    assert returned.wait(5)
    future = thread.submit(lambda: "ran")
    go_on.set()
    assert future.result(5) == "ran"


def test_a_service_whose_lifespan_ended_starts_again(tiny_model) -> None:
    """After a lifespan's shutdown, /health said "draining" forever in the next one (issue 42)."""
    from fastapi.testclient import TestClient

    from sieveqa.serving import create_app

    service = Service(tiny_model)
    app = create_app(service)
    for _ in range(2):
        with TestClient(app) as c:
            assert c.get("/health").json()["status"] == "ok"
            assert c.post("/rerank", json={"query": "q", "texts": ["a", "b"]}).status_code == 200


def test_a_failed_load_leaves_no_thread_behind(monkeypatch) -> None:
    import sieveqa.serving.service as service_module

    made: list[ModelThread] = []
    real = service_module.ModelThread

    def record() -> ModelThread:
        made.append(real())
        return made[-1]

    def broken(model: str, **settings: object) -> None:
        raise ValueError("no such model")

    monkeypatch.setattr(service_module, "ModelThread", record)
    monkeypatch.setattr(service_module, "load_ranker", broken)
    with pytest.raises(ValueError, match="no such model"):
        Service.load("anything")
    made[0].join(5)
    assert not made[0].alive


def test_a_bucketed_service_warms_its_ranker_up_at_every_batch_shape(saved_tiny, monkeypatch) -> None:
    """Where batches are bucketed (half precision on CUDA) a new shape costs a kernel build; the
    service pays for them all before serving (on the model thread), not its first requests. Exact
    shapes (the CPU's): nothing to warm up."""
    from sieveqa.batching import Shapes
    from sieveqa.models.encoder_model import EncoderModel

    monkeypatch.setattr(EncoderModel, "shapes", property(lambda self: Shapes(True, self.config.max_length)))
    service = Service.load(str(saved_tiny), precision="bf16", batch_size=8)
    try:
        assert service.warmed_up[0] == len(service.model.shapes.grid(8)) == 4 * 4
    finally:
        service.thread.close()
    service = Service.load(str(saved_tiny), precision="bf16", warm_up=False)
    service.thread.close()
    assert service.warmed_up[0] == 0
    monkeypatch.undo()
    service = Service.load(str(saved_tiny), precision="bf16")
    service.thread.close()
    assert service.warmed_up[0] == 0 and not service.model.shapes.buckets


def test_retry_after_counts_what_is_left_of_the_running_batch() -> None:
    """A request that timed out while its own batch ran was told ``Retry-After: 1`` (the queue was
    empty), so every client retried at once and found the work still running."""
    ranker = RecordingRanker()
    batcher = MicroBatcher(max_wait=0.0)
    batcher.start()
    batcher._rate = 10.0  # pairs a second, as measured
    ranker.gate.clear()
    example = RankingExample(Question("q", "q"), [Candidate(str(i), "t") for i in range(100)])
    batcher.submit(example, 100, ranker)
    assert ranker.entered.wait(5)
    try:
        assert 8 <= batcher.retry_after() <= 10  # 100 pairs at 10 a second, just begun
    finally:
        ranker.gate.set()
        batcher.stop(5)
    assert batcher.retry_after() == 1


def test_a_loaded_service_takes_no_more_texts_than_it_ranks_within_its_deadline(saved_tiny) -> None:
    """1,000 RAG-sized documents ran past the client's timeout and the server's own; now the limit
    comes from the rate measured at load."""
    from sieveqa.serving import Limits
    from sieveqa.serving.capacity import SHARE, fit_to_deadline

    assert fit_to_deadline(Limits(max_texts=1000, timeout_s=10), 50.0).max_texts == int(50 * 10 * SHARE)
    assert fit_to_deadline(Limits(max_texts=100, timeout_s=10), 50.0).max_texts == 100  # never raised
    assert fit_to_deadline(Limits(max_texts=100), None).max_texts == 100
    service = Service.load(str(saved_tiny), limits=Limits(max_texts=10**6, timeout_s=1))
    service.thread.close()
    assert 1 <= service.limits.max_texts < 10**6
