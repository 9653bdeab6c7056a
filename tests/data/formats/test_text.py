from __future__ import annotations

import time

import pytest

from sieveqa.data.formats.blocks import _whole, assemble, join_lines
from sieveqa.data.formats.text import text_blocks

MAN = """\
LS(1)                            User Commands                           LS(1)

NAME
       ls - list directory contents

DESCRIPTION
       List  information  about  the FILEs (the current directory by default).
       Sort entries alphabetically if none of -cftuvSUX nor --sort  is  speci\u2010
       fied.

       -a, --all
              do not ignore entries starting with .

       -c     with -lt: sort by, and show, ctime (time of last modification of
              file status information)

GNU coreutils 9.1                September 2022                          LS(1)
"""


def _sentences(text: str) -> list[str]:
    return list(assemble("f.txt", "f", text_blocks(text)).sentences or ())


def test_a_man_page_reads_as_sentences_sections_and_definitions() -> None:
    doc = assemble("ls.txt", "ls", text_blocks(MAN))
    assert doc.sentences == (
        "ls - list directory contents",
        "List information about the FILEs (the current directory by default).",
        "Sort entries alphabetically if none of -cftuvSUX nor --sort is specified.",
        "-a, --all: do not ignore entries starting with .",
        "-c: with -lt: sort by, and show, ctime (time of last modification of file status information)",
    )
    assert [p.section for p in doc.places] == ["NAME", "DESCRIPTION", "DESCRIPTION", "DESCRIPTION"]
    assert doc.places[1].line == 7  # where the paragraph starts in the file


def test_no_sentence_is_split_at_a_line_break() -> None:
    text = (
        "The arctic tern flies from pole to pole every year and sees two summers, more\n"
        "daylight than any other animal. Its migration covers about seventy thou-\n"
        "sand kilometres.\n\n"
        "  * Puffins dig burrows on grassy cliffs and\n"
        "    return to the same burrow each spring.\n"
        "  * Gannets dive from thirty metres.\n"
    )
    assert _sentences(text) == [
        "The arctic tern flies from pole to pole every year and sees two summers, more daylight than any "
        "other animal.",
        "Its migration covers about seventy thousand kilometres.",
        "* Puffins dig burrows on grassy cliffs and return to the same burrow each spring.",
        "* Gannets dive from thirty metres.",
    ]


def test_headings_underlined_or_in_capitals_title_what_follows() -> None:
    text = "Install\n=======\n\nRun make to build it.\n\nUSAGE\n\nCall it with a file.\n"
    doc = assemble("r.txt", "r", text_blocks(text))
    assert doc.sentences == ("Run make to build it.", "Call it with a file.")
    assert [p.section for p in doc.places] == ["Install", "USAGE"]


def test_code_stays_as_written_and_form_feeds_count_pages() -> None:
    text = "Example:\n\n    >>> import json\n    >>> json.dumps(1)\n\fSecond page text here.\n"
    doc = assemble("c.txt", "c", text_blocks(text))
    assert doc.sentences == (">>> import json\n>>> json.dumps(1)", "Second page text here.")
    assert [(p.page, p.section) for p in doc.places] == [(1, "Example"), (2, "Example")]


def test_a_hyphen_that_belongs_to_the_word_stays() -> None:
    assert join_lines(["a command-", "line tool"]) == "a command-line tool"
    assert join_lines(["infor-", "mation"]) == "information"
    assert join_lines(["FOR-", "MAT1 and"], {"format"}) == "FORMAT1 and"


def test_a_subsection_title_over_options_is_a_section_not_a_term() -> None:
    text = (
        "OPTIONS\n"
        "   Context Line Control\n"
        "       -A NUM, --after-context=NUM\n"
        "              Print NUM lines of trailing context.\n\n"
        "       -B NUM, --before-context=NUM\n"
        "              Print NUM lines of leading context.\n"
    )
    doc = assemble("grep.txt", "grep", text_blocks(text))
    assert doc.sentences == (
        "-A NUM, --after-context=NUM: Print NUM lines of trailing context.",
        "-B NUM, --before-context=NUM: Print NUM lines of leading context.",
    )
    assert {p.section for p in doc.places} == {"OPTIONS › Context Line Control"}


