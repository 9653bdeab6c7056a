"""What a question may be: its length (refused past ``MAX_QUESTION_CHARS``, as ``serve`` refuses past
its ``--max-chars``), and what is said of a question the models may not read whole or in their language."""

from __future__ import annotations

import logging

from sieveqa.errors import ConfigError

__all__ = ["MAX_QUESTION_CHARS", "READ_WHOLE_WORDS", "check_question_length"]

log = logging.getLogger(__name__)

#: The longest question taken (characters), as ``serve``'s default ``--max-chars``.
MAX_QUESTION_CHARS = 20_000
#: Past this many words a question may be cut where a model's input is full (features.py).
READ_WHOLE_WORDS = 64

_SAID_SCRIPT: list[bool] = []  # that the models read English, said once a process


def check_question_length(
    question: str, which: str = "the question", limit: int = MAX_QUESTION_CHARS
) -> None:
    """Refuse a question over ``limit`` characters; say when one is long enough to be cut, and (once)
    when it is written in a script other than Latin: the shipped models were trained on English."""
    if len(question) > limit:
        raise ConfigError(f"{which}: {len(question)} characters, more than {limit}")
    letters = [c for c in question if c.isalpha()]
    # Latin: ASCII, Latin-1 to Extended-B, and Extended Additional (Vietnamese)
    latin = (("a", "z"), ("\u00c0", "\u024f"), ("\u1e00", "\u1eff"))
    foreign = sum(not any(a <= c.lower() <= b for a, b in latin) for c in letters)
    if letters and foreign > len(letters) / 2 and not _SAID_SCRIPT:
        _SAID_SCRIPT.append(True)
        log.warning(
            "%s is not in the Latin alphabet: the shipped models were trained on English questions and "
            "text, so answers in other languages are less sure to be right",
            which,
        )
    if (words := len(question.split())) > READ_WHOLE_WORDS:
        log.warning(
            "%s is %d words long: the models read a question of up to about %d words whole beside a "
            "passage; past that its end may be cut",
            which,
            words,
            READ_WHOLE_WORDS,
        )
