from __future__ import annotations

from sieveqa.data.formats.blocks import assemble, join_lines
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


def test_a_period_inside_a_dotted_name_ends_no_sentence() -> None:
    text = "By default, this file is called massif.out.<pid>, where <pid> is the process ID. It is kept."
    assert _sentences(text) == [
        "By default, this file is called massif.out.<pid>, where <pid> is the process ID.",
        "It is kept.",
    ]
