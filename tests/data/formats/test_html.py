from __future__ import annotations

from pathlib import Path

from sieveqa.data.formats import read_file

PAGE = """<!DOCTYPE html>
<html><head><title>Field notes</title><style>p { color: red }</style>
<script>var tracking = "the script is not text";</script></head>
<body>
<nav><a href="/">Home</a> <a href="/a">Birds</a> <a href="/b">Fish</a></nav>
<div class="sidebar">Sidebar text that is not the page's.</div>
<div class="header">Next: Fish, Previous: Home</div>
<main>
<h1>Field notes</h1>
<h2>Birds &para;</h2>
<p>The arctic tern flies from pole to pole every year and sees
two summers, more daylight than any <em>other</em> animal.  Its migration
covers about seventy thousand kilo&shy;metres.</p>
<dl><dt><code>--dive</code></dt><dd>Gannets dive from
thirty metres.</dd>
<dt><code>-p</code></dt><dt><code>--puffin</code></dt><dd><p>Puffins swim with
their wings.</p><p>They nest in burrows.</p></dd></dl>
<pre>count = birds.tally()
print(count)</pre>
<table><tr><th>bird</th><th>wingspan</th></tr><tr><td>albatross</td><td>3.5 metres</td></tr></table>
<ul><li><a href="#1">One link</a></li><li><a href="#2">Two links</a></li><li><a href="#3">Three</a></li></ul>
</main>
<footer>Copyright and a footer.</footer>
</body></html>
"""


def test_the_main_text_only_with_sections_and_no_sentence_split_at_a_line_break(tmp_path: Path) -> None:
    file = tmp_path / "notes.html"
    file.write_text(PAGE, encoding="utf-8")
    doc = read_file(file)
    assert doc.title == "Field notes"
    assert doc.sentences == (
        "The arctic tern flies from pole to pole every year and sees two summers, more daylight than any "
        "other animal.",
        "Its migration covers about seventy thousand kilometres.",
        "--dive: Gannets dive from thirty metres.",
        "-p, --puffin: Puffins swim with their wings.",
        "They nest in burrows.",
        "count = birds.tally()\nprint(count)",
        "bird: albatross; wingspan: 3.5 metres",
    )
    assert {p.section for p in doc.places} == {"Birds"}
    assert all(p.line is not None and p.line > 9 for p in doc.places)


def test_a_page_in_another_encoding_says_so_in_its_meta(tmp_path: Path) -> None:
    file = tmp_path / "latin.html"
    file.write_bytes(
        '<html><head><meta charset="iso-8859-1"></head><body><p>Café crème.</p></body></html>'.encode(
            "latin-1"
        )
    )
    assert read_file(file).text == "Café crème."


def test_a_layout_table_is_walked_its_headings_kept_apart(tmp_path: Path) -> None:
    file = tmp_path / "faq.html"
    file.write_text(
        "<html><head><title>FAQ</title></head><body><table><tr><td><h1>The XSLT library</h1>"
        "<h2>FAQ</h2></td></tr></table><p>Use the xslt-config script.</p></body></html>",
        encoding="utf-8",
    )
    doc = read_file(file)
    assert doc.sentences == ("Use the xslt-config script.",)
    assert doc.places[0].section == "The XSLT library › FAQ"


def test_a_table_row_of_links_alone_is_navigation(tmp_path: Path) -> None:
    file = tmp_path / "intro.html"
    file.write_text(
        '<html><body><table><tr><td><a href="toc.html">Back to Table of Contents</a></td>'
        '<td><a href="next.html">Next: Definitions</a></td></tr></table><p>Mom is a macro set.</p>'
        "<table><tr><td>mom</td><td>a macro set</td></tr></table></body></html>",
        encoding="utf-8",
    )
    assert read_file(file).sentences == ("Mom is a macro set.", "mom | a macro set")


def _sentences_of(tmp_path: Path, body: str) -> tuple[str, ...] | None:
    page = tmp_path / "page.html"
    page.write_text(f"<html><body><h1>Page</h1>{body}</body></html>", encoding="utf-8")
    return read_file(page, "page.html").sentences


def test_a_sentence_cut_into_paragraphs_is_one_sentence_again(tmp_path: Path) -> None:
    """libxslt's FAQ sets "Use", a command, "to get the compilation flags and", ... as paragraphs of
    their own: the answer to "which script prints the compiler flags?" came back as a fragment."""
    body = (
        "<p>A script provides those flags. Use</p>"
        "<p><code>xslt-config --cflags</code></p><p>to get the compilation flags and</p>"
        "<p><code>xslt-config --libs</code></p><p>to get the linker flags.</p>"
        "<p>Paragraph one ends here.</p><p>lower case starts a new sentence here.</p>"
        "<p>No full stop</p><h2>Next</h2><p>goes on under another heading.</p>"
    )
    assert _sentences_of(tmp_path, body) == (
        "A script provides those flags.",
        "Use xslt-config --cflags to get the compilation flags and xslt-config --libs to get the linker "
        "flags.",
        "Paragraph one ends here.",
        "lower case starts a new sentence here.",
        "No full stop",
        "goes on under another heading.",
    )


def test_a_synopsis_is_not_joined_to_the_sentence_below_it(tmp_path: Path) -> None:
    """bc's page: the synopsis "bc [ -hlwsqv ] [long-options] [ file ... ]" took the description below
    it, which starts with the command's name in lower case."""
    body = "<p>bc [ -hlwsqv ] [long-options] [ file ... ]</p><p>bc is a language of arbitrary precision.</p>"
    assert _sentences_of(tmp_path, body) == (
        "bc [ -hlwsqv ] [long-options] [ file ... ]",
        "bc is a language of arbitrary precision.",
    )
