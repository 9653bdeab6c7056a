"""split_sentences: pysbd boundaries, stripping, determinism."""

from __future__ import annotations

from sieveqa.data.sentences import split_sentences


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
