"""What one request may hold, from what this machine ranks inside the deadline.

A request over what the model ranks before ``--timeout-s`` would run to its deadline and fail (a
client that retries sends it whole again), so ``sieveqa serve`` measures at load how many pairs a
second the ranker scores when every text fills the model's input (a RAG client's passages do), and
lowers the texts a request may hold to what fits in :data:`SHARE` of the deadline. A request within
the limits then finishes, alone on the machine; one above is refused at once (413), saying why.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import replace

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.models.base import Ranker
from sieveqa.models.pair_model import PairModel
from sieveqa.runtime.policy import pair_model
from sieveqa.serving.settings import Limits

__all__ = ["SHARE", "fit_to_deadline", "full_length_rate", "over_capacity", "rows_of"]

log = logging.getLogger("sieveqa.serving")

#: The share of the deadline a request of the most texts may take alone (the rest: the queue, the
#: tokenizing, a machine busier than at load).
SHARE = 0.6
#: Pairs in the timed call (enough to fill a batch, few enough to load in a second or two), and the
#: timed calls, the fastest of which counts.
_PAIRS, _TIMES = 32, 3


def full_length_rate(ranker: Ranker, pairs: int = _PAIRS) -> float | None:
    """Inputs a second ``ranker`` scores when every pair fills its model's ``max_length`` (the best of
    :data:`_TIMES` calls after an untimed one; a model reading long texts in windows reads each of
    these in two); None for a ranker without one pair model (an ensemble)."""
    model = pair_model(ranker)
    if model is None:
        return None
    words = " ".join(["word"] * model.config.max_length)  # a token a word at least: truncated
    example = RankingExample(
        Question("rate", "how fast does this machine rank?"),
        [Candidate(str(i), f"{i} {words}") for i in range(pairs)],
    )
    rows = max(ranker.run([example]).cost.sequences, pairs)
    best = math.inf
    for _ in range(_TIMES):  # the best of a few: a busy moment at load must not cut the limit for good
        started = time.perf_counter()
        ranker.run([example])
        best = min(best, time.perf_counter() - started)
    return rows / max(best, 1e-9)


def rows_of(query: str, texts: Sequence[str], model: PairModel | None) -> int:
    """The inputs ranking ``texts`` takes, estimated before tokenizing (four characters a token): one
    a text, or where ``model`` reads long texts in windows, one a window."""
    if model is None or not model.windows:
        return len(texts)
    size = model.config.max_length
    room = max(size - len(query) // 4 - 4, 2)  # a window's share for the text, beside the question
    step = max(room - size // 4, 1)  # windows overlap by a quarter of max_length
    return sum(1 + max(0, math.ceil((len(t) // 4 + 1 - room) / step)) for t in texts)


def over_capacity(
    field_name: str, query: str, texts: Sequence[str], model: PairModel | None, max_inputs: int
) -> str | None:
    """Why a request of ``texts`` is refused (413), or None: more than ``max_inputs`` (``max_texts``,
    fitted to the deadline) texts, or with long texts read in windows, more windows than that."""
    rows = rows_of(query, texts, model)
    if rows <= max_inputs:
        return None
    if rows == len(texts):
        return (
            f"{field_name}: {len(texts)} texts, more than the {max_inputs} allowed (what this server ranks "
            "within its deadline; send them in several requests)"
        )
    assert model is not None  # only a model reading windows counts more inputs than texts
    return (
        f"{field_name}: {len(texts)} texts read whole as about {rows} windows of "
        f"{model.config.max_length} tokens, more than the {max_inputs} this server ranks within its "
        "deadline; send fewer or shorter texts, or start serve with --long-texts cut to read only their "
        "first tokens"
    )


def fit_to_deadline(limits: Limits, rate: float | None) -> Limits:
    """``limits`` with ``max_texts`` lowered to what ``rate`` ranks in :data:`SHARE` of ``timeout_s``
    (never raised; unchanged without a rate)."""
    if rate is None or not math.isfinite(rate):
        return limits
    fits = max(1, math.floor(rate * limits.timeout_s * SHARE))
    if fits >= limits.max_texts:
        log.info("texts per request: %d (%.0f pairs/s at full length)", limits.max_texts, rate)
        return limits
    log.warning(
        "texts per request lowered from %d to %d: this machine ranks %.0f pairs/s at full length, "
        "%d in %.0f%% of the %g s deadline (--timeout-s raises it)",
        limits.max_texts,
        fits,
        rate,
        fits,
        SHARE * 100,
        limits.timeout_s,
    )
    return replace(limits, max_texts=fits)
