"""Tokenized inputs: pairs equal to the tokenizer's own, the question-cut rule, windows, segments, offsets."""

import itertools
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from sieveqa.backbones import load_backbone
from sieveqa.batching import collate, length_batches
from sieveqa.errors import ConfigError
from sieveqa.features import Features, Featurizer


@pytest.fixture(scope="module")
def tokenizer():
    return load_backbone("tiny").tokenizer


@pytest.fixture(scope="module")
def featurizer(tokenizer) -> Featurizer:
    return Featurizer(tokenizer)


def _words(n: int, start: int = 0) -> str:
    return " ".join(f"w{i}" for i in range(start, start + n))


def test_pairs_equal_the_tokenizers_own_when_nothing_is_cut(featurizer, tokenizer) -> None:
    questions = ["who wrote hamlet?", "what is the capital of france, the country in europe?"]
    texts = ["Shakespeare wrote it around 1600.", "Paris is the capital and largest city of France."]
    ours = featurizer.pairs(questions, texts, max_length=128)
    theirs = tokenizer(questions, texts, return_token_type_ids=True)
    assert ours.input_ids == theirs["input_ids"]
    assert ours.token_type_ids == theirs["token_type_ids"]
    assert ours.source == [0, 1] and ours.truncated == [False, False]


def test_texts_equal_the_tokenizers_own(featurizer, tokenizer) -> None:
    texts = ["Paris is in France.", _words(100)]
    ours = featurizer.texts(texts, max_length=32)
    theirs = tokenizer(texts, truncation=True, max_length=32, return_token_type_ids=True)
    assert ours.input_ids == theirs["input_ids"] and ours.truncated == [False, True]


def test_a_long_question_is_kept_whole_and_the_passage_cut(featurizer) -> None:
    # 80 question tokens and a 200-token passage in 128: longest_first would cut the question too.
    features = featurizer.pairs([_words(40)], [_words(200, 500)], max_length=128)
    (ids,) = features.input_ids
    question_len = ids.index(featurizer.sep_id) - 1
    assert len(ids) == 128 and question_len == len(featurizer._encode([_words(40)])[0].ids)
    assert features.truncated == [True]


def test_a_question_that_nearly_fills_the_limit_is_still_kept_whole(featurizer) -> None:
    question = _words(40)
    q_len = len(featurizer._encode([question])[0].ids)
    features = featurizer.pairs([question], [_words(200, 500)], max_length=q_len + 3 + 2)
    (ids,) = features.input_ids
    assert ids.index(featurizer.sep_id) - 1 == q_len and len(ids) == q_len + 5  # 2 passage tokens


def test_a_question_that_alone_fills_the_limit_is_cut_leaving_a_quarter(featurizer) -> None:
    features = featurizer.pairs([_words(300)], [_words(50, 900)], max_length=64)
    (ids,) = features.input_ids
    budget = 64 - 3
    assert len(ids) == 64
    assert ids.index(featurizer.sep_id) - 1 == budget - budget // 4  # question tokens kept
    assert features.truncated == [True]


def test_an_empty_candidate_never_makes_a_row_longer_than_the_limit(featurizer) -> None:
    features = featurizer.pairs([_words(400), "short?"], ["", ""], max_length=64)
    assert [len(ids) for ids in features.input_ids] == [64, len(featurizer._encode(["short?"])[0].ids) + 3]
    assert features.truncated == [True, False]


def test_windows_overlap_by_the_stride_and_cover_the_passage(featurizer) -> None:
    passage = _words(100)
    whole = list(featurizer._encode([passage])[0].ids)
    features = featurizer.pairs(["q?"], [passage], max_length=48, stride=8, offsets=True)
    assert len(features) > 1 and set(features.source) == {0} and not any(features.truncated)
    covered = []
    for ids, segs in zip(features.input_ids, features.segment_ids, strict=True):
        assert len(ids) <= 48
        covered.append([t for t, s in zip(ids, segs, strict=True) if s == 1])
    for a, b in itertools.pairwise(covered):
        assert a[-8:] == b[:8]  # consecutive windows share `stride` tokens
    assert covered[0] + [t for c in covered[1:] for t in c[8:]] == whole
    with pytest.raises(ConfigError, match="stride 60 must be below"):
        featurizer.pairs(["q?"], [passage], max_length=48, stride=60)


