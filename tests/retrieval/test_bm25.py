"""BM25Index: ranking, determinism, batching and edge cases on hand-made corpora."""

from __future__ import annotations

from pathlib import Path

import pytest

from sieveqa.retrieval import BM25Index
from sieveqa.retrieval.bm25 import split_words

DOCS = {
    "d1": "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
    "d2": "Photosynthesis converts light energy into chemical energy in plants.",
    "d3": "The Great Wall of China stretches across northern China.",
    "d4": "Paris is the capital of France and its largest city.",
}


@pytest.fixture(scope="module")
def index() -> BM25Index:
    return BM25Index.build(list(DOCS), list(DOCS.values()))


def test_obvious_match_ranks_first(index: BM25Index) -> None:
    assert index.search("How do plants turn light into chemical energy?", 2)[0][0] == "d2"
    assert index.search("wrought iron lattice tower", 1)[0][0] == "d1"
    assert index.search("Great Wall of China", 4)[0][0] == "d3"


def test_scores_descend_and_k_is_capped(index: BM25Index) -> None:
    hits = index.search("Paris France tower", 10)
    assert len(hits) == len(DOCS)
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert {h[0] for h in hits[:2]} == {"d1", "d4"}
    assert scores[0] > 0 and scores[-1] == 0.0
    assert index.search("Paris", 0) == []


def test_stopwords_and_unknown_words_do_not_score(index: BM25Index) -> None:
    # Only stopwords / unseen words: every score is 0, so the order is the id order.
    assert index.search("the of and is", 4) == [("d1", 0.0), ("d2", 0.0), ("d3", 0.0), ("d4", 0.0)]
    assert [i for i, _ in index.search("zyzzyva", 3)] == ["d1", "d2", "d3"]


def test_ties_broken_by_id_whatever_the_insertion_order() -> None:
    text = "identical text about rivers"
    ids = ["b", "c", "a", "d"]
    index = BM25Index.build(ids, [text, text, text, "unrelated words"])
    assert [i for i, _ in index.search("rivers", 2)] == ["a", "b"]
    assert [i for i, _ in index.search("rivers", 4)] == ["a", "b", "c", "d"]


def test_search_many_equals_search(index: BM25Index) -> None:
    queries = ["capital of France", "chemical energy", "", "China wall"]
    assert index.search_many(queries, 3) == [index.search(q, 3) for q in queries]
    assert index.search_many([], 3) == []


def test_bm25_parameters_matter() -> None:
    ids, texts = ["short", "long"], ["apple pie", "apple " + " ".join(f"w{i}" for i in range(50))]
    flat = dict(BM25Index.build(ids, texts, b=0.0).search("apple", 2))
    normed = dict(BM25Index.build(ids, texts, b=0.75).search("apple", 2))
    assert flat["short"] == pytest.approx(flat["long"])
    assert normed["short"] > normed["long"]


def test_build_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="2 ids but 1 texts"):
        BM25Index.build(["a", "b"], ["x"])
    with pytest.raises(ValueError, match="duplicate"):
        BM25Index.build(["a", "a"], ["x", "y"])
    with pytest.raises(ValueError, match="empty"):
        BM25Index.build([], [])


def test_retrieval_layer_imports_nothing_above_it() -> None:
    import sieveqa.retrieval.bm25 as module

    source = Path(module.__file__).read_text(encoding="utf-8")
    for layer in ("sieveqa.models", "sieveqa.runtime", "sieveqa.cli"):
        assert layer not in source


def test_text_without_spaces_is_found_by_its_words(tmp_path: Path) -> None:
    """Chinese and Japanese clauses have no spaces: before, a whole clause was one word and no
    question ever matched it."""
    docs = {
        "ja-tower": "東京タワーは高さ333メートルの電波塔です。",
        "ja-cat": "猫は夜行性の動物で、よく眠ります。",
        "zh-wall": "长城位于中国北方，全长两万多公里。",
        "ko-seoul": "서울에서 가장 높은 건물은 롯데월드타워입니다.",
        "en": "The Eiffel Tower is in Paris.",
    }
    index = BM25Index.build(list(docs), list(docs.values()))
    assert index.search("東京タワーの高さは？", 1)[0][0] == "ja-tower"
    assert index.search("猫", 1)[0][0] == "ja-cat"  # one character is a word too
    assert index.search("长城有多长？", 1)[0][0] == "zh-wall"
    assert index.search("서울에서 가장 높은 건물", 1)[0][0] == "ko-seoul"
    assert index.search("Where is the Eiffel Tower?", 1)[0][0] == "en"
    index.save(tmp_path / "cjk")
    assert BM25Index.load(tmp_path / "cjk").search("东京タワー 高さ", 1)[0][0] == "ja-tower"


def test_words_without_cjk_split_as_bm25s_does() -> None:
    """Indexes built before CJK splitting stay valid: text without CJK splits exactly as bm25s' own."""
    import re

    text = "The quick brown fox, a_b 3.14 naïve café-au-lait x I"
    assert split_words(text) == re.findall(r"(?u)\b\w\w+\b", text)
    assert split_words("東京tower") == ["東", "京", "東京", "tower"]
