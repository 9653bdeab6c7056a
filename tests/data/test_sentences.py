"""split_sentences: pysbd boundaries, stripping, determinism."""

from __future__ import annotations

from sieveqa.data.sentences import MAX_SENTENCE_CHARS, split_sentences


def test_abbreviations_and_decimals_do_not_split() -> None:
    text = "Dr. Smith went to Washington. He arrived at 5 p.m. on Monday. It cost $3.50!  Was it worth it?"
    assert split_sentences(text) == [
        "Dr. Smith went to Washington.",
        "He arrived at 5 p.m. on Monday.",
        "It cost $3.50!",
        "Was it worth it?",
    ]


def test_empty_and_unpunctuated_input() -> None:
    assert split_sentences("") == []
    assert split_sentences("  \n ") == []
    assert split_sentences("  No terminal punctuation ") == ["No terminal punctuation"]


def test_pieces_are_verbatim_substrings_and_deterministic() -> None:
    text = (
        "The Rhine rises in the Swiss Alps. It flows through Germany (approx. 865 km) and the Netherlands. "
        'He said: "It is long." Then he left.\nA new line starts here.'
    )
    first = split_sentences(text)
    assert first == split_sentences(text)
    assert len(first) >= 4
    assert all(piece and piece == piece.strip() and piece in text for piece in first)


def test_a_quote_that_never_closes_does_not_swallow_the_text() -> None:
    # pysbd alone pairs the stray inch mark with the next quote: one five-sentence "sentence".
    text = 'It was 5" long. Then he left. She came back. It was late. He said "no" to that.'
    assert len(split_sentences(text, guard=False)) == 1
    assert split_sentences(text) == [
        'It was 5" long.',
        "Then he left.",
        "She came back.",
        "It was late.",
        'He said "no" to that.',
    ]


def test_an_empty_quote_or_a_stray_bracket_does_not_merge_sentences() -> None:
    empty = 'The term "" is odd. Then he left. She came back. He called it "x" later.'
    assert len(split_sentences(empty)) == 4
    bracket = "Steps: 1) mix. 2) bake. Then he left. She came back. It was (mostly) late."
    assert "She came back." in split_sentences(bracket)


def test_a_section_after_an_unbalanced_quote_keeps_its_sentences() -> None:
    sentences = [f"Sentence number {i} says something about the river." for i in range(17)]
    sentences[2] = 'The bridge is 40" wide at the middle.'
    sentences[16] = 'Locals call it "the old one" today.'
    assert split_sentences(" ".join(sentences)) == sentences


def test_sentences_quoted_within_a_sentence_stay_together() -> None:
    text = 'He said "I came. I saw." Then he left.'
    assert split_sentences(text) == ['He said "I came. I saw."', "Then he left."]


def test_a_closing_quote_goes_back_to_the_sentence_it_closes() -> None:
    # The opening quote is before the text (a passage cut from a quotation); pysbd alone starts the
    # next sentence with the closing quote.
    text = 'It is ours. We want it for free." You are messing with them.'
    assert split_sentences(text, guard=False)[-1].startswith('"')
    assert split_sentences(text) == ["It is ours.", 'We want it for free."', "You are messing with them."]


def test_a_very_long_sentence_is_cut_at_word_boundaries() -> None:
    text = " ".join(f"w{i}" for i in range(1000))  # 4,890 characters, no break
    pieces = split_sentences(text)
    assert len(pieces) == 5 and max(map(len, pieces)) <= MAX_SENTENCE_CHARS
    assert " ".join(pieces) == text
    assert split_sentences("x" * 2500) == ["x" * 1000, "x" * 1000, "x" * 500]
