"""Plain text as people write and tools render it: hard-wrapped paragraphs, man pages, pydoc, READMEs.

Paragraphs are separated by blank lines; the lines inside one are joined (a word the typesetter split
with a hyphen made whole). Inside a paragraph, a list item, or a definition (a term with its
description indented below it, or beside it: a man page's option and what it does) is one unit: the
term joined to its description. A short line alone in its paragraph, in capitals or underlined with
``===``/``---`` (or ``#`` marked), is a heading: the section title of what follows. A running header
or footer (one line of three columns far apart: ``LS(1)  User Commands  LS(1)``) is dropped, a form
feed starts a new page, and lines that read as code (prompts, braces, assignments) stay as written.
"""

from __future__ import annotations

import codecs
import itertools
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from sieveqa.data.formats.blocks import CJK, Block, join_lines

__all__ = ["decode", "read", "text_blocks"]

_BULLET = re.compile(r"(?:[-*+•·◦‣▪]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)])\s+\S")
_UNDERLINE = re.compile(r"^\s*(=+|-+|~+|\^+|\*+)\s*$")
_RULE = re.compile(r"^([-=_*~])\1{3,}$")
_LEADERS = re.compile(r"(\. ?){6,}\s*[\divxlc]*$")
_GAP = re.compile(r"\S( {2,})(\S)")
_COLUMNS = re.compile(r"\S {5,}\S")
_CELLS = re.compile(r"(?<=\S) {3,}(?=\S)")
_GUTTER = re.compile(r"^( *)[|>]( |$)")
_CODE = re.compile(r"^(>>> |\.\.\. |\$ |% )|[;{}]$|^[\w.\[\]'\"]+ = |^(def|class|import|from) \w")
_END = re.compile(r"[.,;:!?)。、！？：；]$")
_SENTENCE = re.compile(r"[.!?。！？]['\")\]」』]*$")
_WORD = re.compile(r"[A-Za-z]+")
_MAX_HEADING = 70
#: A log line's tag: "perf: ...", "cli: ...", "build(cmake): ..." (a changelog's one-line entries).
_TAG = re.compile(r"[A-Za-z][\w./-]{0,24}(?:\([^)\s]{1,24}\))? ?:\s+\S")
_WRAPPED = 40  # a line of prose that ran on to the next is at least this long
_RUNS = re.compile(r"[A-Za-z0-9,]$")  # ... and ends in a word or a comma
_WESTERN = ("cp1252", "latin_1", "iso8859_15")
#: Byte-order marks read as their encoding (UTF-32's first: its little-endian mark starts as UTF-16's).
_MARKED = (
    ((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE), "utf-32"),
    ((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE), "utf-16"),
)


@dataclass
class _Line:
    indent: int
    text: str
    number: int
    code: bool = False  # marked as code by the caller (a PDF's fixed-pitch line)


def decode(path: Path) -> str:
    """The file's text: UTF-16 or UTF-32 by its byte-order mark (Windows' "Unicode" text), UTF-8 (a
    byte-order mark dropped), else the encoding charset-normalizer is sure of; a file with NUL bytes
    and no such mark, or no sure encoding, is Unreadable."""
    from sieveqa.data.formats import Unreadable

    raw = path.read_bytes()
    for marks, encoding in _MARKED:
        if raw.startswith(marks):
            try:
                return raw.decode(encoding)
            except UnicodeDecodeError as err:
                raise Unreadable(
                    f"marked {encoding.upper()} but byte {err.start + 1} is not ({err.reason})"
                ) from None
    if b"\x00" in raw[:8192]:
        unmarked = _utf16_unmarked(raw)
        if unmarked is None:
            raise Unreadable("binary, not text")
        return unmarked
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        from charset_normalizer import from_bytes

        found = list(from_bytes(raw))
        best = found[0] if found else None
        # Windows' Western code page is by far the likeliest legacy one: where it reads the text about
        # as cleanly as the best guess, it is taken (a short note with curly quotes and a euro sign came
        # out as Baltic: cp1252 was not even among the guesses). Text in another script is not clean in
        # it (Czech in cp1250 stays Czech; short legacy Polish or Turkish text was misread before too).
        if best is not None and best.encoding not in _WESTERN:
            west = [m for m in from_bytes(raw, cp_isolation=list(_WESTERN)) if m.chaos <= best.chaos + 0.1]
            best = west[0] if west else best
        if best is None:
            line = raw[: err.start].count(b"\n") + 1
            raise Unreadable(f"line {line}: neither UTF-8 nor any encoding it could be sure of") from None
        return str(best)


