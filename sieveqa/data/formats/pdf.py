"""PDF, read with PDFium (pypdfium2): its words as the typesetter placed them (kerning does not break
them), each line with its position and font size. The running headers and footers that repeat in
the pages' margins (page numbers among them) are dropped; what remains is laid out again as plain
text, page by page (a form feed between pages), for the plain-text reader: a line set larger than the
body is a heading, a vertical gap or a first-line indent after a finished sentence starts a
paragraph, and indentation is kept, so a definition (a typeset man page's option) stays one unit and
a paragraph that runs on to the next page stays whole. A page set in two columns is read column by
column, each as if it were the page. Every block keeps its page. A PDF without a text layer
(scanned) is Unreadable.
"""

from __future__ import annotations

import ctypes
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sieveqa.data.formats.blocks import Block, tidy
from sieveqa.data.formats.text import text_blocks

__all__ = ["layout_text", "read"]

_DIGITS = re.compile(r"\d+")
_LETTERS = re.compile(r"[A-Za-z]+")
_PIECES = re.compile(r"\b([A-Za-z]+) ([a-z]+)\b")
_BULLET = re.compile(r"[-•·◦‣▪*]\s|\(?\d{1,3}[.)]\s")
_ENDS = re.compile(r"[.!?:]['\")\]’”]*$")
#: The top and bottom share of a page where running headers and footers live.
_MARGIN = 0.1
_HEADING = 1.15
#: Fixed-pitch fonts by name (TeX's CMTT sets no fixed-pitch flag); a subset's ``ABCDEF+`` prefix aside.
_MONO = re.compile(r"courier|mono|consol|menlo|inconsolata|cmtt|sftt|lmtt|typewriter|fixed", re.IGNORECASE)
#: A page number alone (its digits read as #): 7, - 7 -, Page 7 of 9, 7/9, xii.
_PAGE_NUMBER = re.compile(r"^[\W_]*(?:page\s*)?(?:#(?:\s*(?:of|/)\s*#)?|[ivxlc]+)[\W_]*$")
_INDENT = 3.0  # the deepest first-line indent, in ems (a definition's description sits deeper)


@dataclass
class _Line:
    page: int
    text: str
    x0: float
    top: float  # points from the page's top
    height: float  # the page's, in points
    size: float  # font size
    x1: float = 0.0  # where the line ends
    width: float = 0.0  # the page's, in points
    mono: bool = False  # set in a fixed-pitch font: code, never a heading


def read(path: Path) -> tuple[str, list[Block]]:
    """A PDF's title (its metadata's, else the first page's largest line) and blocks."""
    from sieveqa.data.formats import Unreadable

    lines, title = _lines(path)
    if not lines:
        raise Unreadable("no text layer (a scanned PDF?): make it searchable with OCR first, e.g. ocrmypdf")
    lines = _mend(_drop_running(_fold_columns(lines)))
    body = _body_size(lines)
    if not title:
        first = [ln for ln in lines if ln.page == 1 and ln.size > body * 1.3]
        title = max(first, key=lambda ln: ln.size).text if first else ""
    text, code = _layout(lines, body)
    return tidy(title), text_blocks(text, code)


def _lines(path: Path) -> tuple[list[_Line], str]:
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    from sieveqa.data.formats import Unreadable

    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as err:
        why = "encrypted: give a copy without a password" if "password" in str(err).lower() else str(err)
        raise Unreadable(f"not a PDF PDFium can read ({why})") from None
    out: list[_Line] = []
    try:
        title = str(pdf.get_metadata_dict().get("Title") or "").strip()
        for number in range(len(pdf)):
            page = pdf[number]
            height, width = page.get_height() or 1.0, page.get_width() or 1.0
            textpage = page.get_textpage()
            at = 0
            for text in textpage.get_text_range().split("\r\n"):
                if text.strip():
                    first = at + len(text) - len(text.lstrip())
                    left, _, _, top = textpage.get_charbox(first, loose=True)
                    right = textpage.get_charbox(at + len(text.rstrip()) - 1, loose=True)[2]
                    size = raw.FPDFText_GetFontSize(textpage.raw, first)
                    clean = text.strip()  # PDFium marks a hyphen it saw at a line's end with U+FFFE
                    clean = (clean[:-1] + "-" if clean.endswith("\ufffe") else clean).replace("\ufffe", "")
                    clean = " ".join(clean.splitlines())  # a lone CR inside would be a line of its own
                    line = _Line(number + 1, clean, left, height - top, height, size, right, width)
                    out.append(replace(line, mono=_fixed_pitch(raw, textpage, first)))
                at += len(text) + 2
    finally:
        pdf.close()
    return out, title


def _fixed_pitch(raw: Any, textpage: Any, index: int) -> bool:
    """Whether the character at ``index`` is set in a fixed-pitch font (its flag, or its name)."""
    flags, name = ctypes.c_int(0), ctypes.create_string_buffer(128)
    raw.FPDFText_GetFontInfo(textpage.raw, index, name, len(name), ctypes.byref(flags))
    return bool(flags.value & 1) or bool(_MONO.search(name.value.decode("latin-1")))


