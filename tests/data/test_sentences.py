"""Sentence splitting: every character of a text lands in a sentence, whatever marks it holds."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sieveqa.data.sentences import sentence_spans, split_sentences

# What trips sentence splitters: quotes and brackets (paired or not), abbreviations, numbers with
# periods, list marks, newlines, and the characters pysbd uses internally as placeholders.
PIECES = [
    "The",
    "flux",
    "is",
    "∯",
    "E",
    "dA",
    "♨",
    "ȸ",
    "ǃ",
    "☝",
    "⁃",
    "Dr.",
    "U.S.",
    "e.g.",
    "3.14",
    "No.",
    "1.",
    "a)",
    "(",
    ")",
    "[",
    "]",
    '"',
    "'",
    "“",
    "”",
    "«",
    "»",
    "--",
    "...",
    ".",
    "!",
    "?",
    ";",
    ",",
    "\n",
    "\n\n",
    "  ",
    "Mr.",
    "Smith",
    "said",
    "cats",
    "rain.",
]


def _covers_every_character(text: str, guard: bool) -> None:
    spans = sentence_spans(text, guard=guard)
    covered = set()
    last = 0
    for a, b in spans:
        assert last <= a < b <= len(text)
        assert text[a:b] == text[a:b].strip()
        covered.update(range(a, b))
        last = b
    lost = [i for i, ch in enumerate(text) if not ch.isspace() and i not in covered]
    assert not lost, f"characters {[text[i] for i in lost[:5]]} of {text!r} are in no sentence"


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=40).map(" ".join))
def test_every_non_blank_character_is_in_a_sentence(text: str) -> None:
    """pysbd's placeholders (∯, ♨, ȸ, ...) made a sentence vanish, or `index corpus` refuse the
    document: a fuzz lost all the text of 173 of 1,500 texts (issue 42)."""
    _covers_every_character(text, guard=True)
    _covers_every_character(text, guard=False)


@pytest.mark.parametrize("mark", ["∯", "♨", "ȸ", "ƪ", "✂"])
def test_a_sentence_with_a_placeholder_character_is_kept(mark: str) -> None:
    first, second = f"The integral {mark} S of the field is zero.", "The charge inside is zero too."
    text = f"{first} {second}"
    assert split_sentences(text) == [first, second]
    assert sentence_spans(text) == [(0, len(first)), (len(first) + 1, len(text))]


@pytest.mark.slow
def test_a_long_text_reaches_pysbd_in_blocks_and_keeps_every_character(monkeypatch) -> None:
    """pysbd's time grows with the square of its input: a 5 MB document without sentence breaks
    was not indexed in 300 s (issue 42). Now it never reads more than BLOCK_CHARS of a long text."""
    import random

    from sieveqa.data import sentences

    seen: list[int] = []
    real = sentences._segmenter()

    class Recording:
        def segment(self, text: str) -> list[str]:
            seen.append(len(text))
            return real.segment(text)

    monkeypatch.setattr(sentences, "_segmenter", lambda: Recording())
    rng = random.Random(0)
    text = " ".join(rng.choice(PIECES) for _ in range(12_000))  # ~50,000 characters
    _covers_every_character(text, guard=True)
    assert seen and max(seen) <= sentences.BLOCK_CHARS
    seen.clear()
    wall = " ".join(f"w{i}" for i in range(10_000))  # no sentence break at all
    assert "".join(split_sentences(wall)).replace(" ", "") == wall.replace(" ", "")
    assert max(seen) <= sentences.BLOCK_CHARS


def test_paragraph_splits_are_remembered_and_long_texts_are_not() -> None:
    from sieveqa.data import sentences

    cached = sentences._pysbd_cached
    cached.cache_clear()
    paragraph = "Tea is a drink. Bees make honey. The sea is salty."
    first = split_sentences(paragraph)
    assert split_sentences(paragraph) == first == ["Tea is a drink.", "Bees make honey.", "The sea is salty."]
    assert cached.cache_info().hits == 1 and cached.cache_info().maxsize == sentences.CACHED_TEXTS
    copies = sentences.CACHED_CHARS // len(paragraph) + 1
    long_text = " ".join([paragraph] * copies)
    assert len(long_text) > sentences.CACHED_CHARS and len(split_sentences(long_text)) == 3 * copies
    assert cached.cache_info().currsize == 1  # a long text is split, never kept