def _utf16_unmarked(raw: bytes) -> str | None:
    """UTF-16 without a byte-order mark (some Windows tools write it), told by its NUL high bytes: the
    text, or None (binary)."""
    head = raw[:8192]
    if len(raw) % 2 or len(head) < 4:
        return None
    for encoding, nul_at in (("utf-16-le", 1), ("utf-16-be", 0)):
        high, low = head[nul_at::2], head[1 - nul_at :: 2]
        if high.count(0) >= 0.9 * len(high) and low.count(0) <= 0.01 * len(low):
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError:
                return None
            # small 16-bit numbers look the same: text is mostly printable
            shown = sum(c.isprintable() or c.isspace() for c in text[:4096])
            return text if shown >= 0.95 * min(len(text), 4096) else None
    return None


def read(path: Path) -> tuple[str, list[Block]]:
    """A text file's blocks (its title: the file name)."""
    return "", text_blocks(decode(path))


def text_blocks(text: str, code: Collection[int] = ()) -> list[Block]:
    """The blocks of plain text (module docstring); the lines numbered in ``code`` (from 1) are code
    whatever they read as (a PDF's fixed-pitch lines: an ASN.1 listing's ``END`` is no heading)."""
    paragraphs = _paragraphs(text, frozenset(code))
    known = {w.lower() for w in _WORD.findall(text)}
    base = min((min(line.indent for line in par) for _, par in paragraphs), default=0)
    paragraphs = [(page, part) for page, par in paragraphs for part in _at_headings(par, base)]
    blocks: list[Block] = []
    sections: list[tuple[int, str]] = []
    for i, (page, par) in enumerate(paragraphs):
        if (i == 0 or i == len(paragraphs) - 1) and len(par) == 1 and _COLUMNS.search(par[0].text):
            continue  # a running header or footer
        if len(par) > 1 and par[1].indent > par[0].indent and _capitals(par[0], base):
            heading, par = (1, par[0].text.rstrip(":")), par[1:]  # a man page's NAME over its text
        elif len(par) > 2 and _inner_heading(par, 0, base):
            heading, par = (2 + (par[0].indent - base) // 2, par[0].text.rstrip(":")), par[1:]
        else:
            heading = _heading(par, base, paragraphs[i + 1][1] if i + 1 < len(paragraphs) else None)
        if heading is not None:
            level, title = heading
            sections = [(lv, t) for lv, t in sections if lv < level] + [(level, title)]
            if par is paragraphs[i][1]:
                continue
        section = " › ".join(t for _, t in sections)
        if _is_code(par):
            blocks.append(Block(_dedent(par), "code", section, page, par[0].number))
            continue
        if _is_table(par):  # each row one unit, its cells apart
            blocks += [Block(_CELLS.sub(" | ", ln.text), "table", section, page, ln.number) for ln in par]
            continue
        items = _items(par)
        for item in items:
            # a list item or a definition is one answer; prose that ran on beside them is split
            ran_on = len(item) > 1 and all(ln.indent == item[0].indent for ln in item)
            unit = _is_definition(item) or (
                len(items) > 1 and not (ran_on and not _BULLET.match(item[0].text))
            )
            kind = "code" if _is_code(item) else "item" if unit else "prose"
            text_ = _dedent(item) if kind == "code" else _render(item, known)
            blocks.append(Block(text_, kind, section, page, item[0].number))
    return blocks


def _paragraphs(text: str, code: frozenset[int] = frozenset()) -> list[tuple[int | None, list[_Line]]]:
    pages = "\f" in text
    page = 1
    out: list[tuple[int | None, list[_Line]]] = []
    current: list[_Line] = []
    start = page  # the page the current paragraph starts on
    turned = False  # a page break since the current paragraph's last line
    # Not splitlines: it would take a form feed (a page break) for a line break.
    for number, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        if "\f" in raw:
            page += raw.count("\f")
            raw = raw.replace("\f", "")
            turned = bool(current)
        line = _GUTTER.sub(lambda m: m.group(1) + " " + m.group(2), raw.expandtabs(8)).rstrip()
        if not line.strip():
            if current and not turned:
                out.append((start if pages else None, current))
                current = []
            continue
        stripped = line.lstrip()
        if turned:  # a sentence running on to the next page continues its paragraph
            last = current[-1]
            if not (
                stripped[:1].islower()
                and _RUNS.search(last.text)
                and last.indent == len(line) - len(stripped)
            ):
                out.append((start if pages else None, current))
                current = []
            turned = False
        if not current:
            start = page
        if _LEADERS.search(stripped):
            continue  # a table of contents' entry: its section is read where it is
        if _RULE.match(stripped) and not (
            len(current) == 1 and 0.6 <= len(stripped) / len(current[0].text) <= 1.5
        ):
            if current:  # a rule between parts, not a heading's underline
                out.append((start if pages else None, current))
                current = []
            continue
        current.append(_Line(len(line) - len(stripped), stripped, number, number in code))
    if current:
        out.append((start if pages else None, current))
    return out


def _heading(par: list[_Line], base: int, following: list[_Line] | None) -> tuple[int, str] | None:
    """(level, title) when the paragraph is a heading."""
    first = par[0]
    if first.code or (first.text.endswith(":") and following and following[0].code):
        return None  # code, or the line that introduces it ("Consider this definition:")
    if len(par) == 2 and (mark := _UNDERLINE.match(par[1].text)) and len(mark.group(1)) >= 3:
        return (1 if mark.group(1)[0] in "=#*" else 2), first.text
    if len(par) != 1 or len(first.text) > _MAX_HEADING or following is None:
        return None
    if first.text.startswith("#"):
        hashes = len(first.text) - len(first.text.lstrip("#"))
        return hashes, first.text.lstrip("#").strip()
    if _capitals(first, base):
        return 1, first.text.rstrip(":")
    deeper = min(line.indent for line in following) > first.indent
    short = len(first.text.split()) <= 8 and not _END.search(first.text.rstrip(":"))
    short = short and len(CJK.findall(first.text)) <= 24  # no spaces: a sentence is one "word" there
    lead = first.text[0]  # a capital, a digit, or a letter of a script without case (Chinese, Japanese)
    starts = lead.isupper() or lead.isdigit() or (lead.isalpha() and lead.lower() == lead.upper())
    # over one line, only a title of a few words over a sentence ("Module heapq" over its summary)
    titled = (
        len(first.text.split()) <= 4 and not first.text.endswith(":") and _SENTENCE.search(following[-1].text)
    )
    if short and starts and (deeper or ((len(following) > 1 or titled) and first.indent <= base)):
        return 2 + (first.indent - base) // 2, first.text.rstrip(":")
    return None


def _at_headings(par: list[_Line], base: int) -> list[list[_Line]]:
    """A paragraph cut before each heading inside it (a man page's ``SYNOPSIS``, or a subsection's
    ``Context Line Control`` over its options, with no blank line around), so the heading heads a
    paragraph of its own."""
    cuts = [i for i in range(len(par) - 1) if _inner_heading(par, i, base)]
    # A title over its underline with the text right below (no blank line): a paragraph of its own.
    cuts += [c for i in range(len(par) - 2) if _underlined(par, i) for c in (i, i + 2)]
    return [par[a:b] for a, b in itertools.pairwise(sorted({0, *cuts, len(par)}))]


def _underlined(par: list[_Line], i: int) -> bool:
    """Line ``i`` a title underlined by the next (``Parking`` over ``-------``: about its length), at
    the paragraph's start or after a sentence's end; not code (a compiler's ``^^^`` under a line)."""
    mark = _UNDERLINE.match(par[i + 1].text)
    if not mark or len(mark.group(1)) < 3 or not 0.6 <= len(mark.group(1)) / len(par[i].text) <= 1.5:
        return False
    after_sentence = i == 0 or (_SENTENCE.search(par[i - 1].text) is not None and mark.group(1)[0] in "=-")
    return after_sentence and not _CODE.search(par[i].text) and not _END.search(par[i].text)


def _inner_heading(par: list[_Line], i: int, base: int) -> bool:
    """Line ``i`` in capitals with deeper lines below, or a short title over a definition (the next
    line a term, the one after it deeper still)."""
    line, below = par[i], par[i + 1]
    if below.indent <= line.indent or line.code:
        return False
    if i > 0 and _capitals(line, base):
        return True
    after = par[i + 2] if i + 2 < len(par) else None
    title = len(line.text.split()) <= 6 and line.text[:1].isupper() and not _END.search(line.text)
    return title and after is not None and after.indent > below.indent and not _BULLET.match(line.text)


def _capitals(line: _Line, base: int) -> bool:
    """A short line in capitals at the text's least indent (``OPTIONS``, ``SEE ALSO``)."""
    letters = [c for c in line.text if c.isalpha()]
    return (
        not line.code
        and line.indent <= base
        and len(line.text) <= _MAX_HEADING
        and bool(letters)
        and all(c.isupper() for c in letters)
    )


def _items(par: list[_Line]) -> list[list[_Line]]:
    """A paragraph's units: list items and definitions start at its least indented lines (bullets
    or, with deeper lines below, any line there); otherwise the paragraph is one unit."""
    low = min(line.indent for line in par)
    deeper = any(line.indent > low for line in par[1:])
    bullets = sum(1 for line in par if line.indent == low and _BULLET.match(line.text))
    if not deeper and bullets < 2:
        return _log_entries(par)
    if deeper and all(line.indent == par[1].indent for line in par[1:]) and par[0].indent > low:
        return [par]  # the first line indented: an ordinary paragraph
    items: list[list[_Line]] = []
    for i, line in enumerate(par):
        starts = line.indent == low and (
            bool(_BULLET.match(line.text)) or (deeper and _starts_unit(par, i, low))
        )
        if starts or not items:
            items.append([line])
        else:
            items[-1].append(line)
    return items


def _log_entries(par: list[_Line]) -> list[list[_Line]]:
    """A log's entries, one a line led by a tag (two thirds of three lines or more: a changelog's
    ``perf: ...`` / ``cli: ...``; its other lines, a version's, each stand alone too), else the
    paragraph as one unit. Glued, a version's entries made one "sentence" of 1,700 characters."""
    tagged = sum(1 for line in par if _TAG.match(line.text))
    if len(par) < 3 or 3 * tagged < 2 * len(par):
        return [par]
    return [[line] for line in par]


def _starts_unit(par: list[_Line], i: int, low: int) -> bool:
    """Whether line ``i`` (at the paragraph's least indent, beside deeper lines) starts a unit: any
    such line does (a term, or a line of a list) unless it runs on from a wrapped line of prose at the
    same indent before it (prose after a definition: ``For very short-run programs`` / ``such as``)."""
    line, before = par[i], par[i - 1] if i else None
    wrapped = before is not None and before.indent == low and len(before.text) >= _WRAPPED
    return not (wrapped and line.text[:1].islower() and _RUNS.search(before.text))


def _is_definition(item: list[_Line]) -> bool:
    """A term whose description is indented deeper than the term's text starts."""
    first, rest = item[0], item[1:]
    return bool(rest) and rest[0].indent > first.indent + _text_start(first.text)


def _render(item: list[_Line], known: set[str]) -> str:
    """One unit as prose: a term on its own line (a definition: its description indented deeper than
    the term's text starts) joined to the description with a colon."""
    first, rest = item[0], item[1:]
    if not _is_definition(item):
        return join_lines([line.text for line in item], known)
    gap = _GAP.search(first.text)
    if gap and first.indent + gap.start(2) == rest[0].indent:  # term and description on one line
        term, lead = first.text[: gap.start(1) + 1], [first.text[gap.start(2) :]]
    else:
        term, lead = first.text, []
    description = join_lines(lead + [line.text for line in rest], known)
    term = join_lines([term], known)
    return f"{term}{'' if _END.search(term) else ':'} {description}"


def _text_start(text: str) -> int:
    """Where a list item's text starts after its bullet (0 for a line without one)."""
    bullet = _BULLET.match(text)
    return bullet.end() - 1 if bullet else 0


def _is_table(par: list[_Line]) -> bool:
    """Three lines or more, nearly all in columns (a gap of three spaces or more inside the line)."""
    return len(par) >= 3 and sum(1 for line in par if _CELLS.search(line.text)) >= 0.8 * len(par)


def _is_code(item: list[_Line]) -> bool:
    return sum(1 for line in item if line.code or _CODE.search(line.text)) * 2 > len(item)


def _dedent(item: list[_Line]) -> str:
    low = min(line.indent for line in item)
    return "\n".join(" " * (line.indent - low) + line.text for line in item)
