"""Reading documents to index, and the one-line errors bad ones get."""

import codecs
import json
from pathlib import Path

import pytest

from sieveqa.data.formats import read_documents, scan_documents
from sieveqa.errors import ConfigError, DataFormatError, DatasetNotFoundError


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_documents_with_optional_title(tmp_path: Path) -> None:
    docs = read_documents(
        _jsonl(tmp_path / "d.jsonl", [{"id": "a", "text": "One."}, {"id": 7, "title": "T", "text": "Two."}])
    )
    assert [(d.id, d.title, d.text) for d in docs] == [("a", "", "One."), ("7", "T", "Two.")]


def test_a_documents_own_sentences_are_used(tmp_path: Path) -> None:
    # Issue 30: the JSONL reader dropped them, so the splitter cut "Dr. Who arrived." in two.
    from sieveqa.data.corpus import CorpusIndex

    text = "Dr. Who arrived at 5 p.m. on Monday. Then he left."
    rows = [{"id": "a", "text": text, "sentences": ["Dr. Who arrived at 5 p.m. on Monday.", "Then he left."]}]
    (doc,) = read_documents(_jsonl(tmp_path / "d.jsonl", rows))
    assert doc.sentences == tuple(rows[0]["sentences"])
    index = CorpusIndex.build([doc], tmp_path / "idx")
    (passage,) = index.passages(["1"])
    assert passage.sentences == rows[0]["sentences"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"text": "x"}], "d.jsonl:1: field 'id' must be a non-empty string"),
        ([{"id": "a", "text": "  "}], "d.jsonl:1: document 'a' has no text"),
        (
            [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}],
            "d.jsonl:2: duplicate document id 'a' (first at",
        ),
        ([{"id": "a", "text": "x", "title": 3}], "d.jsonl:1: field 'title' must be a string"),
        ([], "d.jsonl: no documents"),
        ([{"id": "a", "text": "x", "sentences": "x"}], "d.jsonl:1: field 'sentences' must be a list"),
        (
            [{"id": "a", "text": "One. Two.", "sentences": ["Two.", "One."]}],
            "d.jsonl:1: field 'sentences': sentence",
        ),
    ],
)
def test_bad_jsonl_documents_are_named(tmp_path: Path, rows: list, message: str) -> None:
    with pytest.raises(DataFormatError, match=message.replace("(", r"\(")):
        read_documents(_jsonl(tmp_path / "d.jsonl", rows))


def test_folder_of_text_and_markdown(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "notes_on-tea.txt").write_text("Tea is a drink.", encoding="utf-8")
    (tmp_path / "a.md").write_text("intro\n# The Title\nBody text.", encoding="utf-8")
    (tmp_path / "ignored.csv").write_text("x", encoding="utf-8")
    reading = scan_documents(tmp_path)
    docs = reading.documents
    assert [(d.id, d.title) for d in docs] == [
        ("a.md", "The Title"),
        ("sub/notes_on-tea.txt", "notes on tea"),
    ]
    assert docs[0].text == "intro\n\nBody text."  # the heading is the title, not a sentence
    assert reading.read == {"markdown": 1, "text": 1}
    assert reading.skipped == [("ignored.csv", reading.skipped[0][1])]
    assert "does not read (.csv)" in reading.skipped[0][1]


def test_a_file_in_a_legacy_encoding_is_read_and_a_binary_one_skipped(tmp_path: Path) -> None:
    text = "Le café crème est un café servi avec de la crème, très apprécié à Paris."
    (tmp_path / "latin1.txt").write_bytes(text.encode("latin-1"))
    (tmp_path / "binary.txt").write_bytes(b"\x00\x01\x02 not text")
    reading = scan_documents(tmp_path)
    assert [d.text for d in reading.documents] == [text]
    assert reading.skipped == [("binary.txt", "binary, not text")]


