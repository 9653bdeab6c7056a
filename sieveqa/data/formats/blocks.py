"""What every file reader makes, and how it becomes a :class:`~sieveqa.data.documents.Document`.

A reader turns a file into :class:`Block` s: a paragraph, a list item, a definition (a term with its
description), a code block or a table row, each with its place in the file (section, page, line). Its
text is already laid out as prose: the lines of a paragraph joined, a word split by a hyphen at a line
end made whole. :func:`assemble` then makes the document the same way for every format: blocks one
after the other, sentences split inside a prose block and never across two, a code block or a table
row one unit of its own, never glued into a sentence.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from sieveqa.data.documents import Document, Place
from sieveqa.data.sentences import sentence_spans

__all__ = ["KINDS", "Block", "assemble", "join_lines", "tidy", "vocabulary"]

KINDS = ("prose", "item", "code", "table")
#: A typographic hyphen (groff writes U+2010) or a minus read as a plain one; a soft hyphen is dropped.
_DASHES = str.maketrans(
    {"\u2010": "-", "\u2011": "-", "\u00ad": None, "\u00a0": " ", "\ufb01": "fi", "\ufb02": "fl"}
)
_SPACE = re.compile(r"\s+")
_SPLIT_WORD = re.compile(r"([A-Za-z]+)-$")
_LONGEST = 64  # the longest word a line-end hyphen splits
_WORD_START = re.compile(r"^([A-Za-z]+)")
_WORDS = re.compile(r"\w+")
#: A character of a script written without spaces (Han, kana; Korean spaces its words): each counts
#: as a word, and lines wrapped between two of them are joined without a space.
CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_DOTTED = re.compile(r"\w\.\w+\.$")  # massif.out., e.g., i.e.
_DOTTED_TAIL = 256  # how far back a dotted name is looked for (the whole block made it quadratic)
_GOES_ON = re.compile(r"[a-z<(,;]")
_LONE = re.compile(r"\s\.$")  # the period . matches any character


@dataclass(frozen=True, slots=True)
class Block:
    """One unit of a file: ``prose`` is split into sentences; an ``item`` (a list item, or a
    definition: a term and its description), ``code`` and ``table`` (a row) are indexed whole, one
    answer each. ``section`` is the heading path it falls under (" › " between levels)."""

    text: str
    kind: str = "prose"
    section: str = ""
    page: int | None = None
    line: int | None = None


def tidy(text: str) -> str:
    """Typographic hyphens as ``-``, soft hyphens dropped, ligatures spelt out, runs of whitespace one
    space (prose only: code keeps its layout)."""
    return _SPACE.sub(" ", text.translate(_DASHES)).strip()


@functools.cache
def vocabulary() -> frozenset[str]:
    """The English words the shipped models' WordPiece vocabulary holds whole (lower case)."""
    from sieveqa.data.passages import _tokenizer

    return frozenset(word for word in _tokenizer().get_vocab() if word.isalpha())


def join_lines(lines: Sequence[str], known: Iterable[str] = ()) -> str:
    """A paragraph's lines as one line of prose. A line ending in ``word-`` before one starting with a
    lowercase letter was hyphenated by the typesetter when the joined word is a word (in ``known``,
    the document's own words, or in the English vocabulary); otherwise the hyphen is the word's own
    (``command-line``) and stays."""
    words = set(known)
    out = ""
    for raw in lines:
        line = tidy(raw)
        if not line:
            continue
        split = _SPLIT_WORD.search(out, max(0, len(out) - _LONGEST))  # the tail: linear in the lines
        start = _WORD_START.match(line)
        if split and start and (line[0].islower() or split.group(1).isupper()):
            joined = split.group(1) + start.group(1)
            if joined.lower() in words or joined.lower() in vocabulary():
                out = out[:-1] + line
                continue
            out += line
            continue
        # Chinese and Japanese wrap anywhere and take no space where a line was wrapped.
        wrapped_cjk = bool(out) and CJK.match(out[-1]) is not None and CJK.match(line) is not None
        out = f"{out}{'' if wrapped_cjk else ' '}{line}" if out else line
    return out


