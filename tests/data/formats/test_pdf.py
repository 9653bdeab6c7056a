from __future__ import annotations

from pathlib import Path

import pytest

from sieveqa.data.formats import Unreadable, read_file, scan_documents
from sieveqa.errors import DataFormatError

FILES = Path(__file__).parent / "files"


def test_a_typeset_man_page_reads_whole_sentences_by_page_without_its_running_lines() -> None:
    doc = read_file(FILES / "wrapped.pdf")  # groff -man -Tpdf: two pages, a header and footer on each
    assert doc.sentences == (
        "wrapped - a page whose sentences the typesetter wraps across lines",
        "The quick brown fox jumps over the lazy dog while the typesetter fills every line to the margin "
        "and hyphenates the longest words where it must.",
        "Octopus blood carries oxygen with a copper protein called hemocyanin, which turns blue when it "
        "is oxygenated.",
        "-a, --all: do not ignore entries whose names start with a dot, and list them with the others in "
        "the same order.",
        "-w, --width=COLS: set the output width to COLS columns; zero means that there is no limit at all.",
        "A paragraph on the second page explains that the running header and the footer repeat on every "
        "page and must never be read as part of the text.",
        "The lighthouse keeper counted exactly four hundred and twelve steps from the rocks to the lamp "
        "room.",
    )
    assert "WRAPPED(1)" not in doc.text and "November 2026" not in doc.text
    assert [(p.page, p.section) for p in doc.places][-1] == (2, "NOTES")
    assert doc.places[0].label == "page 1, § NAME"


def test_a_pdf_without_a_text_layer_says_so_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(Unreadable, match=r"no text layer \(a scanned PDF\?\)"):
        read_file(FILES / "scanned.pdf")
    with pytest.raises(DataFormatError, match=r"scanned.pdf: no text layer"):
        scan_documents(FILES / "scanned.pdf")


def test_a_damaged_pdf_is_skipped_in_a_folder_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "broken.pdf").write_bytes((FILES / "wrapped.pdf").read_bytes()[:300])
    (tmp_path / "ok.txt").write_text("A sentence to index.", encoding="utf-8")
    reading = scan_documents(tmp_path)
    assert [d.id for d in reading.documents] == ["ok.txt"]
    ((name, why),) = reading.skipped
    assert name == "broken.pdf" and why.startswith("not a PDF PDFium can read")


def test_a_page_in_two_columns_reads_each_paragraph_whole_across_columns_and_pages() -> None:
    # groff -ms -Tpdf two-columns.ms: .2C, 5-inch pages; a paragraph runs from the left column to the
    # right and from page 1 to page 2, where "- 2 -" stands at the top
    doc = read_file(FILES / "two-columns.pdf")
    birds = [s for s in doc.sentences if s.startswith("The ")]
    assert len(birds) == 8 and all(s.endswith(".") for s in doc.sentences)
    assert birds[3] == (
        "The wandering albatross glides for hours over the southern ocean without once flapping its long "
        "narrow wings."
    )
    assert doc.sentences.count("It nests on the coasts of the north.") == 8
    assert "- 2 -" not in doc.text and {p.page for p in doc.places} == {1, 2}


def test_a_listing_in_a_fixed_pitch_font_stays_text_not_headings() -> None:
    # libtasn1.pdf's ASN.1 listings: BEGIN and END alone between blank lines were taken for headings
    # in capitals, dropped from the text, and every later section read "END › ..."
    doc = read_file(FILES / "listing.pdf")  # groff -ms -Tpdf listing.ms: the listing set in Courier
    assert doc.sentences == (
        "Consider this definition:\n\nExample { 1 2 3 4 }",  # a short listing read with its introduction
        "BEGIN",
        "Group ::= SEQUENCE { id OBJECT IDENTIFIER }",
        "END",
        "The notation to reach the Group type of the Example definitions is Example.Group, as a string.",
    )
    assert {p.section for p in doc.places} == {""}


def test_a_page_that_starts_with_a_heading_or_is_empty_still_turns_the_page() -> None:
    """The form feed between pages was written only after a line of the page before that was not a
    heading, and none for a page without text: a manual's later pages were cited short (page 9 for 10)."""
    from sieveqa.data.formats.pdf import _layout, _Line
    from sieveqa.data.formats.text import text_blocks

    def line(page: int, text: str, top: float, size: float = 10.0) -> _Line:
        return _Line(page, text, 72.0, top, 792.0, size)

    lines = [
        line(1, "The first page says one thing.", 100),
        line(2, "A Heading", 100, size=16),  # page 2 starts with a heading
        line(2, "The second page says another.", 130),
        line(4, "The fourth page follows an empty third.", 100),  # page 3 has no text
    ]
    text, _ = _layout(lines, 10.0)
    assert text.count("\f") == 3
    pages = {b.text: b.page for b in text_blocks(text)}
    assert pages["The second page says another."] == 2
    assert pages["The fourth page follows an empty third."] == 4
