"""Searching a whole store: the first stage scores what it says, two stages equal the full scan when
the first stage keeps everything, fusion orders as defined, and bad settings are refused."""

from pathlib import Path

import numpy as np
import pytest
import torch

from sieveqa.errors import ConfigError
from sieveqa.models.hashing import HashingConfig, HashingModel
from sieveqa.runtime.store.answer_store import AnswerStore
from sieveqa.runtime.store.first_stage import choose_vector_index, fuse, nlist
from sieveqa.runtime.store.ranker import SearchSettings, StoreRanker

TOPICS = ["cats", "dogs", "rivers", "planets", "music"]
ANSWERS = [(f"a{i}", f"note {i} on {TOPICS[i % 5]} and the number {i * 7}") for i in range(120)]
QUESTIONS = ["what about dogs", "rivers and 21", "music number"]


@pytest.fixture(scope="module")
def has() -> HashingModel:
    torch.manual_seed(0)
    return HashingModel(HashingConfig.variant("has", backbone="tiny", max_length=32)).eval()


@pytest.fixture(scope="module")
def store(has: HashingModel, tmp_path_factory: pytest.TempPathFactory) -> AnswerStore:
    return AnswerStore.build(has, ANSWERS, tmp_path_factory.mktemp("s") / "s", segment_size=50)


def test_the_vector_stage_ranks_by_cosine_with_the_mean_of_the_bits(
    has: HashingModel, store: AnswerStore
) -> None:
    vector = has.encode_questions(QUESTIONS[:1])
    rows, scores = store.first_stage.search_vectors(vector.numpy(), 10)[0]
    values, lengths = store.gather(np.arange(len(store)))
    means = torch.stack([m.mean(0) for m in torch.split(values, lengths.tolist())])
    exact = torch.nn.functional.cosine_similarity(vector, means)
    assert np.allclose(scores, exact[rows].numpy(), atol=2e-3)  # fp16 codes
    assert set(rows.tolist()) == set(exact.topk(10).indices.tolist())


@pytest.mark.parametrize("stage", ["vector", "rrf", "mix"])
def test_two_stages_equal_the_full_scan_when_the_first_keeps_everything(
    has: HashingModel, store: AnswerStore, stage: str
) -> None:
    full = StoreRanker(has, store, SearchSettings(first_stage="none")).search_many(QUESTIONS, top=5)
    two = StoreRanker(has, store, SearchSettings(first_stage=stage, k=len(ANSWERS))).search_many(QUESTIONS, 5)
    for a, b in zip(full, two, strict=True):
        assert [h.id for h in a] == [h.id for h in b]
        assert np.allclose([h.score for h in a], [h.score for h in b], atol=1e-5)


def test_bm25_stage_keeps_only_answers_sharing_a_word(has: HashingModel, store: AnswerStore) -> None:
    hits = StoreRanker(has, store, SearchSettings(first_stage="bm25", k=100)).search("dogs", top=50)
    assert len(hits) == 24 and all("dogs" in h.text for h in hits)


def test_a_small_k_reranks_only_what_the_first_stage_kept(has: HashingModel, store: AnswerStore) -> None:
    ranker = StoreRanker(has, store, SearchSettings(first_stage="vector", k=7))
    kept = ranker.candidates(QUESTIONS[:1], has.encode_questions(QUESTIONS[:1]))[0]
    hits = ranker.search(QUESTIONS[0], top=10)
    assert len(kept) == 7 and len(hits) == 7
    assert {h.id for h in hits} == {store.record(int(r))[0] for r in kept}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_an_ivf_first_stage_searches_its_nearest_lists(has: HashingModel, tmp_path: Path) -> None:
    store = AnswerStore.build(has, ANSWERS, tmp_path / "ivf", vector_index="ivf", bm25=False)
    assert store.manifest["first_stage"]["vector"] == "ivf" and nlist(len(store)) == 3  # 39 a list
    everything = StoreRanker(has, store, SearchSettings(k=len(ANSWERS), nprobe=16)).search(QUESTIONS[0], 3)
    default = store.first_stage.search_vectors(has.encode_questions(QUESTIONS[:1]).numpy(), 200)[0][0]
    assert 0 < len(default) < len(ANSWERS)  # one of the 3 lists (a quarter, at least one): not all
    full = StoreRanker(has, store, SearchSettings(first_stage="none")).search(QUESTIONS[0], 3)
    assert [h.id for h in everything] == [h.id for h in full]  # every list searched: exact
    with pytest.raises(ConfigError, match=r"--first-stage bm25 needs bm25, which .* was built"):
        StoreRanker(has, store, SearchSettings(first_stage="bm25")).search("cats")
    # candidates given: no first stage needed
    assert len(StoreRanker(has, store, SearchSettings(first_stage="bm25")).score_ids("cats", ["a1"])) == 1