def test_unicode_text_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    # Windows' "Unicode" text (UTF-16 with its mark) was skipped as "binary, not text"
    text = "Sea otters hold hands while they sleep.\r\nThey use stones as tools."
    (tmp_path / "utf16.txt").write_bytes(text.encode("utf-16"))
    (tmp_path / "utf16be.txt").write_bytes(codecs.BOM_UTF16_BE + text.encode("utf-16-be"))
    (tmp_path / "utf32.txt").write_bytes(text.encode("utf-32"))
    (tmp_path / "broken.txt").write_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le") + b"\x00\xd8")
    reading = scan_documents(tmp_path)
    assert [d.id for d in reading.documents] == ["utf16.txt", "utf16be.txt", "utf32.txt"]
    assert all(list(d.sentences) == ["Sea otters hold hands while they sleep.", "They use stones as tools."]
               for d in reading.documents)  # fmt: skip
    assert reading.skipped == [("broken.txt", reading.skipped[0][1])]
    assert "marked UTF-16 but byte" in reading.skipped[0][1]


def test_empty_folder_and_unknown_names(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"no documents"):
        read_documents(tmp_path)
    with pytest.raises(DatasetNotFoundError, match="not a file, a folder, nor a document dataset"):
        read_documents("nowhere:else")


def test_the_demo_corpus_ships_with_the_package() -> None:
    docs = read_documents("demo")
    assert len(docs) == 8 and all(d.title and d.text for d in docs)


def test_wikiqa_documents_keep_their_sentences_in_order(real_data: Path) -> None:
    docs = {d.id: d for d in read_documents("wikiqa:dev")}
    doc = next(iter(docs.values()))
    assert doc.sentences and doc.text == " ".join(doc.sentences)


def test_compressed_files_and_files_named_as_text_are_read(tmp_path: Path) -> None:
    """/usr/share/doc keeps its READMEs gzipped: every one was skipped ("unpack it first")."""
    import bz2
    import gzip
    import lzma

    (tmp_path / "README.md.gz").write_bytes(gzip.compress(b"# Apt\n\nApt installs packages."))
    (tmp_path / "NEWS.gz").write_bytes(gzip.compress(b"Version 2 reads compressed files."))
    (tmp_path / "notes.txt.bz2").write_bytes(bz2.compress(b"Bzip2 notes are text too."))
    (tmp_path / "guide.html.xz").write_bytes(lzma.compress(b"<h1>Guide</h1><p>An xz page.</p>"))
    (tmp_path / "ls.1.gz").write_bytes(gzip.compress(b".TH LS 1\n.SH NAME\nls \\- list"))
    (tmp_path / "broken.txt.gz").write_bytes(b"\x1f\x8b not really gzip")
    (tmp_path / "changelog.Debian.gz").write_bytes(gzip.compress(b"bash (5.2) unstable; urgency=low"))
    (tmp_path / "README.Debian").write_text("Debian builds bash with its own patches.", encoding="utf-8")
    (tmp_path / "inputrc.arrows").write_text("set editing-mode vi", encoding="utf-8")
    reading = scan_documents(tmp_path)
    got = {d.id: (d.title, d.text) for d in reading.documents}
    assert got == {
        "NEWS.gz": ("NEWS", "Version 2 reads compressed files."),
        "README.md.gz": ("Apt", "Apt installs packages."),
        "guide.html.xz": ("Guide", "An xz page."),
        "notes.txt.bz2": ("notes", "Bzip2 notes are text too."),
        "README.Debian": ("README", "Debian builds bash with its own patches."),  # named as text is
        "changelog.Debian.gz": ("changelog", "bash (5.2) unstable; urgency=low"),
    }
    assert reading.read == {"markdown": 1, "text": 4, "html": 1}
    skipped = dict(reading.skipped)
    assert skipped["ls.1.gz"].startswith("a man page (troff): render it as text first (man -l FILE")
    assert skipped["broken.txt.gz"].startswith("it could not be unpacked (BadGzipFile:")
    assert skipped["inputrc.arrows"].startswith("a format sieveqa does not read (.arrows)")


