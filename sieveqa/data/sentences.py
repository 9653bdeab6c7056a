"""Sentence splitting for building sentence-level candidates (pysbd, English, rule based)."""

from __future__ import annotations

import functools

import pysbd

__all__ = ["sentence_spans", "split_sentences"]


@functools.cache
def _segmenter() -> pysbd.Segmenter:
    # clean=False keeps every sentence a verbatim piece of the input, so answer spans stay findable;
    # the segmenter holds no state between calls, so one shared instance is safe and saves setup.
    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences, stripped of surrounding whitespace, empty pieces dropped."""
    if not text or text.isspace():
        return []
    pieces = (piece.strip() for piece in _segmenter().segment(text))
    return [piece for piece in pieces if piece]


def sentence_spans(text: str, sentences: list[str] | None = None) -> list[tuple[int, int]]:
    """Character ``(start, end)`` of each sentence of ``text`` (``split_sentences``' by default).

    Sentences are located in order, each after the previous one, so a sentence that occurs twice
    maps to its own occurrence. A given sentence not found verbatim raises ValueError.
    """
    spans: list[tuple[int, int]] = []
    at = 0
    for sentence in split_sentences(text) if sentences is None else sentences:
        start = text.find(sentence, at)
        if start < 0:
            raise ValueError(f"sentence not found in its text after character {at}: {sentence[:60]!r}")
        spans.append((start, start + len(sentence)))
        at = start + len(sentence)
    return spans
