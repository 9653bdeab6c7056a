"""Every path a command of the README or a guide names can be found: a file of the repository,
something an earlier command of the same page makes, or a placeholder for the reader's own files,
written with a name that starts with ``my-`` (``my-docs/``, ``runs/my-model/best``) on a page that
says what that means. A reader who copies a line then knows what to replace."""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from pathlib import Path

import pytest

from tests.test_docs import PAGES, ROOT, TEXTS

#: A placeholder path has a part that starts with this; a page using one says so in these words.
PLACEHOLDER, NOTE = "my-", "start with `my-`"
#: Made by ``make install`` (the README's Quick start) before any page is read; ``runs/`` is where
#: commands write, so a path there counts only when a command of the page made it.
INSTALLED, MADE_ONLY = (".venv/",), ("runs/",)
#: The options and arguments of ``sieveqa`` commands that name what they write.
OUTPUTS = {"out", "output", "json_out"}
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]*(\.gz)?$")


def command_lines(text: str) -> list[str]:
    """The shell lines of a page's ``bash`` blocks, continuations joined as the shell joins them (a
    backslash and its newline removed, even inside a word)."""
    lines, block = [], None
    for raw in text.splitlines():
        if raw.startswith("```"):
            block = None if block is not None else raw[3:].strip()
        elif block == "bash":
            if lines and lines[-1].endswith("\\"):
                lines[-1] = lines[-1][:-1] + raw.rstrip()
            else:
                lines.append(raw.strip())
    return [line for line in lines if line and not line.startswith("#")]


def _sieveqa_paths(args: list[str]) -> tuple[list[str], list[str]]:
    """(paths read, paths written) by a ``sieveqa`` command line, as the CLI itself parses it."""
    import typer

    from sieveqa.cli import app
    from sieveqa.models.zoo import SHIPPED

    command, name = typer.main.get_command(app), "sieveqa"
    while hasattr(command, "commands") and args and args[0] in command.commands:
        name, command, args = args[0], command.commands[args[0]], args[1:]
    ctx = command.make_context(name, list(args), resilient_parsing=True)
    read, written = [], []
    for param, value in ctx.params.items():
        source = ctx.get_parameter_source(param)
        if source is None or source.name != "COMMANDLINE" or not isinstance(value, str | os.PathLike):
            continue
        for piece in str(value).split(","):
            piece = re.sub(r"^(jsonl|pairs):", "", piece)
            if not piece or ":" in piece or " " in piece or piece in SHIPPED or piece == "demo":
                continue  # a dataset name, a question, a shipped model, the demo corpus
            if isinstance(value, os.PathLike) or "/" in piece or _EXTENSION.search(piece):
                (written if param in OUTPUTS else read).append(piece)
    return read, written


def paths_of(line: str) -> tuple[list[str], list[str]]:
    """(paths read, paths written or made) by a shell line of a page."""
    code, _, comment = line.partition(" #")
    words = shlex.split(code)
    if words[0] == "sieveqa":
        return _sieveqa_paths(words[1:])
    if words[0] == "make":  # a make target makes what its comment names (globs allowed)
        return [], [w.rstrip(".,;:)") for w in comment.split() if "/" in w]
    if words[0] == "curl":  # URLs and JSON, no file
        return [], []
    values = [w.partition("=")[2] or w for w in words[1:]]
    return [v for v in values if "/" in v and "://" not in v], []


def placeholder(path: str) -> bool:
    return any(part.startswith(PLACEHOLDER) for part in Path(path).parts)


def problems(text: str) -> list[str]:
    """The paths the command lines of a page name that are neither there, nor made by an earlier
    line of the page, nor placeholders."""
    made: list[str] = []
    out = []
    for line in command_lines(text):
        read, written = paths_of(line)
        for path in read:
            norm = os.path.normpath(path)
            if not (
                path.startswith(INSTALLED)
                or (not path.startswith(MADE_ONLY) and (ROOT / norm).exists())
                or any(norm == m or norm.startswith(m + "/") or fnmatch.fnmatch(norm, m) for m in made)
                or placeholder(norm)
            ):
                out.append(f"{path} (in: {line})")
        made += [os.path.normpath(p) for p in written]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("page", [p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_path_a_command_names_is_found_or_marked_as_yours(page: str) -> None:
    """Issue 63: questions.jsonl, path/to/my-reranker, runs/a/best ... were nowhere, and said nothing."""
    assert not problems(TEXTS[page]), f"{page}: paths neither there, made earlier nor marked `my-...`"


def test_the_readme_says_what_my_names_stand_for() -> None:
    """Every page of the site starts from the README (docs/index.md includes it): the convention is
    said there once, and again on each guide that uses a placeholder."""
    assert f"Names that {NOTE}" in TEXTS["README.md"]


def test_the_check_finds_what_it_is_for() -> None:
    page = "\n".join(
        [
            "```bash",
            "sieveqa train --train wikiqa:train --out runs/x",
            "sieveqa eval --model runs/x/best --dataset jsonl:sieveqa/resources/example.jsonl",
            "sieveqa rank --model default --input questions.jsonl -o ranked.jsonl",
            "sieveqa rank --model runs/y/best \\",
            "  --input my-questions.jsonl --output runs/y/ranked.jsonl",
            "make mhs-teacher-scores  # writes bench/results/mhs/teachers/*.json.gz",
            "sieveqa train --arch mhs --teachers bench/results/mhs/teachers/a.json.gz --out runs/mhs",
            "sieveqa index info runs/mhs/best",
            "```",
        ]
    )
    assert [p.split(" ")[0] for p in problems(page)] == ["questions.jsonl", "runs/y/best"]
