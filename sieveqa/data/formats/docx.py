"""Word (.docx), read with python-docx in document order: a ``Title`` paragraph is the document's
title, ``Heading N`` paragraphs the section titles of what follows, every other paragraph (a list
item among them) prose of its own, a paragraph in a code style (``Source Code``, ``HTML
Preformatted``, ...) a code block kept as written, and a table one unit a row (each cell with its
column's header). Word files have no fixed pages, so an answer names its section.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

from sieveqa.data.formats.blocks import Block, join_lines, tidy

__all__ = ["read"]

_HEADING = re.compile(r"^heading\s*(\d)$", re.I)
_CODE = re.compile(r"code|preformatted|verbatim|source", re.I)
_WORD = re.compile(r"[A-Za-z]+")


def read(path: Path) -> tuple[str, list[Block]]:
    """A Word file's title (its ``Title`` paragraph, else its properties' title) and blocks."""
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    from sieveqa.data.formats import Unreadable

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as err:
        raise Unreadable(f"not a Word file python-docx can read ({type(err).__name__}: {err})") from None
    known = {w.lower() for p in document.paragraphs for w in _WORD.findall(p.text)}
    title = ""
    sections: list[tuple[int, str]] = []
    blocks: list[Block] = []
    for part in document.iter_inner_content():
        section = " › ".join(t for _, t in sections)
        if isinstance(part, Table):
            blocks += [Block(row, "table", section) for row in _rows(part)]
            continue
        style = part.style.name if part.style is not None else ""
        text = part.text
        if not text.strip():
            continue
        if style == "Title" and not title:
            title = tidy(text)
        elif heading := _HEADING.match(style):
            level = int(heading.group(1))
            sections = [(lv, t) for lv, t in sections if lv < level] + [(level, tidy(text))]
        elif _CODE.search(style):
            blocks.append(Block(text.strip("\n"), "code", section))
        else:
            kind = "item" if _is_item(part, style) else "prose"  # a list item: one answer
            blocks.append(Block(join_lines(text.splitlines(), known), kind, section))
    if not title:
        title = tidy(document.core_properties.title or "")
    return title, blocks


def _is_item(paragraph: Any, style: str) -> bool:
    """A list paragraph: numbered or bulleted (its own numbering, or a list style's)."""
    numbered = paragraph._p.pPr is not None and paragraph._p.pPr.numPr is not None
    return numbered or style.lower().startswith("list")


def _rows(table: object) -> list[str]:
    """A table's rows, each cell labelled with its column's header (the first row)."""
    rows = [[tidy(cell.text) for cell in row.cells] for row in table.rows]  # type: ignore[attr-defined]
    rows = [r for r in rows if any(r)]
    if len(rows) < 2:
        return [" | ".join(r) for r in rows]
    header, body = rows[0], rows[1:]
    out = []
    for cells in body:
        if len(cells) == len(header):
            out.append("; ".join(f"{h}: {c}" if h and c else c for h, c in zip(header, cells, strict=True)))
        else:
            out.append(" | ".join(cells))
    return out