def test_a_long_question_is_cut_so_windows_still_advance(featurizer) -> None:
    # A question of 40 tokens left 5 passage tokens per window, fewer than the stride of 8: every
    # answer over windowed passages failed (issue 30: /answer with a 1,000-character question gave 500).
    passage = _words(100)
    whole = list(featurizer._encode([passage])[0].ids)
    question = " ".join(["the"] * 40)  # 40 tokens
    features = featurizer.pairs([question], [passage], max_length=48, stride=8, offsets=True)
    budget = 48 - 3
    covered = []
    for ids, segs in zip(features.input_ids, features.segment_ids, strict=True):
        assert len(ids) <= 48 and segs.count(0) == budget - 8 - budget // 4  # the question, cut
        covered.append([t for t, s in zip(ids, segs, strict=True) if s == 1])
    assert all(features.truncated) and covered[0] + [t for c in covered[1:] for t in c[8:]] == whole
    short = featurizer.pairs([question], ["a b"], max_length=48, stride=8)
    assert len(short) == 1 and not any(short.truncated)  # a passage that fits leaves the question whole


def test_segments_get_their_ids_and_offsets_point_into_their_own_text(featurizer) -> None:
    sentences = ["Paris is big.", "It is in France.", "Rome is in Italy."]
    features = featurizer.segments(["where is paris?"], [sentences], max_length=128, offsets=True)
    ids, segs, spans = features.input_ids[0], features.segment_ids[0], features.offsets[0]
    assert ids.count(featurizer.sep_id) == 4  # after the question, between sentences, at the end
    assert sorted(set(segs)) == [-1, 0, 1, 2, 3]
    for k, sentence in enumerate(sentences, start=1):
        pieces = [sentence[a:b] for s, (a, b) in zip(segs, spans, strict=True) if s == k]
        assert "".join(pieces).lower() == sentence.replace(" ", "").lower()


def test_the_featurizer_is_safe_to_share_between_threads(featurizer) -> None:
    questions = [f"question {i}?" for i in range(50)]
    texts = [_words(5 + i % 40) for i in range(50)]
    serial = featurizer.pairs(questions, texts, max_length=32).input_ids
    with ThreadPoolExecutor(8) as pool:
        results = list(
            pool.map(lambda _: featurizer.pairs(questions, texts, max_length=32).input_ids, range(16))
        )
    assert all(r == serial for r in results)


def test_inference_batches_sorted_and_complete() -> None:
    lengths = [5, 1, 9, 3, 7, 2, 8]
    batches = length_batches(lengths, 3)
    assert sorted(i for b in batches for i in b) == list(range(7))
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(lengths)
    assert [len(b) for b in batches] == [3, 3, 1]


def test_inference_batches_close_before_padding_grows() -> None:
    lengths = [40, 10, 10, 41, 10, 10, 40, 10, 40, 40, 10, 40]
    batches = length_batches(lengths, 64)
    assert [sorted(lengths[i] for i in b) for b in batches] == [[10] * 6, [40, 40, 40, 40, 40, 41]]
    assert length_batches([10, 50, 90], 64) == [[0, 1, 2]]  # under MIN_ROWS rows: one batch
    assert length_batches([], 8) == []


def test_training_batches_cover_every_row_once_and_depend_on_seed() -> None:
    lengths = [random.Random(0).randint(5, 60) for _ in range(500)]
    a = length_batches(lengths, 16, rng=random.Random(1), pool_batches=4)
    b = length_batches(lengths, 16, rng=random.Random(1), pool_batches=4)
    c = length_batches(lengths, 16, rng=random.Random(2), pool_batches=4)
    assert a == b and a != c
    assert sorted(i for batch in a for i in batch) == list(range(500))
    # Bucketing: the mean padding per row is far below that of random batches.
    pad = sum(max(lengths[i] for i in batch) * len(batch) - sum(lengths[i] for i in batch) for batch in a)
    assert pad / 500 < 8


def test_collate_pads_right_with_mask_and_segments() -> None:
    feats = Features([[101, 7, 102], [101, 102]], [[0, 0, 1], [0, 1]], segment_ids=[[-1, 0, -1], [-1, -1]])
    batch = collate(feats, [1, 0], pad_id=0, segments=True)
    assert batch["input_ids"].tolist() == [[101, 102, 0], [101, 7, 102]]
    assert batch["attention_mask"].tolist() == [[1, 1, 0], [1, 1, 1]]
    assert batch["token_type_ids"].tolist() == [[0, 1, 0], [0, 0, 1]]
    assert batch["segment_ids"].tolist() == [[-1, -1, -1], [-1, 0, -1]]
    assert batch["input_ids"].dtype == torch.long