def test_a_period_glued_to_a_file_extension_ends_no_sentence() -> None:
    text = (
        "Each file is replaced by one with the extension .gz, while keeping the same modes. "
        "If the file is missing, run ./autogen.sh to create it. The period . matches any character. "
        "Build it with make ."
    )
    assert _sentences(text) == [
        "Each file is replaced by one with the extension .gz, while keeping the same modes.",
        "If the file is missing, run ./autogen.sh to create it.",
        "The period . matches any character.",
        "Build it with make .",
    ]


def test_a_period_inside_a_dotted_name_ends_no_sentence() -> None:
    text = "By default, this file is called massif.out.<pid>, where <pid> is the process ID. It is kept."
    assert _sentences(text) == [
        "By default, this file is called massif.out.<pid>, where <pid> is the process ID.",
        "It is kept.",
    ]


def test_prose_that_runs_on_beside_a_list_is_split_into_sentences_not_lines() -> None:
    text = (
        "Number of snapshots: 25\n"
        " Detailed snapshots: [9, 14 (peak), 24]\n"
        "Why is the graph empty? By default, Massif counts instructions. For very short-run programs\n"
        "such as the example, most instructions load the program.\n"
        "git stash list [<log-options>]\n"
    )
    assert _sentences(text) == [
        "Number of snapshots: 25: Detailed snapshots: [9, 14 (peak), 24]",
        "Why is the graph empty?",
        "By default, Massif counts instructions.",
        "For very short-run programs such as the example, most instructions load the program.",
        "git stash list [<log-options>]",
    ]


def test_a_sentence_that_runs_on_to_the_next_page_stays_whole_on_its_first_page() -> None:
    text = (
        "The worst case expansion is a few bytes, or an expansion ratio\n\f\n"
        "of 0.015% for large files. It never grows.\n\n"
        "A new paragraph ends this page.\n\f\nAnd the next page starts another.\n"
    )
    blocks = text_blocks(text)
    assert [(b.text, b.page) for b in blocks] == [
        (
            "The worst case expansion is a few bytes, or an expansion ratio of 0.015% for large files. "
            "It never grows.",
            1,
        ),
        ("A new paragraph ends this page.", 2),
        ("And the next page starts another.", 3),
    ]


def test_lines_in_columns_are_a_table_one_row_a_unit() -> None:
    text = (
        "Suffix   Units       Byte Equivalent\nb        Blocks      SIZE x 512\nc        Bytes       SIZE\n"
    )
    assert _sentences(text) == [
        "Suffix | Units | Byte Equivalent",
        "b | Blocks | SIZE x 512",
        "c | Bytes | SIZE",
    ]


@pytest.mark.slow
def test_a_long_paragraph_is_joined_in_linear_time() -> None:
    # a line-end hyphen was looked for in the whole paragraph so far: 8,000 lines took 7 minutes
    started = time.perf_counter()
    joined = join_lines(["a wrapped line of prose that runs on and on-"] * 20_000)
    assert len(joined) > 800_000
    assert time.perf_counter() - started < 30  # quadratic: 510 s; linear: well under 1 s quiet


def test_a_long_paragraph_is_cut_into_sentences_in_linear_time() -> None:
    # each piece that goes on in lower case looked for a dotted name in the whole block before it:
    # it took 25 s of a 1.2 MB one-line file's 48 s here, and 4.4 MB ran over 200 s (a log, an export)
    piece = "and keep the value ."
    text = " ".join([piece] * 20_000)
    spans, at = [], 0
    for _ in range(20_000):
        spans.append((at, at + len(piece)))
        at += len(piece) + 1
    started = time.perf_counter()
    sentences = _whole(text, spans)
    assert sentences == [text]  # every piece goes on after a lone period: one sentence
    assert time.perf_counter() - started < 5  # quadratic: ~40 s here; linear: well under 1 s


