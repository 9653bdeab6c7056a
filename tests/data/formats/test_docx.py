from __future__ import annotations

from pathlib import Path

from sieveqa.data.formats import read_file

FILES = Path(__file__).parent / "files"


def test_a_word_file_reads_headings_lists_tables_and_code_as_units() -> None:
    doc = read_file(FILES / "wrapped.docx")  # pandoc: a title, headings, a line break, a list, a table
    assert doc.title == "Field notes"
    assert doc.sentences == (
        "The arctic tern flies from pole to pole every year and sees two summers, more daylight than any "
        "other animal on the planet.",
        "Its migration covers about seventy thousand kilometres.",
        "Puffins dig burrows on grassy cliffs and return to the same burrow each spring.",
        "Gannets dive from thirty metres.",
        "bird: albatross; wingspan: 3.5 metres",
        "bird: wren; wingspan: 15 centimetres",
        "count = birds.tally()",
    )
    assert [p.label for p in doc.places][-3:] == ["§ Birds › Measurements"] * 3


def test_a_file_named_docx_that_is_not_one_is_refused_in_one_line(tmp_path: Path) -> None:
    from sieveqa.data.formats import scan_documents

    (tmp_path / "fake.docx").write_text("not a zip", encoding="utf-8")
    assert scan_documents(tmp_path).skipped[0][1].startswith("not a Word file python-docx can read")


def test_a_file_its_library_chokes_on_is_skipped_with_the_error_named(tmp_path: Path) -> None:
    import zipfile

    from sieveqa.data.formats import scan_documents

    with zipfile.ZipFile(tmp_path / "odd.docx", "w") as odd:  # a zip, but no Word document inside
        odd.writestr("[Content_Types].xml", "<Types/>")
    (tmp_path / "ok.md").write_text("# T\n\nFine text.\n", encoding="utf-8")
    reading = scan_documents(tmp_path)
    assert [d.id for d in reading.documents] == ["ok.md"]
    ((name, why),) = reading.skipped
    assert name == "odd.docx" and ("python-docx" in why or "reader failed" in why), why