def test_fusion_orders_by_reciprocal_rank_or_by_weighted_scores() -> None:
    vector = (np.array([1, 2, 3]), np.array([0.9, 0.8, 0.1], dtype=np.float32))
    bm25 = (np.array([3, 4]), np.array([10.0, 2.0], dtype=np.float32))
    # rrf: 3 is in both lists (1/63 + 1/61), then 1 (1/61), then 2 and 4 tie at 1/62 (by row)
    assert fuse("rrf", [vector, bm25], 4).tolist() == [3, 1, 2, 4]
    # mix at weight 1: the vector scores alone; at 0: BM25's (rows it lacks score 0, ties by row)
    assert fuse("mix", [vector, bm25], 3, weight=1.0).tolist() == [1, 2, 3]
    assert fuse("mix", [vector, bm25], 2, weight=0.0).tolist() == [3, 1]


def test_an_ivf_over_a_handful_of_answers_has_as_many_lists_as_it_can_train(
    has: HashingModel, tmp_path: Path
) -> None:
    store = AnswerStore.build(has, ANSWERS[:10], tmp_path / "few", vector_index="ivf", bm25=False)
    assert len(StoreRanker(has, store, SearchSettings(k=10)).search(QUESTIONS[0], 3)) == 3
    assert nlist(10) == 1 and nlist(1_000_000) == 1024


def test_settings_and_index_choices_are_checked() -> None:
    assert choose_vector_index(200_000, "auto") == "flat" and choose_vector_index(200_001, "auto") == "ivf"
    assert choose_vector_index(10, "none") is None
    with pytest.raises(ConfigError, match="--vector-index must be one of auto, flat, ivf, none"):
        choose_vector_index(10, "hnsw")
    with pytest.raises(ConfigError, match="--first-stage must be one of"):
        SearchSettings(first_stage="dense")
    with pytest.raises(ConfigError, match="need --k >= 1"):
        SearchSettings(k=0)


def test_long_candidate_lists_are_scored_in_bounded_parts(
    has: HashingModel, store: AnswerStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranker = StoreRanker(has, store, SearchSettings(first_stage="none"))
    ids = [answer_id for answer_id, _ in ANSWERS[::-1]]
    whole = ranker.score_ids(QUESTIONS[0], ids)
    gathered = []
    real_gather = store.gather
    monkeypatch.setattr("sieveqa.runtime.store.ranker.ROWS_AT_ONCE", 7)
    monkeypatch.setattr(store, "gather", lambda rows: gathered.append(len(rows)) or real_gather(rows))
    assert torch.allclose(ranker.score_ids(QUESTIONS[0], ids), whole, atol=1e-6)
    assert max(gathered) == 7 and sum(gathered) == len(ids)


def test_an_empty_store_opens_and_finds_nothing(has: HashingModel, tmp_path: Path) -> None:
    store = AnswerStore.build(has, [], tmp_path / "empty")
    assert len(store) == 0 and store.first_stage.signals == []
    assert StoreRanker(has, store, SearchSettings(first_stage="none")).search("anything") == []
    assert StoreRanker(has, store).search("anything") == []  # no first stage needed to find nothing
    grown = store.append(has, ANSWERS[:3])
    assert grown.first_stage.signals == ["vector", "bm25"]
    assert len(StoreRanker(has, grown).search("cats", top=2)) == 2
