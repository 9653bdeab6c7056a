"""Passage windows, word chunks and sentence offsets."""

import pytest

from sieveqa.data.passages import count_tokens, pack_windows, word_chunks
from sieveqa.data.sentences import sentence_spans, split_sentences
from sieveqa.errors import ConfigError


def test_windows_tile_the_sentences_within_the_limit() -> None:
    assert pack_windows([50, 60, 80, 30, 10], 150) == [(0, 2), (2, 5)]


def test_a_sentence_longer_than_the_limit_is_a_window_of_its_own() -> None:
    assert pack_windows([10, 500, 10], 100) == [(0, 1), (1, 2), (2, 3)]


def test_a_step_starts_a_window_at_every_sentence() -> None:
    # Every start gives a window; (3, 4) ends the list, none is repeated.
    assert pack_windows([40, 40, 40, 40], 100, step=1) == [(0, 2), (1, 3), (2, 4), (3, 4)]


@pytest.mark.parametrize("args", [(0, None), (10, 0)])
def test_bad_window_settings_are_refused(args) -> None:
    with pytest.raises(ConfigError):
        pack_windows([1, 2], *args)


def test_word_chunks_cover_the_text_with_a_stride() -> None:
    text = " ".join(f"w{i}" for i in range(10))
    chunks = word_chunks(text, words=4, stride=2)
    assert [text[a:b] for a, b in chunks] == ["w0 w1 w2 w3", "w2 w3 w4 w5", "w4 w5 w6 w7", "w6 w7 w8 w9"]
    assert word_chunks(text, words=4) == [(0, 11), (12, 23), (24, 29)]
    with pytest.raises(ConfigError):
        word_chunks(text, words=4, stride=5)


def test_sentence_spans_point_at_each_occurrence() -> None:
    text = "It rains.  It rains. Then the sun shines!"
    spans = sentence_spans(text)
    assert (
        [text[a:b] for a, b in spans]
        == split_sentences(text)
        == ["It rains.", "It rains.", "Then the sun shines!"]
    )
    assert spans[0] != spans[1]
    with pytest.raises(ValueError, match="not found"):
        sentence_spans(text, ["It snows."])


def test_tokens_are_counted_without_special_tokens() -> None:
    assert count_tokens(["hello world", ""]) == [2, 0]


def test_a_sentence_longer_than_the_limit_is_cut_into_word_windows() -> None:
    from sieveqa.data.passages import passage_spans

    long = " ".join(f"w{i}" for i in range(100))  # ~200 tokens, no sentence break at all
    text = f"A short opening. {long}. A short ending."
    spans = sentence_spans(text)
    assert len(spans) == 3
    passages = passage_spans(text, spans, 50)
    tokens = count_tokens([text[a:b] for a, b in passages])
    assert len(passages) >= 4 and max(tokens) <= 50
    # The pieces tile the text in order, each cut at a word boundary.
    assert text[passages[0][0] :].startswith("A short opening.") and text[: passages[-1][1]].endswith(
        "ending."
    )
    assert all(text[b] == " " for _, b in passages[:-1])
    assert [w for a, b in passages for w in text[a:b].split()] == text.split()
