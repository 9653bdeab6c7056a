"""Answer stores: exact bit round trips, appends that leave old data alone, checks that refuse, reads
that stay bounded."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import StoreError
from sieveqa.models.hashing import HashingConfig, HashingModel
from sieveqa.runtime.store.answer_store import AnswerStore
from sieveqa.runtime.store.ranker import SearchSettings, StoreRanker

ANSWERS = [
    ("a1", "shakespeare wrote hamlet"),
    ("a2", "paris is the capital of france and a large city on the seine"),
    ("a3", "bananas"),
]


def _model(variant: str = "has", **kwargs) -> HashingModel:
    torch.manual_seed(0)
    return HashingModel(HashingConfig.variant(variant, backbone="tiny", max_length=32, **kwargs)).eval()


@pytest.fixture(scope="module")
def has() -> HashingModel:
    return _model()


def test_bits_round_trip_exactly_and_take_one_bit_per_value(has: HashingModel, tmp_path: Path) -> None:
    store = AnswerStore.build(has, ANSWERS, tmp_path / "s")
    encoded = has.encode_answers([t for _, t in ANSWERS])
    for answer_id, direct in zip(["a1", "a2", "a3"], encoded, strict=True):
        (stored,) = store.representations([answer_id])
        assert torch.equal(stored, direct)
    tokens = sum(len(m) for m in encoded)
    dim = has.encoder.hidden_size
    assert store.ram_bytes() == tokens * dim // 8 + 4 * 8
    values = tmp_path / "s" / "seg-00000" / "values.bin"
    assert values.stat().st_size == tokens * dim // 8
    segment = store.segments[0]
    assert all(isinstance(a, np.memmap) for a in (segment.values, segment.records, segment.lines))
    assert len(store) == 3 and store.text("a3") == "bananas" and "a2" in store
    assert store.record(1) == ANSWERS[1]


@pytest.mark.parametrize("variant", ["bert-attention", "bert-pooling"])
def test_float_and_vector_stores_round_trip(variant: str, tmp_path: Path) -> None:
    model = _model(variant)
    store = AnswerStore.build(model, ANSWERS, tmp_path / variant)
    encoded = model.encode_answers([t for _, t in ANSWERS])
    assert store.kind == ("float" if variant == "bert-attention" else "vector")
    for got, want in zip(store.representations(["a1", "a2", "a3"]), encoded, strict=True):
        assert torch.equal(got, want)


def test_store_scores_equal_the_models_own_scores(has: HashingModel, tmp_path: Path) -> None:
    store = AnswerStore.build(has, ANSWERS, tmp_path / "s")
    example = RankingExample(
        Question("q", "who wrote hamlet"), [Candidate(i, t) for i, t in [ANSWERS[2], ANSWERS[0], ANSWERS[1]]]
    )
    ranker = StoreRanker(has, store)
    assert torch.allclose(torch.tensor(ranker.score([example])[0]), torch.tensor(has.score([example])[0]))
    best = ranker.search("who wrote hamlet", top=2)
    scores = dict(zip(["a3", "a1", "a2"], has.score([example])[0], strict=True))
    assert [hit.id for hit in best] == sorted(scores, key=scores.get, reverse=True)[:2]
    assert [hit.text for hit in best] == [dict(ANSWERS)[hit.id] for hit in best]


def test_append_adds_a_segment_and_leaves_the_old_one_untouched(has: HashingModel, tmp_path: Path) -> None:
    store = AnswerStore.build(has, ANSWERS[:2], tmp_path / "s")
    first = (tmp_path / "s" / "seg-00000" / "values.bin").read_bytes()
    mtime = (tmp_path / "s" / "seg-00000" / "values.bin").stat().st_mtime_ns
    store = store.append(has, [ANSWERS[2]])
    assert [s.name for s in store.segments] == ["seg-00000", "seg-00001"] and len(store) == 3
    assert store.manifest["first_stage"]["dir"] == "first-stage-00001"  # rebuilt over all answers
    assert (tmp_path / "s" / "first-stage-00000").exists()  # kept for readers that opened it
    (tmp_path / "s" / "seg-00009").mkdir()  # as a killed append leaves it: not in the manifest
    assert (tmp_path / "s" / "seg-00000" / "values.bin").read_bytes() == first
    assert (tmp_path / "s" / "seg-00000" / "values.bin").stat().st_mtime_ns == mtime
    reopened = AnswerStore.open(tmp_path / "s")
    assert reopened.ids == ["a1", "a2", "a3"]
    reopened = reopened.append(has, [("a4", "four")])
    names = sorted(p.name for p in (tmp_path / "s").iterdir() if not p.name.startswith("."))
    assert names == [
        "first-stage-00001",
        "first-stage-00002",
        "manifest.json",
        *(f"seg-0000{i}" for i in range(3)),
    ]
    with pytest.raises(StoreError, match=r"already stored or repeated: \['a1'\]"):
        reopened.append(has, [("a1", "again")])
    with pytest.raises(StoreError, match=r"repeated: \['b'\]"):
        reopened.append(has, [("b", "x"), ("b", "y")])
    with pytest.raises(StoreError, match="already holds an answer store"):
        AnswerStore.build(has, ANSWERS, tmp_path / "s")


def test_a_segment_left_by_a_killed_writer_is_ignored(has: HashingModel, tmp_path: Path) -> None:
    AnswerStore.build(has, ANSWERS[:2], tmp_path / "s")
    shutil.copytree(tmp_path / "s" / "seg-00000", tmp_path / "s" / "seg-00001")  # not in the manifest
    store = AnswerStore.open(tmp_path / "s")
    assert store.ids == ["a1", "a2"]
    assert store.append(has, [ANSWERS[2]]).ids == ["a1", "a2", "a3"]


def test_corruption_and_versions_are_refused(has: HashingModel, tmp_path: Path) -> None:
    AnswerStore.build(has, ANSWERS, tmp_path / "s")
    values = tmp_path / "s" / "seg-00000" / "values.bin"
    data = bytearray(values.read_bytes())
    data[0] ^= 1
    values.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=r"seg-00000/values.bin is corrupt"):
        AnswerStore.open(tmp_path / "s")
    AnswerStore.open(tmp_path / "s", verify=False)  # explicitly unchecked
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    manifest["version"] = 99
    (tmp_path / "s" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match="store format version 99, this sieveqa reads 2; rebuild it"):
        AnswerStore.open(tmp_path / "s")
    with pytest.raises(StoreError, match="not an answer store"):
        AnswerStore.open(tmp_path)


def test_a_store_refuses_another_model(has: HashingModel, tmp_path: Path) -> None:
    store = AnswerStore.build(has, ANSWERS, tmp_path / "s")
    with pytest.raises(StoreError, match=r"beta 5.0 \(store\) != 10.0 \(model\)"):
        StoreRanker(_model(beta=10.0), store)
    other = _model()
    with torch.no_grad():
        next(other.encoder.parameters()).add_(0.5)
    with pytest.raises(StoreError, match="the encoder weights differ"):
        StoreRanker(other, store)
    with pytest.raises(StoreError, match="kind 'bits' \\(store\\) != 'float'"):
        StoreRanker(_model("bert-attention"), store)
    with pytest.raises(StoreError, match=r"1 answer ids not in the store, e.g. \['zz'\]"):
        StoreRanker(has, store).score_ids("q", ["a1", "zz"])


@pytest.mark.parametrize("variant", ["has", "bert-attention", "bert-pooling"])
def test_a_full_scan_reads_bounded_blocks_that_decode_as_lookups_do(variant: str, tmp_path: Path) -> None:
    model = _model(variant)
    store = AnswerStore.build(model, ANSWERS[:2], tmp_path / "s").append(model, ANSWERS[2:])
    lengths = [len(r) for r in store.representations(["a1", "a2", "a3"])]
    seen = 0
    for first, values, block_lengths in store.scan(tokens=1):  # one answer per block at most
        assert first == seen
        count = 1 if block_lengths is None else len(block_lengths)
        assert count == 1
        want = store.representations([store.record(first)[0]])[0]
        assert torch.equal(values if block_lengths is not None else values[0], want)
        seen += count
    assert seen == 3
    if variant != "bert-pooling":
        blocks = list(store.scan(tokens=max(lengths[:2]) + lengths[0]))
        assert all(int(b[2].sum()) <= max(lengths[:2]) + lengths[0] for b in blocks)
    ranker = StoreRanker(model, store, SearchSettings(first_stage="none"))
    everything = ranker.score_ids("who wrote hamlet", ["a1", "a2", "a3"])
    best = ranker.search("who wrote hamlet", top=3)
    assert [h.id for h in best] == [
        ["a1", "a2", "a3"][i] for i in everything.argsort(descending=True).tolist()
    ]
    assert torch.allclose(torch.tensor([h.score for h in best]), everything.sort(descending=True).values)


def test_two_writers_of_one_store_cannot_add_the_same_id(has: HashingModel, tmp_path: Path) -> None:
    first = AnswerStore.build(has, ANSWERS[:2], tmp_path / "s")
    second = AnswerStore.open(tmp_path / "s")  # opened before the first writer adds "x"
    first.append(has, [("x", "one")])
    with pytest.raises(StoreError, match=r"answer ids already stored or repeated: \['x'\]"):
        second.append(has, [("x", "two")])
    assert AnswerStore.open(tmp_path / "s").ids == ["a1", "a2", "x"]


@pytest.mark.parametrize("damage", ["manifest", "truncated", "records"])
def test_a_damaged_store_is_a_store_error_even_unverified(
    has: HashingModel, tmp_path: Path, damage: str
) -> None:
    AnswerStore.build(has, ANSWERS, tmp_path / "s")
    segment = tmp_path / "s" / "seg-00000"
    if damage == "manifest":
        (tmp_path / "s" / "manifest.json").write_text('{"format": "sieveqa-answer-store", "version": 2}')
        message = "malformed manifest"
    elif damage == "truncated":
        (segment / "values.bin").write_bytes((segment / "values.bin").read_bytes()[:-8])
        message = "files of the wrong size"
    else:
        with (segment / "answers.jsonl").open("a") as handle:
            handle.write("not json\n")
        message = "offsets that do not match"
    with pytest.raises(StoreError, match=message):
        AnswerStore.open(tmp_path / "s", verify=False)


def test_a_damaged_record_is_named_when_read(has: HashingModel, tmp_path: Path) -> None:
    AnswerStore.build(has, ANSWERS, tmp_path / "s", bm25=False)
    records = tmp_path / "s" / "seg-00000" / "answers.jsonl"
    records.write_bytes(records.read_bytes().replace(b'"id"', b'"ID"', 1))
    store = AnswerStore.open(tmp_path / "s", verify=False)
    with pytest.raises(StoreError, match=r"seg-00000/answers.jsonl:1 is not an answer record"):
        store.record(0)
