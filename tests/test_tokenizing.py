"""The tokenizers a featurizer uses (the fast one only where it gives Hugging Face's ids) and the
token-id cache: bounded in bytes, least recently used out first, each text tokenized once."""

from __future__ import annotations

import copy
import threading

import pytest

from sieveqa.backbones import load_backbone
from sieveqa.features import Featurizer
from sieveqa.tokenizing import TokenCache, entry_bytes


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


def test_a_fast_tokenizer_that_differs_or_is_turned_off_is_not_used(monkeypatch) -> None:
    nanotoken = pytest.importorskip("nanotoken")
    tokenizer = load_backbone("tiny").tokenizer

    from sieveqa import tokenizing

    spec = tokenizer.backend_tokenizer.to_str()
    tokenizing.fast_backend.cache_clear()
    monkeypatch.setattr(
        nanotoken.Tokenizer, "encode_batch_list", lambda self, texts, **kw: [[1]] * len(texts)
    )
    assert tokenizing.fast_backend(spec) is None  # the probes differ: Hugging Face's is kept
    monkeypatch.undo()
    tokenizing.fast_backend.cache_clear()
    monkeypatch.setenv(tokenizing.TOKENIZER_ENV, "hf")
    assert tokenizing.fast_backend(spec) is None and Featurizer(tokenizer)._fast is None
    monkeypatch.delenv(tokenizing.TOKENIZER_ENV)
    tokenizing.fast_backend.cache_clear()
    assert tokenizing.fast_backend(spec) is not None


def test_an_error_in_the_fast_tokenizers_check_falls_back_to_hugging_faces(monkeypatch) -> None:
    """A code review: an error in nanotoken's load-time check failed the model's load."""
    nanotoken = pytest.importorskip("nanotoken")
    from sieveqa import tokenizing

    def broken(self, texts, **kw):
        raise RuntimeError("a thread pool that cannot start")

    spec = load_backbone("tiny").tokenizer.backend_tokenizer.to_str()
    tokenizing.fast_backend.cache_clear()
    monkeypatch.setattr(nanotoken.Tokenizer, "encode_batch_list", broken)
    assert tokenizing.fast_backend(spec) is None
    monkeypatch.undo()
    tokenizing.fast_backend.cache_clear()


def test_a_tokenizer_nanotoken_does_not_take_stays_on_hugging_faces() -> None:
    pytest.importorskip("nanotoken")
    from tokenizers import Tokenizer, models

    from sieveqa import tokenizing

    bpe = Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "ab": 2}, merges=[("a", "b")]))
    assert tokenizing.fast_backend(bpe.to_str()) is None