def _whole(text: str, spans: Sequence[tuple[int, int]]) -> list[str]:
    """A block's sentences, a piece pysbd cut off at a period that ends no sentence joined to the one
    before it: a piece of fewer than two words (``and .`` after ``implied .``); one that goes on in
    lower case (or ``<``) after a dotted name (``called massif.out.`` / ``<pid>, where ...``) or a
    period standing alone (``The period .`` / ``matches any character``); or one glued to the period
    before it (``the extension .`` / ``gz, while ...``): a sentence's period is followed by a space."""
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        end = merged[-1][1] if merged else 0
        short = len(_WORDS.findall(text, a, b)) < 2 and len(CJK.findall(text, a, b)) < 2
        glued = bool(merged) and end == a and text[a - 1] == "." and not text[a].isspace()
        dotted = (
            bool(merged)
            and _GOES_ON.match(text, a)
            and (_DOTTED.search(text, max(0, end - _DOTTED_TAIL), end) or _LONE.search(text, end - 2, end))
        )
        if merged and (short or glued or dotted):
            merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return [text[a:b] for a, b in merged]


#: A prose block that stops at a word or a comma has not ended its sentence (a synopsis ending in
#: "]" or a label has no sentence to go on with).
_RUNS_ON = re.compile(r"[^\W\d_],?$|,$")


def run_on(blocks: list[Block]) -> list[Block]:
    """Paragraphs a page cut in mid-sentence joined again: a prose block that ends no sentence takes
    the next block of its section when that goes on in lower case (``to get the compilation flags
    and``) or is one short line of code the sentence names (``xslt-config --cflags``). An FAQ page had
    "Use", the command, "to get the compilation flags and", ... as paragraphs of their own."""
    out: list[Block] = []
    for block in blocks:
        last = out[-1] if out else None
        text = block.text.strip()
        named = block.kind == "code" and "\n" not in text and len(text) <= 60  # a command the sentence names
        goes_on = bool(text) and (text[0].islower() or named)
        if (
            last is not None
            and last.kind == "prose"
            and (last.section, last.page) == (block.section, block.page)
            and _RUNS_ON.search(last.text.strip()) is not None
            and goes_on
        ):
            out[-1] = replace(last, text=f"{last.text.strip()} {text}")
            continue
        out.append(block)
    return out


def _short_code(text: str) -> bool:
    """A code block short enough to be read with the sentence that introduces it (a command)."""
    return text.count("\n") < 3 and len(text) <= 300


def assemble(doc_id: str, title: str, blocks: Iterable[Block]) -> Document:
    """The document of a file's blocks: their texts one after the other (a blank line between), each
    prose block's sentences, items, code blocks and table rows as units, and every block's place."""
    parts: list[str] = []
    sentences: list[str] = []
    places: list[Place] = []
    at = 0
    intro: tuple[str, int | None] | None = None  # the last sentence's place, when it ends in ":"
    for block in blocks:
        text = tidy(block.text) if block.kind in ("prose", "item") else block.text.strip()
        if not text:
            continue
        if parts:
            at += 2
        if block.kind == "code" and intro == (block.section, block.page) and _short_code(text):
            sentences[-1] += f"\n\n{text}"  # "To restart the server run:" and the command: one unit
        elif block.kind == "prose":
            sentences += _whole(text, sentence_spans(text))
        else:
            sentences.append(text)
        ends_in_colon = block.kind == "prose" and sentences[-1].endswith(":")
        intro = (block.section, block.page) if ends_in_colon else None  # where what it introduces must be
        places.append(Place(at, at + len(text), block.section, block.page, block.line))
        parts.append(text)
        at += len(text)
    return Document(doc_id, "\n\n".join(parts), title, tuple(sentences), tuple(places))
