"""``sieveqa index corpus`` over a user's folder: what it read by format, what it skipped and why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sieveqa.errors import StoreError
from tests.cli.conftest import one_error_line

FILES = Path(__file__).parents[1] / "data" / "formats" / "files"


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    shutil.copy(FILES / "wrapped.pdf", docs / "manual.pdf")
    shutil.copy(FILES / "wrapped.docx", docs / "sub" / "notes.docx")
    shutil.copy(FILES / "scanned.pdf", docs / "scan.pdf")
    (docs / "readme.txt").write_text("Tea is a drink made\nfrom leaves.\n", encoding="utf-8")
    (docs / "logo.png").write_bytes(b"\x89PNG\r\n")
    (docs / ".git").mkdir()
    (docs / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    return docs


def test_a_folder_reports_what_it_read_and_skipped(sieveqa, tmp_path: Path) -> None:
    result = sieveqa("index", "corpus", "--input", _folder(tmp_path), "--out", tmp_path / "index")
    assert result.exit_code == 0, result.output
    assert "read 3 files (docx 1, pdf 1, text 1); skipped 2; 1 hidden (names starting with '.') not read" in (
        result.output
    )
    assert "skipped logo.png: a format sieveqa does not read (.png); sieveqa reads .txt," in result.output
    assert "skipped scan.pdf: no text layer (a scanned PDF?)" in result.output
    assert "3 documents" in result.output


def test_the_skipped_list_is_cut_short_unless_verbose(sieveqa, tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    for i in range(12):
        (docs / f"image-{i:02d}.png").write_bytes(b"\x89PNG\r\n")
    result = sieveqa("index", "corpus", "--input", docs, "--out", tmp_path / "a")
    assert result.exit_code == 0 and "... and 4 more (--verbose lists them)" in result.output
    result = sieveqa("index", "corpus", "--input", docs, "--out", tmp_path / "b", "--verbose")
    assert result.exit_code == 0 and result.output.count("  skipped ") == 14 and "more (" not in result.output


def test_a_file_given_directly_is_read_or_refused_in_one_line(sieveqa, tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    result = sieveqa("index", "corpus", "--input", docs / "manual.pdf", "--out", tmp_path / "one")
    assert result.exit_code == 0 and "1 documents, 7 sentences" in result.output, result.output
    line = one_error_line(sieveqa("index", "corpus", "--input", docs / "logo.png", "--out", tmp_path / "x"))
    assert line.startswith(
        f"error: {docs / 'logo.png'}: a format sieveqa does not read (.png); sieveqa reads"
    )
    assert ".pdf, .docx (each also as .gz, .bz2 or .xz), and JSONL" in line
    line = one_error_line(sieveqa("index", "corpus", "--input", docs / "scan.pdf", "--out", tmp_path / "x"))
    assert "scan.pdf: no text layer (a scanned PDF?)" in line
    assert not (tmp_path / "x").exists()


def test_a_folder_with_nothing_to_read_is_refused(sieveqa, tmp_path: Path) -> None:
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "a.png").write_bytes(b"\x89PNG")
    line = one_error_line(
        sieveqa("index", "corpus", "--input", tmp_path / "pics", "--out", tmp_path / "i"), 2
    )
    assert "no documents to index (read no files; skipped 1: a.png: a format sieveqa does not read" in line


def test_a_damaged_compressed_file_given_directly_is_one_line(sieveqa, tmp_path: Path) -> None:
    broken = tmp_path / "notes.txt.gz"
    broken.write_bytes(b"\x1f\x8b not really gzip")
    result = sieveqa("index", "corpus", "--input", broken, "--out", tmp_path / "x")
    line = one_error_line(result)
    assert result.exit_code == 2 and line.startswith(
        f"error: {broken}: it could not be unpacked (BadGzipFile:"
    )


def test_an_input_that_is_nothing_is_named_by_its_flag(sieveqa, tmp_path: Path) -> None:
    line = one_error_line(sieveqa("index", "corpus", "--input", "nowhere:else", "--out", tmp_path / "x"))
    assert line.startswith("error: --input nowhere:else: not a file, a folder, nor a document dataset"), line


def test_a_folder_that_changed_is_followed_with_sync(sieveqa, tmp_path: Path) -> None:
    """Indexed again after an edit, the folder was refused whole; deleted and renamed files stayed."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "wifi.txt").write_text("The wifi password is tulip42.\n", encoding="utf-8")
    (docs / "parking.md").write_text("Employees park in garage B.\n", encoding="utf-8")
    (docs / "old.txt").write_text("The old printer is on floor 2.\n", encoding="utf-8")
    index = tmp_path / "index"
    assert sieveqa("index", "corpus", "--input", docs, "--out", index).exit_code == 0
    (docs / "wifi.txt").write_text("The wifi password is daisy77.\n", encoding="utf-8")
    (docs / "old.txt").unlink()
    (docs / "parking.md").rename(docs / "garage.md")
    (docs / "new.txt").write_text("Lunch is at noon.\n", encoding="utf-8")
    refused = sieveqa("index", "corpus", "--input", docs, "--out", index)
    line = refused.output.strip().splitlines()[-1]  # after what was read
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert "error: document id 'wifi.txt' is already in the index with another text" in line
    assert "--sync" in line
    result = sieveqa("index", "corpus", "--input", docs, "--out", index, "--sync")
    assert result.exit_code == 0, result.output
    assert (
        f"appended 2 documents to {index}, replaced 1, removed 2" in result.output
    )  # new, garage; old, parking
    assert "3 documents, 3 sentences" in result.output
    from sieveqa.data.corpus import CorpusIndex

    stored = CorpusIndex.open(index)
    texts = [p.text for p in stored.passages([i for i, _ in stored.search_many(["wifi password"], 5)[0]])]
    assert texts == ["The wifi password is daisy77."]
    assert stored.search_many(["printer"], 5)[0] == [] and stored.search_many(["employees"], 5)[0]
    (docs / "new.txt").unlink()
    result = sieveqa("index", "corpus", "--input", docs, "--out", index)
    assert result.exit_code == 0 and "1 document of the index is not in" in result.output, result.output


