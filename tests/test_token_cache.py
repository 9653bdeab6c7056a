"""The token-id cache: bounded in bytes, least recently used out first, and a featurizer
that asks the tokenizer only for texts it has not seen."""

from __future__ import annotations

import copy
import threading

from sieveqa.token_cache import TokenCache, entry_bytes


def test_bytes_are_bounded_and_the_least_recently_used_goes_first() -> None:
    each = entry_bytes("a", [1, 2, 3])  # every text below is one character
    cache = TokenCache(capacity=3 * each)
    cache.put({"a": [1, 2, 3], "b": [4, 5, 6]})
    assert list(cache.take(["a"])) == ["a"] and cache.bytes == 2 * each
    cache.put({"c": [7, 8, 9]})  # full
    cache.put({"d": [1, 2, 3]})  # over: "b" (least recently used) goes, "a" was used
    assert set(cache.take(["a", "b", "c", "d"])) == {"a", "c", "d"} and cache.bytes == 3 * each
    cache.put({"x" * 10_000: [1]})  # one long string with few tokens: its bytes count, not its tokens
    assert "x" * 10_000 not in cache.take(["x" * 10_000]) and cache.bytes <= cache.capacity
    assert TokenCache(capacity=0).take(["a"]) == {} and not len(TokenCache(0))


def test_a_featurizer_tokenizes_a_text_once_and_its_copy_starts_empty(tiny_model) -> None:
    featurizer = tiny_model.featurizer
    featurizer.cache.clear()
    seen: list[str] = []
    encode = featurizer._encode_ids  # where every text is tokenized when no offsets are asked

    def counting(texts):
        seen.extend(texts)
        return encode(texts)

    featurizer._encode_ids = counting
    try:
        first = featurizer.pairs(["q?", "q?"], ["one text", "another text"], max_length=32)
        again = featurizer.pairs(["q?"], ["one text"], max_length=32)
    finally:
        del featurizer._encode_ids
    assert sorted(seen) == ["another text", "one text", "q?"]  # nothing twice
    assert again.input_ids[0] == first.input_ids[0]
    assert not len(copy.deepcopy(featurizer).cache) and len(featurizer.cache) == 3


def test_threads_putting_and_taking_keep_the_count_right() -> None:
    cache = TokenCache(capacity=50 * entry_bytes("0-00", [0] * 4))

    def work(k: int) -> None:
        for i in range(300):
            cache.put({f"{k}-{i % 70}": [i] * (i % 7 + 1)})
            cache.take([f"{k}-{(i * 7) % 70}"])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    held = cache.take(list(cache._ids))
    assert cache.bytes == sum(entry_bytes(t, v) for t, v in held.items()) <= cache.capacity
