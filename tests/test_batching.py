"""Batch shapes (exact and bucketed), padding, and the prefetching thread; a model scores the same
whatever shape its batches take."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from sieveqa.batching import (
    EXACT,
    Shapes,
    bucket_rows,
    bucket_width,
    collate,
    length_batches,
    pinned,
    prefetched,
    to_device,
)
from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.features import Features
from sieveqa.models.easi import EasiConfig, EasiModel
from sieveqa.models.hashing import HashingConfig, HashingModel
from sieveqa.models.peasi import PeasiConfig, PeasiModel
from sieveqa.models.reader import ReaderConfig, ReaderModel
from sieveqa.runtime.cascade import CascadeRanker

BUCKETED = Shapes(True, 128)
QUESTIONS = ["who wrote hamlet?"] * 3 + ["how tall is everest, the highest mountain on earth?"] * 4
TEXTS = [
    "Hamlet is a tragedy by William Shakespeare, written around 1600 and set in Denmark.",
    "It is set in Denmark.",
    "Shakespeare wrote it.",
    "Everest is 8,849 metres tall.",
    "It lies in the Himalayas on the border of Nepal and China, and was first climbed in 1953.",
    "Climbers need oxygen.",
    "Its Tibetan name is Chomolungma.",
]
PASSAGES = [
    ["Bees make honey.", "They live in hives."],
    ["Tea is a drink.", "It has caffeine.", "Green tea."],
]


def test_buckets_round_tokens_up_by_range_and_rows_to_powers_of_two_then_eights() -> None:
    assert [bucket_width(n) for n in (1, 16, 17, 128, 129, 250, 257, 500)] == [
        16,
        16,
        32,
        128,
        160,
        256,
        320,
        512,
    ]
    assert bucket_width(90, limit=100) == 96 and bucket_width(99, limit=100) == 100  # a bucket
    assert [bucket_rows(n, 64) for n in (1, 2, 3, 5, 8, 9, 33, 64)] == [1, 2, 4, 8, 8, 16, 40, 64]
    assert bucket_rows(45, 44) == 45 and bucket_rows(41, 44) == 44  # at most the batch size
    grid = BUCKETED.grid(64)
    assert len(grid) == 11 * 8 and (64, 128) in grid and (1, 16) in grid and (24, 48) in grid
    assert EXACT.grid(64) == [] and Shapes(True).grid(64) == []  # no limit: no finite grid


def test_bucketed_batches_group_as_exact_ones_and_pad_further() -> None:
    lengths = [5, 40, 7, 90, 12, 6, 33]
    batches = BUCKETED.batches(lengths, 3)
    assert batches == EXACT.batches(lengths, 3) == length_batches(lengths, 3)
    assert BUCKETED.shape([12, 33, 40], 3) == (3, 48) and EXACT.shape([12, 33, 40], 3) == (3, 40)
    assert BUCKETED.shape([90], 8) == (1, 96) and BUCKETED.shape([5] * 5, 8) == (8, 16)


def test_collate_pads_rows_and_tokens_to_a_shape() -> None:
    features = Features([[1, 2, 3], [4, 5]], [[0, 0, 1], [0, 1]], segment_ids=[[-1, 0, 1], [-1, 1]])
    exact = collate(features, [1, 0], pad_id=9)
    assert exact["input_ids"].tolist() == [[4, 5, 9], [1, 2, 3]]
    assert exact["attention_mask"].tolist() == [[1, 1, 0], [1, 1, 1]]
    shaped = collate(features, [1, 0], pad_id=9, segments=True, shape=(4, 5))
    assert shaped["input_ids"].tolist() == [[4, 5, 9, 9, 9], [1, 2, 3, 9, 9], [9] * 5, [9] * 5]
    assert shaped["token_type_ids"].tolist()[:2] == [[0, 1, 0, 0, 0], [0, 0, 1, 0, 0]]
    # A padding row attends to one token: no row of the batch is left with nothing to attend to.
    assert shaped["attention_mask"].tolist() == [
        [1, 1, 0, 0, 0],
        [1, 1, 1, 0, 0],
        [1, 0, 0, 0, 0],
        [1, 0, 0, 0, 0],
    ]
    assert shaped["segment_ids"].tolist()[1] == [-1, 0, 1, -1, -1]
    with pytest.raises(ValueError, match="cannot hold"):
        collate(features, [0, 1], pad_id=9, shape=(2, 2))


def test_a_training_collate_pads_tokens_to_a_bucket_at_most_the_rows_limit() -> None:
    rows = [[1] * n for n in (5, 20, 33, 99)]
    features = Features(rows, [[0] * len(r) for r in rows], max_length=100)
    assert collate(features, [0, 1], pad_id=0, bucketed=True)["input_ids"].shape == (2, 32)
    assert collate(features, [2], pad_id=0, bucketed=True)["input_ids"].shape == (1, 48)
    assert collate(features, [3, 0], pad_id=0, bucketed=True)["input_ids"].shape == (2, 100)  # not 112
    assert collate(features, [3, 0], pad_id=0)["input_ids"].shape == (2, 99)  # exact unless asked
    unbounded = Features(rows, features.token_type_ids)
    assert collate(unbounded, [3], pad_id=0, bucketed=True)["input_ids"].shape == (1, 112)


def test_prefetched_keeps_order_raises_in_the_consumer_and_stops_when_left() -> None:
    assert list(prefetched(iter(range(50)), depth=2)) == list(range(50))

    def failing():
        yield 1
        raise KeyError("made in the thread")

    with pytest.raises(KeyError, match="made in the thread"):
        list(prefetched(failing()))
    made = []

    def endless():
        while True:
            made.append(len(made))
            yield made[-1]

    for item in prefetched(endless(), depth=2):
        if item == 3:
            break
    time.sleep(0.3)
    assert len(made) <= 3 + 2 + 2  # the thread stopped a queue's depth past what was taken
    assert not any(t.name == "sieveqa-prefetch" for t in threading.enumerate())


def _examples() -> list[RankingExample]:
    out: dict[str, list[Candidate]] = {}
    for q, t in zip(QUESTIONS, TEXTS, strict=True):
        out.setdefault(q, []).append(Candidate(f"c{len(out.get(q, []))}", t, None))
    return [RankingExample(Question(f"q{i}", q), c) for i, (q, c) in enumerate(out.items())]


def test_scores_and_costs_do_not_depend_on_the_batch_shape(tiny_model, tiny_cascade) -> None:
    """Every kind of model, exact against bucketed shapes (padding rows and tokens masked); the
    cost counts the inputs, not the padding."""
    torch.manual_seed(0)
    tiny_model.batch_size = tiny_cascade.batch_size = 3

    def both(model, run):
        model.buckets = False
        exact = run()
        model.buckets = True
        return exact, run()

    (a, cost_a), (b, cost_b) = both(tiny_model, lambda: tiny_model.score_matrix(QUESTIONS, TEXTS))
    assert torch.allclose(a, b, atol=1e-5) and cost_a.layer_units == cost_b.layer_units == 7 * 4
    ranker = CascadeRanker(tiny_cascade, drop_ratios=0.34)
    a, b = both(tiny_cascade, lambda: ranker.run(_examples()))
    assert torch.allclose(a.trace.scores.nan_to_num(), b.trace.scores.nan_to_num(), atol=1e-5)
    assert a.cost.layer_units == b.cost.layer_units and a.cost.sequences == b.cost.sequences == 7
    reader = ReaderModel(ReaderConfig(backbone="tiny", max_length=24, stride=4)).eval()
    reader.batch_size = 3
    (ra, ca), (rb, cb) = both(reader, lambda: reader.read(QUESTIONS[:2], [TEXTS[:3], TEXTS[3:5]]))
    assert [[g.start for g in r] for r in ra[0]] == [[g.start for g in r] for r in rb[0]]
    assert (
        ra[0][0][-1].score == pytest.approx(rb[0][0][-1].score, abs=1e-4) and ca.layer_units == cb.layer_units
    )
    has = HashingModel(HashingConfig(backbone="tiny", max_length=32)).eval()
    a, b = both(has, lambda: has.encode_questions(QUESTIONS))
    assert torch.allclose(a, b, atol=1e-5)
    for sharing in ("mtl1", "concat"):
        peasi = PeasiModel(PeasiConfig(backbone="tiny", sharing=sharing, max_length=64)).eval()
        (sa, ca), (sb, cb) = both(
            peasi, lambda p=peasi: p.score_passages(["what do bees make?"] * 2, PASSAGES)
        )
        assert sa == pytest.approx(sb, abs=1e-5) and ca.sequences == cb.sequences
    easi = EasiModel(EasiConfig(backbone="tiny", max_length=48, stride=8)).eval()
    a, b = both(easi, lambda: easi.read(["what do bees make?"] * 2, PASSAGES))
    assert a.logits[1] == pytest.approx(b.logits[1], abs=1e-5) and a.cost.layer_units == b.cost.layer_units


def test_half_precision_on_cuda_buckets_by_default_and_a_warm_up_runs_every_shape(
    tiny_model, monkeypatch
) -> None:
    """Buckets pay where a new shape costs a kernel build many times a warm call (CUDA in half
    precision); on a CPU in bf16 they were measured not to (the padding cost more): exact there."""
    tiny_model.precision = "bf16"
    assert not tiny_model.shapes.buckets  # a CPU: exact
    monkeypatch.setattr(type(tiny_model), "device", property(lambda self: torch.device("cuda")))
    assert tiny_model.shapes == Shapes(True, 64)
    tiny_model.precision = "fp32"
    assert not tiny_model.shapes.buckets  # fp32 on CUDA: exact
    monkeypatch.undo()
    tiny_model.precision, tiny_model.buckets, tiny_model.batch_size = "bf16", True, 4
    assert tiny_model.warm_up() == 3 * 4  # rows 1, 2, 4 by widths 16, 32, 48, 64
    tiny_model.buckets = False
    assert tiny_model.warm_up() == 0


def test_chunked_and_overlapped_scoring_equals_the_plain_one(tiny_model, monkeypatch) -> None:
    """Tokenized in chunks by a thread ahead of the model (as on CUDA), the scores and the cost are
    the same; a failure inside the thread reaches the caller."""
    plain, cost = tiny_model.score_matrix(QUESTIONS, TEXTS)
    monkeypatch.setattr("sieveqa.models.pair_model.CHUNK", 3)
    tiny_model.overlap, tiny_model.batch_size = True, 2
    ahead, cost_ahead = tiny_model.score_matrix(QUESTIONS, TEXTS)
    assert torch.allclose(plain, ahead, atol=1e-5) and cost.layer_units == cost_ahead.layer_units
    features = tiny_model.featurize(QUESTIONS, TEXTS)
    assert [r for r, _ in tiny_model.batches(features)] == [r for r, _ in tiny_model.host_batches(features)]

    def broken(*args, **kwargs):
        raise RuntimeError("tokenizer failed")

    monkeypatch.setattr(tiny_model, "featurize", broken)
    with pytest.raises(RuntimeError, match="tokenizer failed"):
        tiny_model.score_matrix(QUESTIONS, TEXTS)


def test_host_batches_are_pinned_for_cuda_only_and_move_where_asked() -> None:
    """The CUDA path's pieces that run without a GPU: nothing is pinned for the CPU, and a batch
    moves to another device (meta stands in for cuda) with its shapes and dtypes."""
    batch = collate(Features([[1, 2, 3]], [[0, 0, 0]]), [0], pad_id=0)
    assert pinned(batch, torch.device("cpu")) is batch
    moved = to_device(batch, torch.device("meta"))
    assert all(v.is_meta and v.shape == batch[k].shape and v.dtype == torch.long for k, v in moved.items())