def test_a_build_that_finds_another_at_work_leaves_its_folder_alone(
    sieveqa, tmp_path: Path, monkeypatch
) -> None:
    """Two builds started at once into a new folder: the one that found the other's lock removed the
    folder the other was writing (it had made the folder, it thought)."""
    from sieveqa.data.corpus import CorpusIndex
    from sieveqa.errors import BusyError

    out = tmp_path / "index"

    def other_at_work(*args, **kwargs):
        out.mkdir()
        (out / ".gen-00000.tmp").mkdir()  # the other build's work so far
        raise BusyError(f"{out}: another sieveqa process is writing this corpus index")

    monkeypatch.setattr(CorpusIndex, "build", other_at_work)
    result = sieveqa("index", "corpus", "--input", _folder(tmp_path), "--out", out)
    assert result.exit_code == 2 and "another sieveqa process is writing" in result.output
    assert (out / ".gen-00000.tmp").is_dir()


def test_sync_refuses_what_would_empty_an_index_and_keeps_files_not_read(sieveqa, tmp_path: Path) -> None:
    """A review found --sync removing every document given another folder, a subfolder, or one file,
    and removing a file that was there but skipped this time."""
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.txt").write_text("Alpha is the first letter.\n", encoding="utf-8")
    (docs / "sub" / "b.txt").write_text("Beta is the second letter.\n", encoding="utf-8")
    (docs / "c.txt").write_text("Gamma is the third letter.\n", encoding="utf-8")
    index = tmp_path / "index"
    assert sieveqa("index", "corpus", "--input", docs, "--out", index).exit_code == 0
    assert f"built from: {docs.resolve()}" in sieveqa("index", "info", index).output
    sync = ("--out", index, "--sync")
    for part in (docs / "sub", docs / "a.txt"):  # a subfolder ("b.txt", not "sub/b.txt"), one file
        refused = sieveqa("index", "corpus", "--input", part, *sync)
        assert refused.exit_code == 2, refused.output
        assert f"holds documents of other inputs too ({docs.resolve()})" in refused.output
    from sieveqa.data.corpus import CorpusIndex
    from sieveqa.data.documents import Document

    with pytest.raises(StoreError, match=r"none of the 1 document given is in .* would remove all 3"):
        CorpusIndex.open(index).append([Document("b.txt", "Beta.")], sync=True)  # no source said
    (docs / "c.txt").write_bytes(b"\x00\x01 now binary")  # there, but not read this time
    (docs / "a.txt").unlink()
    result = sieveqa("index", "corpus", "--input", docs, *sync)
    assert result.exit_code == 0 and f"removed 1 document in {index} (1 unchanged)" in result.output
    kept = CorpusIndex.open(index)
    assert kept.counts["documents"] == 2
    assert {p.doc_id for p in kept.passages(["2", "3"])} == {"sub/b.txt", "c.txt"}