def _mend(lines: list[_Line]) -> list[_Line]:
    """Words a PDF's kerning cut in two (``reserv ed``, ``gi ven``): two pieces joined where the whole
    is an English word and one piece is not a word, nor found anywhere else in the document."""
    from sieveqa.data.formats.blocks import vocabulary

    words = vocabulary()
    counts = Counter(w.lower() for line in lines for w in _LETTERS.findall(line.text))

    def stray(piece: str) -> bool:
        return piece.lower() not in words and counts[piece.lower()] <= 1

    def mend(match: re.Match[str]) -> str:
        a, b = match.group(1), match.group(2)
        whole = (a + b).lower() in words and (stray(a) or stray(b))
        return a + b if whole else match.group(0)

    return [replace(line, text=_PIECES.sub(mend, line.text)) for line in lines]


def _fold_columns(lines: list[_Line]) -> list[_Line]:
    """A page set in two columns laid out as one: PDFium gives the left column's lines before the
    right's, so the right column's lines are moved left by the distance between the two columns'
    margins, and its indents read as the left column's do. Two columns: a fifth of the page's lines
    or more start right of its middle, and nine in ten of the others end before it."""
    out: list[_Line] = []
    for page in sorted({ln.page for ln in lines}):
        on = [ln for ln in lines if ln.page == page]
        middle = on[0].width / 2
        right = [ln for ln in on if ln.x0 >= middle * 0.95]
        left = [ln for ln in on if ln.x0 < middle * 0.95]
        narrow = sum(1 for ln in left if ln.x1 <= middle * 1.05)
        if len(right) < max(3, 0.2 * len(on)) or narrow < 0.9 * len(left):
            out += on
            continue
        shift = _margin(right) - _margin(left)
        out += [
            replace(ln, x0=ln.x0 - shift, x1=ln.x1 - shift) if ln.x0 >= middle * 0.95 else ln for ln in on
        ]
    return out


def _body_size(lines: list[_Line]) -> float:
    sizes: Counter[float] = Counter()
    for line in lines:
        sizes[round(line.size, 1)] += len(line.text)
    return sizes.most_common(1)[0][0]


def _drop_running(lines: list[_Line]) -> list[_Line]:
    """A page's first or last lines, in its top or bottom margin, whose text (numbers aside) is on
    another page's too (a running header or footer: a chapter's name, a page number) or that are a
    number alone."""
    by_page: dict[int, list[_Line]] = {}
    for line in lines:
        by_page.setdefault(line.page, []).append(line)
    edges = {
        id(ln): ln
        for page in by_page.values()
        for ln in page[:2] + page[-2:]
        if not _MARGIN < ln.top / ln.height < 1 - _MARGIN
    }

    def key(line: _Line) -> str:
        return _DIGITS.sub("#", " ".join(line.text.split())).lower()

    pages: dict[str, set[int]] = {}
    for line in edges.values():
        pages.setdefault(key(line), set()).add(line.page)
    running = {k for k, on in pages.items() if len(on) >= 2 or _PAGE_NUMBER.match(k)}
    return [ln for ln in lines if not (id(ln) in edges and key(ln) in running)]


def layout_text(lines: list[_Line], body: float) -> str:
    """The lines laid out as plain text the text reader reads (module docstring)."""
    return _layout(lines, body)[0]


def _layout(lines: list[_Line], body: float) -> tuple[str, set[int]]:
    """``layout_text``, and the numbers of its lines set in a fixed-pitch font (code)."""
    left = min(ln.x0 for ln in lines)
    margins = {page: _margin([ln for ln in lines if ln.page == page]) for page in {ln.page for ln in lines}}
    heading_sizes = sorted({round(ln.size) for ln in lines if _is_heading(ln, body)}, reverse=True)
    out: list[str] = []
    code: set[int] = set()
    previous: _Line | None = None
    page = 1  # the page the text has reached: a form feed for each one turned, empty ones too
    for line in lines:
        if line.page != page:  # (not only after a line of the page before: a heading ends none)
            out.append("\f" * (line.page - page))
            page, previous = line.page, None
        if _is_heading(line, body):
            out += ["", "#" * (heading_sizes.index(round(line.size)) + 1) + " " + line.text, ""]
            previous = None
            continue
        x0 = line.x0
        if previous is not None:
            margin = margins[line.page]
            indented = 0 < x0 - margin <= _INDENT * line.size and not _BULLET.match(line.text)
            runs_on = line.text[:1].islower() and not _ENDS.search(previous.text)
            back = x0 < previous.x0 - 1 and previous.x0 > margin + 2.5 * line.size
            gap = line.top - previous.top > line.size * 1.6
            if not runs_on and (gap or back or (indented and _ENDS.search(previous.text))):
                out.append("")  # a gap, a deeper block's end, or a first-line indent: a new paragraph
                x0 = margin if indented else x0
        out.append(" " * max(0, round((x0 - left) / (body * 0.5))) + line.text)
        if line.mono:
            code.add(len(out))  # its number, counted from 1
        previous = line
    return "\n".join(out), code


def _margin(lines: list[_Line]) -> float:
    """The left edge most of a page's text starts at."""
    return Counter(round(ln.x0) for ln in lines).most_common(1)[0][0]


def _is_heading(line: _Line, body: float) -> bool:
    return line.size > body * _HEADING and len(line.text) <= 100