HARD_TEXTS = [
    "Zürich's Ærøskøbing façade — “quoted” ‘single’ …",
    "上海市 東京 ソウル 한국어 🙂👍🏽 ½ ⅔ ﬀ",
    "x\u0301\u0308 combining, \u200b\u200c\u200d\ufeff format, \x01\x1f control, \ue123 private",
    "w" * 99 + " " + "w" * 101,
    "[SEP] [CLS] [MASK] written in the text; ##suffix",
    "",
    " \t\n ",
    "1,234.56 %$#@! e-mail@host.org http://a.b/c?d=e",
]


def test_the_fast_tokenizer_gives_hugging_faces_ids(featurizer) -> None:
    if featurizer._fast is None:
        pytest.skip("nanotoken is not installed")
    rng = random.Random(3)
    fuzz = ["".join(chr(rng.randrange(32, 0x3000)) for _ in range(rng.randrange(40))) for _ in range(300)]
    texts = HARD_TEXTS + fuzz
    slow = featurizer._backend.encode_batch(texts, add_special_tokens=False)
    assert [list(e.ids) for e in featurizer._encode_ids(texts)] == [e.ids for e in slow]


def test_the_fast_tokenizer_matches_on_real_sentences(featurizer, real_data) -> None:
    if featurizer._fast is None:
        pytest.skip("nanotoken is not installed")
    from sieveqa.data.registry import load_dataset

    texts = [c.text for e in load_dataset("wikiqa:test")[:60] for c in e.candidates]
    slow = featurizer._backend.encode_batch(texts, add_special_tokens=False)
    assert [list(e.ids) for e in featurizer._encode_ids(texts)] == [e.ids for e in slow]


def test_forget_drops_the_token_ids_held(featurizer) -> None:
    featurizer.pairs(["a question?"], ["a text to remember"], max_length=32)
    assert len(featurizer.cache)
    featurizer.forget()
    assert not len(featurizer.cache)


def test_compact_rows_collate_as_the_lists_and_drop_the_offsets(featurizer) -> None:
    from array import array

    questions, texts = ["who wrote it?", "when?"], ["Austen wrote it in 1813.", "In 1813, long ago."]
    rows = featurizer.pairs(questions, texts, 16, stride=4, offsets=True)
    small = rows.compact()
    assert small.offsets is None and rows.offsets is not None  # the original is left as it was
    assert all(isinstance(r, array) for r in small.input_ids + small.token_type_ids + small.segment_ids)
    assert [list(r) for r in small.input_ids] == rows.input_ids and small.source == rows.source
    assert small.lengths == rows.lengths and small.max_length == 16
    every = list(range(len(rows)))
    for name, tensor in collate(rows, every, 0, segments=True).items():
        assert torch.equal(collate(small, every, 0, segments=True)[name], tensor), name
    again = small.compact()
    assert all(a is b for a, b in zip(again.input_ids, small.input_ids, strict=True))  # shared, not copied
    wide = Features([array("q", rows.input_ids[0])], [array("q", rows.token_type_ids[0])]).compact()
    assert (wide.input_ids[0].typecode, wide.token_type_ids[0].typecode) == ("i", "b")
    with pytest.raises(OverflowError):
        Features([[2**31]], [[0]]).compact()


def test_concat_numbers_the_inputs_of_every_part(featurizer) -> None:
    questions = ["who?", "what?", "where?"]
    texts = ["one two three four five six seven eight nine ten", "short", "also short"]
    whole = featurizer.pairs(questions, texts, 12, stride=2, offsets=True)
    parts = [(0, featurizer.pairs(questions[:1], texts[:1], 12, 2, True))]
    parts.append((1, featurizer.pairs(questions[1:], texts[1:], 12, 2, True)))
    joined = Features.concat(parts)
    assert joined.source == whole.source and max(whole.source) == 2 and len(whole) > 3  # windows
    assert joined.input_ids == whole.input_ids and joined.offsets == whole.offsets
    assert joined.segment_ids == whole.segment_ids and joined.truncated == whole.truncated
    with pytest.raises(ValueError, match="different kinds"):
        Features.concat([(0, whole), (3, whole.compact())])


def test_a_lone_surrogate_is_read_as_a_replacement_character(tiny_model) -> None:
    # Found by a hostile probe: predict raised a raw UnicodeEncodeError (JSON may carry "\ud800")
    lone, replaced = tiny_model.predict([("what is \ud800", "a text"), ("what is \ufffd", "a text")])
    # the same tokens; two rows of one batch may round apart in the last bits (a GEMM's row tail)
    assert lone == pytest.approx(replaced, abs=1e-5)
