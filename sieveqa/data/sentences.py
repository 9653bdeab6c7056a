"""Sentence splitting for building sentence-level candidates: pysbd (English, rule based), guarded.

pysbd never splits inside quotes, parentheses or brackets, and it pairs them greedily: one quote that
never closes (``5" long``), an empty pair (``""``) or a stray parenthesis makes it treat everything up to
the next such mark as one quotation, so whole paragraphs become one "sentence". The guard re-splits
such a piece blind to those marks, unless every cut falls inside a properly paired quotation or bracket
of at most ``QUOTED_SENTENCE_CHARS`` (sentences quoted within a sentence); gives a closing mark that
pysbd left at the start of the next sentence back to the one it closes; and cuts what is still longer
than ``MAX_SENTENCE_CHARS`` at a word boundary. Boundary precision and recall against WikiQA's and
TrecQA's own sentences: docs/RESULTS.md. Datasets built from SQuAD keep pysbd's split alone
(``guard=False``), the sentences their published numbers were measured on.
"""

from __future__ import annotations

import functools
import itertools
import re

import pysbd

__all__ = [
    "MAX_SENTENCE_CHARS",
    "QUOTED_SENTENCE_CHARS",
    "SPLITTER_VERSION",
    "sentence_spans",
    "split_sentences",
]

Span = tuple[int, int]

SPLITTER_VERSION = 3  # 1: pysbd alone; 2: guarded; 3: placeholders kept, long texts in blocks. Recorded.
MAX_SENTENCE_CHARS = 1000
WHOLE_CHARS = 10_000  # texts up to this go to pysbd whole (every SQuAD paragraph, as it was split)
BLOCK_CHARS = 2_000  # longer ones in blocks of at most this
QUOTED_SENTENCE_CHARS = 150  # chosen on WikiQA and TrecQA dev among 0, 150, 300, 600 (docs/RESULTS.md)
# The marks pysbd pairs up; a single quote only where it cannot be an apostrophe.
_PAIRED = re.compile(r"[\"“”„«»‘’()\[\]]|(?<!\S)'|'(?!\w)|--")
_PAIRS = (("“", "”"), ("(", ")"), ("[", "]"), ("«", "»"))
_SENTENCE_END = re.compile(r"[.!?][\"”’)\]]*\s+")
_CLOSER = re.compile(r"([\"”’)\]»]+)(?:\s+|$)")
# Characters pysbd (0.3.4) uses internally as placeholders (for periods in abbreviations, list marks,
# ...): a sentence holding one of its own was dropped or could not be found. They go to a private-use
# character, one for one, so the spans found in the mapped text are the input's.
_PLACEHOLDERS = str.maketrans(dict.fromkeys("ƪǃȸȹᓰᓱᓳᓴᓷᓸ⁃∮∯⌬⎋☄☇☈☉☏☝♝♟♨♬♭✂", "\ue000"))


@functools.cache
def _segmenter() -> pysbd.Segmenter:
    # clean=False keeps every sentence a verbatim piece of the input, so answer spans stay findable;
    # the segmenter holds no state between calls, so one shared instance is safe and saves setup.
    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str, guard: bool = True) -> list[str]:
    """Split ``text`` into sentences, stripped of surrounding whitespace, empty pieces dropped.

    ``guard=False`` gives pysbd's split alone (what SQuAD-AS2's sentences were built with).
    """
    return [text[a:b] for a, b in _split(text, guard)]


def sentence_spans(text: str, sentences: list[str] | None = None, guard: bool = True) -> list[Span]:
    """Character ``(start, end)`` of each sentence of ``text`` (``split_sentences``' by default).

    Given sentences are located in order, each after the previous one, so a sentence that occurs
    twice maps to its own occurrence. A given sentence not found verbatim raises ValueError.
    """
    if sentences is None:
        return _split(text, guard)
    return _locate(text, sentences)


def _locate(text: str, sentences: list[str]) -> list[Span]:
    spans: list[Span] = []
    at = 0
    for sentence in sentences:
        start = text.find(sentence, at)
        if start < 0:
            raise ValueError(f"sentence not found in its text after character {at}: {sentence[:60]!r}")
        spans.append((start, start + len(sentence)))
        at = start + len(sentence)
    return spans


#: Texts up to this many characters (a paragraph) have their split remembered, the last CACHED_TEXTS
#: of them (at most ~16 MB): dataset builders split the same paragraph for several views, and pysbd
#: compiles its patterns anew on every call.
CACHED_CHARS, CACHED_TEXTS = 4000, 4096


def _pysbd(text: str) -> list[Span]:
    return list(_pysbd_cached(text) if len(text) <= CACHED_CHARS else _pysbd_spans(text))


@functools.lru_cache(maxsize=CACHED_TEXTS)
def _pysbd_cached(text: str) -> tuple[Span, ...]:
    return _pysbd_spans(text)


