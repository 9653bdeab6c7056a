"""Passages cut from documents: sentence windows of at most N tokens (PEASI, section 3.3) or word chunks.

A *sentence window* packs consecutive sentences while their token count stays within the limit (a
sentence longer than the limit is cut at word boundaries into pieces within it, or, for the published
benchmark passages, stays a window of its own). Windows either
tile the document (the index) or start at every ``step``-th sentence (training data, so a labelled
sentence appears at several positions of a passage, as the paper's sliding window does).
*Word chunks* are windows of N whitespace-separated words with a stride, as in DPR and the adaptive
computation paper.

Tokens are counted with the WordPiece tokenizer the shipped models share, without special tokens.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer

from sieveqa.errors import ConfigError

__all__ = ["count_tokens", "pack_windows", "passage_spans", "tokenizer_signature", "word_chunks"]

Span = tuple[int, int]
_WORD = re.compile(r"\S+")


def _tokenizer_file() -> Path:
    from sieveqa.backbones import tokenizer_dir  # loads transformers: only when tokens are counted

    return tokenizer_dir() / "tokenizer.json"


@functools.cache
def _tokenizer() -> Tokenizer:
    tok = Tokenizer.from_file(str(_tokenizer_file()))
    tok.no_truncation()
    tok.no_padding()
    return tok


@functools.cache
def tokenizer_signature() -> dict[str, str]:
    """What counted the tokens: recorded with an index so another tokenizer is noticed."""
    data = _tokenizer_file().read_bytes()
    return {"tokenizer": "minilm-l6 wordpiece", "sha256": hashlib.sha256(data).hexdigest()}


def count_tokens(texts: Sequence[str]) -> list[int]:
    """WordPiece tokens of each text, special tokens excluded."""
    if not texts:
        return []
    return [len(enc.ids) for enc in _tokenizer().encode_batch(list(texts), add_special_tokens=False)]


def pack_windows(lengths: Sequence[int], max_tokens: int, step: int | None = None) -> list[Span]:
    """``[lo, hi)`` sentence ranges of at most ``max_tokens`` tokens (at least one sentence each).

    Without ``step`` the windows tile the sentences; with it a window starts at every ``step``-th
    sentence (duplicates dropped), so windows overlap.
    """
    if max_tokens < 1:
        raise ConfigError(f"passage max_tokens must be >= 1, got {max_tokens}")
    if step is not None and step < 1:
        raise ConfigError(f"window step must be >= 1, got {step}")
    out: list[Span] = []
    lo = 0
    while lo < len(lengths):
        hi, total = lo + 1, lengths[lo]
        while hi < len(lengths) and total + lengths[hi] <= max_tokens:
            total += lengths[hi]
            hi += 1
        if not out or out[-1] != (lo, hi):
            out.append((lo, hi))
        if step is None:
            lo = hi
        else:
            lo += step
    return out


def word_chunks(text: str, words: int = 100, stride: int | None = None) -> list[Span]:
    """Character spans of windows of ``words`` words, a new one every ``stride`` words (default:
    ``words``, no overlap); the last window ends at the text's last word."""
    stride = words if stride is None else stride
    if words < 1 or not 1 <= stride <= words:
        raise ConfigError(f"word chunks need words >= 1 and 1 <= stride <= words, got {words}, {stride}")
    bounds = [m.span() for m in _WORD.finditer(text)]
    out: list[Span] = []
    for lo in range(0, len(bounds), stride):
        hi = min(lo + words, len(bounds))
        out.append((bounds[lo][0], bounds[hi - 1][1]))
        if hi == len(bounds):
            break
    return out


def passage_spans(
    text: str,
    sentences: Sequence[Span],
    max_tokens: int,
    chunk_words: int | None = None,
    chunk_stride: int | None = None,
    cut_sentences: bool = True,
    breaks: Sequence[int] = (),
) -> list[Span]:
    """Character spans of a text's passages: sentence windows of at most ``max_tokens`` tokens, or
    word chunks when ``chunk_words`` is given. Without ``cut_sentences`` a longer sentence is a
    window of its own (models window it further), as the published benchmark passages have it. A
    window never spans one of the ``breaks`` (offsets where a section of the file starts)."""
    if chunk_words is not None:
        return word_chunks(text, chunk_words, chunk_stride)
    units: list[Span] = []
    lengths: list[int] = []
    for span, tokens in zip(sentences, count_tokens([text[a:b] for a, b in sentences]), strict=True):
        pieces = [span] if tokens <= max_tokens or not cut_sentences else _cut_words(text, span, max_tokens)
        units += pieces
        lengths += [tokens] if len(pieces) == 1 else count_tokens([text[a:b] for a, b in pieces])
    out: list[Span] = []
    starts = sorted(set(breaks))
    group = 0
    while group < len(units):
        end = group + 1
        while end < len(units) and not _between(starts, units[end - 1][1], units[end][0]):
            end += 1
        windows = pack_windows(lengths[group:end], max_tokens)
        out += [(units[group + lo][0], units[group + hi - 1][1]) for lo, hi in windows]
        group = end
    return out


def _between(starts: list[int], lo: int, hi: int) -> bool:
    """Whether a sorted offset in ``starts`` lies in ``[lo, hi]``."""
    at = bisect.bisect_left(starts, lo)
    return at < len(starts) and starts[at] <= hi


def _cut_words(text: str, span: Span, max_tokens: int) -> list[Span]:
    """A sentence longer than ``max_tokens`` tokens cut at word boundaries into pieces of at most
    that many (a single word longer than the limit stays whole)."""
    words = [m.span() for m in _WORD.finditer(text, *span)]
    windows = pack_windows(count_tokens([text[a:b] for a, b in words]), max_tokens)
    return [(words[lo][0], words[hi - 1][1]) for lo, hi in windows]
