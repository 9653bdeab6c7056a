"""Markdown, parsed with markdown-it-py (CommonMark and tables): headings are the section titles of
what follows (a first ``#`` heading the document's title), paragraphs and list items prose, a code
block one unit kept as written, a table one unit a row (each cell with its column's header).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from sieveqa.data.formats.blocks import Block, join_lines
from sieveqa.data.formats.text import decode

__all__ = ["markdown_blocks", "read"]

_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_TITLE = re.compile(r"^title:\s*(.+)$", re.M)
_TAG = re.compile(r"<[^>]+>")
_WORD = re.compile(r"[A-Za-z]+")


def read(path: Path) -> tuple[str, list[Block]]:
    """A Markdown file's title (its first heading when that is a ``#``) and blocks."""
    return markdown_blocks(decode(path))


def markdown_blocks(text: str) -> tuple[str, list[Block]]:
    """The title and blocks of Markdown ``text`` (module docstring)."""
    front = _FRONT_MATTER.match(text)
    skipped = text[: front.end()].count("\n") if front else 0
    tokens = MarkdownIt("commonmark").enable("table").parse(text[front.end() :] if front else text)
    known = {w.lower() for w in _WORD.findall(text)}
    named = _TITLE.search(text[: front.end()]) if front else None
    title = named.group(1).strip().strip("\"'") if named else ""
    sections: list[tuple[int, str]] = []
    blocks: list[Block] = []
    header: list[str] = []
    row: list[str] = []
    at: int | None = None
    items = 0  # list items open around the token
    i = 0
    while i < len(tokens):
        token = tokens[i]
        line = token.map[0] + 1 + skipped if token.map else None
        section = " › ".join(t for _, t in sections)
        if token.type == "heading_open":
            level, name = int(token.tag[1]), _inline(tokens[i + 1], known)
            if level == 1 and not title and not sections:  # badges or a line may come before it
                title = name
            else:
                sections = [(lv, t) for lv, t in sections if lv < level] + [(level, name)]
            i += 3
            continue
        if token.type in ("list_item_open", "list_item_close"):
            items += 1 if token.type == "list_item_open" else -1
        if token.type == "inline" and tokens[i - 1].type == "paragraph_open":
            if prose := _inline(token, known):  # a list item's paragraph: one answer
                blocks.append(Block(prose, "item" if items else "prose", section, None, line))
        elif token.type in ("fence", "code_block"):
            blocks.append(Block(token.content.rstrip("\n"), "code", section, None, line))
        elif token.type == "html_block":
            words = _TAG.sub(" ", token.content)
            if len(_WORD.findall(words)) >= 5:  # a paragraph written in HTML, not a badge or a comment
                blocks.append(Block(join_lines(words.splitlines(), known), "prose", section, None, line))
        elif token.type == "tr_open":
            row, at = [], line
        elif token.type == "inline" and tokens[i - 1].type in ("th_open", "td_open"):
            row.append(_inline(token, known))
        elif token.type == "tr_close":
            if tokens[i - 1].type == "th_close" or not header:
                header = row
            if row is not header or len(row) == 1:
                blocks.append(Block(_row(header, row), "table", section, None, at))
        elif token.type == "table_close":
            header = []
        i += 1
    return title, blocks


def _inline(token: Token, known: set[str]) -> str:
    """An inline token's text: markup dropped, links and images by their text, soft line breaks
    joined as a paragraph's lines are."""
    lines = [""]
    words = False
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            lines[-1] += child.content
            words = words or bool(child.content.strip())
        elif child.type in ("softbreak", "hardbreak"):
            lines.append("")
        elif child.type == "image":
            lines[-1] += child.content
    return join_lines(lines, known) if words else ""  # images alone (badges, a logo) are not prose


def _row(header: Sequence[str], cells: Sequence[str]) -> str:
    """A table row as ``header: cell; ...`` (the header row, and cells under no header, as they are)."""
    if cells is header or len(header) != len(cells):
        return " | ".join(cells)
    return "; ".join(f"{h}: {c}" if h and c else c for h, c in zip(header, cells, strict=True))
