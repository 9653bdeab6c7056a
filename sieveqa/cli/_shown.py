"""How ``sieveqa answer`` shows its answers: in a terminal, as JSON, with their profile."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from sieveqa.cli._app import console

if TYPE_CHECKING:
    from sieveqa.profiling import Profile
    from sieveqa.runtime.answer.answerer import Answer

#: Characters of the passage shown on each side of the answer.
_AROUND = 120
_SPACES = re.compile(r"\s+")


def show(answer: Answer, method: str, min_confidence: float | None = None) -> None:
    console.print(f"[bold]Q:[/bold] {escape(answer.question)}")
    # The cut in use, whether --min-confidence set it or the calibration's own (it said "below
    # --min-confidence" where none was given).
    cut = "--min-confidence" if min_confidence is None else f"{min_confidence:.2f}"
    if not answer.answers:
        console.print(f"no answer: {answer.reason()}")
    elif not answer.answered:
        console.print(
            f"[bold]no answer found[/bold] in your documents (confidence {answer.confidence:.2f}, below "
            f"the cut {cut}); the best guess, shown as such:"
        )
    for rank, found in enumerate(answer.answers, start=1):
        before, said, after = excerpt(found.passage.text, *found.bounds)
        # «» mark the answer where the terminal shows no colour.
        highlighted = f"{escape(before)}[black on yellow]«{escape(said)}»[/]{escape(after)}"
        scores = f"answer score {found.score:.3f}"
        if found.confidence is not None:
            scores = f"confidence {found.confidence:.2f}, {scores}"
        if found.passage_score is not None:
            scores += f", passage score {found.passage_score:.3f}"
        title = found.passage.title or found.passage.doc_id
        where = ", ".join(filter(None, (found.passage.doc_id, found.passage.location(found.bounds[0]))))
        console.print(f"\n[bold]{rank}.[/bold] [green]{escape(found.text)}[/green]")
        console.print(f"   [dim]{escape(title)} ({escape(where)}); {scores}[/dim]")
        console.print(f"   {highlighted}")
    total = answer.cost.seconds + answer.retrieval_seconds
    console.print(
        f"\n[dim]{method}: {answer.inferences} transformer inferences, {answer.cost.layer_units} "
        f"layer-units, {total * 1000:.0f} ms ({answer.retrieval_seconds * 1000:.0f} ms retrieval)[/dim]"
    )


def excerpt(text: str, a: int, b: int, around: int = _AROUND) -> tuple[str, str, str]:
    """The passage around its answer ``text[a:b]`` on one line: at most ``around`` characters each side
    (cut at a space, "[...]" where cut), every run of whitespace one space (a passage's paragraphs were
    printed with their blank lines, so the next answer's start was lost among them)."""
    before, said, after = text[:a], text[a:b], text[b:]
    if len(before) > around:
        before = "[...] " + before[-around:].split(" ", 1)[-1]
    if len(after) > around:
        after = after[:around].rsplit(" ", 1)[0] + " [...]"
    return tuple(_SPACES.sub(" ", part) for part in (before, said, after))  # type: ignore[return-value]


def show_profile(spent: Profile) -> None:
    """The profile on stderr (stdout may hold JSON lines)."""
    from rich.console import Console

    from sieveqa.profiling import render

    Console(stderr=True, soft_wrap=True).print(render(spent))


def fewer(result: Answer, top: int, answerer: Any) -> str:
    """Why a question got fewer answers than ``--top`` asked."""
    n = len(result.answers)
    shown = f"{n} answer{'s' * (n != 1)}, not {top}"
    if answerer.method.most_answers is not None:
        return f"{shown}: --method {answerer.method.name} gives at most {answerer.method.most_answers}"
    read = len(result.passages)
    more = " (--retrieve N reads more)" if read >= answerer.retrieve else ""
    return f"{shown}: the {read} passages retrieved hold no more{more}"


def answer_dict(qid: str | None, answer: Answer, method: str) -> dict[str, Any]:
    out: dict[str, Any] = {"question": answer.question}
    if qid is not None:
        out = {"id": qid, **out}
    return {
        **out,
        "method": method,
        "answered": answer.answered,
        "reason": answer.reason(),
        "confidence": None if answer.confidence is None else round(answer.confidence, 6),
        "answers": [f.as_dict() for f in answer.answers],
        "inferences": answer.inferences,
        "layer_units": answer.cost.layer_units,
        "model_seconds": round(answer.cost.seconds, 4),
        "retrieval_seconds": round(answer.retrieval_seconds, 4),
    }