def _pysbd_spans(text: str) -> tuple[Span, ...]:
    if not text or text.isspace():
        return ()
    text = text.translate(_PLACEHOLDERS)
    spans: list[Span] = []
    for lo, hi in _blocks(text):
        pieces = (piece.strip() for piece in _segmenter().segment(text[lo:hi]))
        spans += [(lo + a, lo + b) for a, b in _locate(text[lo:hi], [piece for piece in pieces if piece])]
    return tuple(spans)


def _blocks(text: str) -> list[Span]:
    """pysbd's time grows with the square of its input (10 KB: 0.16 s, 40 KB: 1.8 s, 160 KB: 26 s,
    with or without sentence breaks), so a text longer than WHOLE_CHARS goes to it in blocks of at
    most BLOCK_CHARS, each cut after the last sentence end it holds (else the last space)."""
    if len(text) <= WHOLE_CHARS:
        return [(0, len(text))]
    out: list[Span] = []
    lo = 0
    while len(text) - lo > BLOCK_CHARS:
        window = text[lo : lo + BLOCK_CHARS]
        ends = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() > BLOCK_CHARS // 2]
        cut = ends[-1] if ends else max(window.rfind(" "), window.rfind("\n")) + 1 or BLOCK_CHARS
        out.append((lo, lo + cut))
        lo += cut
    return [*out, (lo, len(text))]


def _split(text: str, guard: bool) -> list[Span]:
    spans = _pysbd(text)
    if not guard:
        return spans
    out: list[Span] = []
    for a, b in spans:
        piece = text[a:b]
        inner = _quote_blind(piece) if _PAIRED.search(piece) else [(0, len(piece))]
        if len(inner) > 1 and _quoted(piece, [start for start, _ in inner[1:]]):
            inner = [(0, len(piece))]
        for x, y in inner:
            out += _cut_long(text, (a + x, a + y))
    return _closers_back(text, out)


def _closers_back(text: str, spans: list[Span]) -> list[Span]:
    """A closing quote or bracket that pysbd left at the start of the next sentence (it does so when
    the opening mark is in an earlier sentence) goes back to the end of the sentence it closes."""
    out: list[Span] = []
    for a, b in spans:
        closer = _CLOSER.match(text, a, b)
        if out and closer:
            end = closer.end(1)
            out[-1] = (out[-1][0], end)
            a = closer.end()
            if a >= b:
                continue
        out.append((a, b))
    return out


def _quoted(piece: str, cuts: list[int]) -> bool:
    """Whether every cut falls inside one quotation or bracket of ``piece`` (marks paired in order, all
    of them paired) no longer than QUOTED_SENTENCE_CHARS: sentences quoted within a sentence."""
    pairs: list[Span] = []
    quotes = [i for i, ch in enumerate(piece) if ch == '"']
    if len(quotes) % 2:
        return False
    pairs += zip(quotes[::2], quotes[1::2], strict=True)
    for opening, closing in _PAIRS:
        stack: list[int] = []
        for i, ch in enumerate(piece):
            if ch == opening:
                stack.append(i)
            elif ch == closing:
                if not stack:
                    return False
                pairs.append((stack.pop(), i))
        if stack:
            return False
    short = [(o, c) for o, c in pairs if c - o <= QUOTED_SENTENCE_CHARS]
    return all(any(o < cut < c for o, c in short) for cut in cuts)


def _quote_blind(piece: str) -> list[Span]:
    """pysbd's split of ``piece`` with the paired marks blanked out; a cut between two sentences goes
    at the first whitespace after the first one's end, so a closing mark stays with its sentence."""
    inner = _pysbd(_PAIRED.sub(lambda m: " " * len(m.group()), piece))
    cuts = [
        next((i for i in range(end, start) if piece[i].isspace()), end)
        for (_, end), (start, _) in itertools.pairwise(inner)
    ]
    out: list[Span] = []
    for lo, hi in zip([0, *cuts], [*cuts, len(piece)], strict=True):
        segment = piece[lo:hi]
        stripped = segment.strip()
        if stripped:
            start = lo + len(segment) - len(segment.lstrip())
            out.append((start, start + len(stripped)))
    return out


def _cut_long(text: str, span: Span) -> list[Span]:
    """``span`` cut into pieces of at most MAX_SENTENCE_CHARS, each at the last whitespace that fits
    (mid-word only where a single word is longer)."""
    out: list[Span] = []
    a, b = span
    while b - a > MAX_SENTENCE_CHARS:
        limit = a + MAX_SENTENCE_CHARS
        cut = next((i for i in range(limit, a, -1) if text[i].isspace()), limit)
        end = cut
        while text[end - 1].isspace():
            end -= 1
        out.append((a, end))
        a = cut
        while a < b and text[a].isspace():
            a += 1
    if a < b:
        out.append((a, b))
    return out
