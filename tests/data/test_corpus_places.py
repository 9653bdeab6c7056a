"""A file's places go through the index: passages stay in one section, BM25 reads the section, and a
passage says where each of its characters is in the file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sieveqa.data.corpus import CorpusIndex
from sieveqa.data.documents import Document
from sieveqa.data.formats import read_file
from sieveqa.data.formats.blocks import Block, assemble

FILES = Path(__file__).parent / "formats" / "files"


def _passages(index: CorpusIndex) -> list:
    return index.passages([str(i) for i in range(1, len(index) + 1)])


def test_passages_name_their_page_and_section(tmp_path: Path) -> None:
    index = CorpusIndex.build([read_file(FILES / "wrapped.pdf", "manual.pdf")], tmp_path / "index")
    passages = _passages(index)
    lighthouse = next(p for p in passages if "lighthouse" in p.text)
    at = lighthouse.text.index("The lighthouse")
    assert lighthouse.location(at) == "page 2, § NOTES"
    assert passages[0].location(0) == "page 1, § NAME"


def test_a_passage_never_spans_two_sections_and_bm25_reads_the_section(tmp_path: Path) -> None:
    blocks = [
        Block("Brew the leaves for three minutes.", section="Tea"),
        Block("Grind the beans finely.", section="Coffee"),
        Block("Use water just off the boil.", section="Coffee"),
    ]
    index = CorpusIndex.build([assemble("drinks.md", "Drinks", blocks)], tmp_path / "index")
    assert [p.text for p in _passages(index)] == [
        "Brew the leaves for three minutes.",
        "Grind the beans finely.\n\nUse water just off the boil.",
    ]
    hits = index.search_many(["coffee"], 5)[0]  # "coffee" is only in the section's title
    assert index.passages([hits[0][0]])[0].text.startswith("Grind")


def test_an_index_from_before_places_opens_and_takes_files_appended(tmp_path: Path) -> None:
    index = CorpusIndex.build([Document("a", "Cats sleep a lot.")], tmp_path / "index")
    db = index.generation / "corpus.sqlite"
    with sqlite3.connect(db) as conn:  # as an index built before places were recorded
        conn.execute("DROP TABLE places")
    index.close()
    old = CorpusIndex.open(tmp_path / "index", verify=False)
    assert old.passages(["1"])[0].location(0) == ""
    new = old.append([read_file(FILES / "wrapped.docx", "notes.docx")])
    assert {p.location(0) for p in _passages(new)} >= {"", "§ Birds"}
