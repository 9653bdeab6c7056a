"""Sentence splitting for building sentence-level candidates (pysbd, English, rule based)."""

from __future__ import annotations

import functools

import pysbd

__all__ = ["split_sentences"]


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
