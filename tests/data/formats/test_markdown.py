from __future__ import annotations

from sieveqa.data.formats.blocks import assemble
from sieveqa.data.formats.markdown import markdown_blocks

TEXT = """\
---
title: Field notes
---
[![badge](https://example.com/b.svg)](https://example.com)

# Birds of the north

The arctic tern flies from pole to pole every year and sees two
summers, more daylight than any *other* animal. Its migration covers
about seventy [thousand](https://example.com) kilometres.

## Diving

- Gannets dive from thirty metres and
  fold their wings just before they hit the water.
- Puffins use their wings to swim.

```python
count = birds.tally()
```

| bird | wingspan |
|---|---|
| albatross | 3.5 metres |
"""


def test_no_sentence_is_split_at_a_line_break_and_code_and_tables_stay_apart() -> None:
    title, blocks = markdown_blocks(TEXT)
    doc = assemble("n.md", title, blocks)
    assert title == "Field notes"
    assert doc.sentences == (
        "The arctic tern flies from pole to pole every year and sees two summers, more daylight than any "
        "other animal.",
        "Its migration covers about seventy thousand kilometres.",
        "Gannets dive from thirty metres and fold their wings just before they hit the water.",
        "Puffins use their wings to swim.",
        "count = birds.tally()",
        "bird: albatross; wingspan: 3.5 metres",
    )
    assert [b.kind for b in blocks] == ["prose", "item", "item", "code", "table"]  # list items whole


def test_headings_are_sections_with_their_lines() -> None:
    _, blocks = markdown_blocks(TEXT)
    assert [(b.section, b.line) for b in blocks] == [
        ("Birds of the north", 8),
        ("Birds of the north › Diving", 14),
        ("Birds of the north › Diving", 16),
        ("Birds of the north › Diving", 18),
        ("Birds of the north › Diving", 24),
    ]


def test_the_first_level_one_heading_is_the_title() -> None:
    title, blocks = markdown_blocks("# Tea\n\nTea is a drink.\n\n# Coffee\n\nCoffee is another.\n")
    assert title == "Tea"
    assert [(b.section, b.text) for b in blocks] == [
        ("", "Tea is a drink."),
        ("Coffee", "Coffee is another."),
    ]


def test_a_short_command_is_read_with_the_sentence_that_introduces_it() -> None:
    """ "How do I restart the web server?" was answered "To restart the web server run:", the command
    only in the passage around it."""
    text = "To restart the web server run:\n\n```\nsudo systemctl restart nginx\n```\n\n"
    text += "Then check the log.\n\n"
    text += "A long listing:\n\n```\n" + "line\n" * 5 + "```\n"
    doc = assemble("ops.md", "", markdown_blocks(text)[1])
    assert doc.sentences == (
        "To restart the web server run:\n\nsudo systemctl restart nginx",
        "Then check the log.",
        "A long listing:",
        "line\nline\nline\nline\nline",  # a listing stays a unit of its own
    )


def test_a_command_under_another_heading_is_not_read_with_the_sentence_before() -> None:
    """A review found the intro-and-command unit spanning a heading, the section of the command lost."""
    text = "To restart run:\n\n## Other section\n\n```\nsudo reboot\n```\n"
    doc = assemble("ops.md", "", markdown_blocks(text)[1])
    assert doc.sentences == ("To restart run:", "sudo reboot")
    assert [p.section for p in doc.places][-1] == "Other section"