def test_a_short_title_over_a_one_line_paragraph_is_a_heading() -> None:
    # pydoc's "Module heapq" over its one-line summary was read as text, and the module before it
    # ran on into it: an answer about heapq came back from collections
    text = (
        "Module collections\n\nThis module implements specialized container datatypes providing\n"
        "alternatives to the general purpose built-in containers.\n\n"
        "Module heapq\n\nHeap queue algorithm (a.k.a. priority queue).\n\n"
        "A short line\nthat runs on.\n"
    )
    doc = assemble("d.txt", "d", text_blocks(text))
    assert [p.section for p in doc.places] == ["Module collections", "Module heapq", "Module heapq"]


CHANGELOG = """\
v1.5.4 (Feb 2023)
perf: +20% faster huffman decompression for targets that can't compile x64 assembly (#3449, @terrelln)
perf: up to +10% faster streaming compression at levels 1-2 (#3114, @embg)
cli : Keep original file if `-c` or `--stdout` is given (#3052, @dirkmueller)
build(cmake): fix the debug build (#3090)

Plain prose that wraps over lines stays one paragraph: note: this line holds a colon
but it is not a log, and the lines run on as prose does in a README.
"""


def test_a_changelogs_one_line_entries_are_units_not_one_run_on_sentence() -> None:
    """zstd's changelog: a version's entries, one a line led by a tag, were glued into one unit, and
    answers came back as a 715-character fragment of it."""
    texts = [b.text for b in text_blocks(CHANGELOG)]
    assert texts[:5] == [line for line in CHANGELOG.splitlines()[:5]]
    assert texts[5].startswith("Plain prose that wraps") and texts[5].endswith("in a README.")
    assert len(texts) == 6


def test_japanese_sentences_headings_and_wrapped_lines() -> None:
    """A Japanese paragraph was one "sentence" (its pieces counted as one word each, joined back), a
    heading over it was prose, and a wrapped line took a space in the middle of a word."""
    text = (
        "富士山\n\n富士山は日本で最も高い山で\nす。高さは3776メートルです。\n\n"
        "東京タワー\n\n東京タワーは1958年に完成しました。\n"
    )
    doc = assemble("f.txt", "f", text_blocks(text))
    assert list(doc.sentences or ()) == [
        "富士山は日本で最も高い山です。", "高さは3776メートルです。", "東京タワーは1958年に完成しました。"
    ]  # fmt: skip
    assert [p.section for p in doc.places] == ["富士山", "東京タワー"]
    korean = "서울은 한국의\n수도입니다."
    assert list(assemble("k.txt", "k", text_blocks(korean)).sentences or ()) == ["서울은 한국의 수도입니다."]


def test_an_underlined_title_with_its_text_right_below_heads_a_section() -> None:
    """``Parking`` over ``-------`` over its text, no blank line between, was glued into one sentence."""
    text = "Restarting\n----------\nRun the restart command.\nThen check the log.\n\n"
    text += "Parking\n=======\nPark in B.\n"
    doc = assemble("f.txt", "f", text_blocks(text))
    assert list(doc.sentences or ()) == ["Run the restart command.", "Then check the log.", "Park in B."]
    assert [p.section for p in doc.places] == ["Restarting", "Parking"]


def test_a_compilers_carets_under_a_line_of_code_make_no_title() -> None:
    """A review found the underline cut taking a code line over ``^^^`` for a title, and the sentence
    before it lost."""
    text = "The build failed with this message today:\nx = foo(bar)\n^^^^^^^^^^^^\nerror: foo takes no bar.\n"
    doc = assemble("f.txt", "f", text_blocks(text))
    assert "The build failed with this message today:" in doc.text and "x = foo(bar)" in doc.text
    assert {p.section for p in doc.places} == {""}