def test_read_documents_names_what_it_skips_and_refuses_what_is_no_source(tmp_path: Path, caplog) -> None:
    """From Python, skipped files vanished in silence (the CLI lists them); "" read the working
    folder; None or a list failed inside pathlib; a Python caller was told of --input."""
    (tmp_path / "notes.txt").write_text("Sea otters hold hands while they sleep.\\n", encoding="utf-8")
    (tmp_path / "blob.bin").write_bytes(b"\\x00\\x01\\x02" * 10)
    with caplog.at_level("WARNING", logger="sieveqa"):
        docs = read_documents(tmp_path)
    assert [d.id for d in docs] == ["notes.txt"]
    assert "blob.bin" in caplog.text and "skipped 1" in caplog.text
    for bad, message in [("", "the source is empty"), ("  ", "the source is empty"), (None, "got NoneType"),
                         ([tmp_path], "got list")]:  # fmt: skip
        with pytest.raises(ConfigError, match=message):
            read_documents(bad)  # type: ignore[arg-type]
    with pytest.raises(DatasetNotFoundError, match=r"^nowhere:else: not a file"):
        read_documents("nowhere:else")


def test_windows_text_without_marks_reads_as_written(tmp_path: Path) -> None:
    """A short note in Windows' Western code page came out as Baltic (cp775: "ōthe budget is 5Ć"),
    and UTF-16 without a byte-order mark was skipped as binary."""
    note = "The manager said \u201cthe budget is 5\u20ac per head\u201d \u2013 final."
    (tmp_path / "note.txt").write_bytes(note.encode("cp1252"))
    czech = "Příliš žluťoučký kůň úpěl ďábelské ódy. Praha je hlavní město České republiky."
    (tmp_path / "czech.txt").write_bytes(czech.encode("cp1250"))
    russian = "Москва — столица России, крупнейший город страны. Она стоит на реке Москве."
    (tmp_path / "russian.txt").write_bytes(russian.encode("cp1251"))
    plain = "Sea otters hold hands while they sleep."
    (tmp_path / "le.txt").write_bytes(plain.encode("utf-16-le"))
    (tmp_path / "be.txt").write_bytes(plain.encode("utf-16-be"))
    import array

    (tmp_path / "counts").write_bytes(array.array("H", range(1, 200)).tobytes())  # small uint16s
    reading = scan_documents(tmp_path)
    assert {d.id: d.text for d in reading.documents} == {
        "note.txt": note, "czech.txt": czech, "russian.txt": russian, "le.txt": plain, "be.txt": plain
    }  # fmt: skip
    assert reading.skipped == [("counts", "binary, not text")]


def test_links_that_are_not_read_are_said(tmp_path: Path) -> None:
    """A link to a folder, a link to nothing and a loop of links were dropped without a word."""
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    docs.mkdir()
    outside.mkdir()
    (outside / "far.txt").write_text("Far away text.", encoding="utf-8")
    (docs / "here.txt").write_text("Text here.", encoding="utf-8")
    (docs / "linked.txt").symlink_to(outside / "far.txt")  # a link to a file is read
    (docs / "folder").symlink_to(outside)
    (docs / "gone.txt").symlink_to(tmp_path / "nothing.txt")
    (docs / "loop-a").symlink_to(docs / "loop-b")
    (docs / "loop-b").symlink_to(docs / "loop-a")
    reading = scan_documents(docs)
    assert sorted(d.id for d in reading.documents) == ["here.txt", "linked.txt"]
    why = dict(reading.skipped)
    assert why["folder"] == "a link to a folder, not followed (index that folder too)"
    assert {why[n] for n in ("gone.txt", "loop-a", "loop-b")} == {
        "a link to nothing (its target is gone, or links lead in a loop)"
    }
