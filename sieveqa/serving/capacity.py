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
from dataclasses import replace

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.models.base import Ranker
from sieveqa.runtime.policy import pair_model
from sieveqa.serving.settings import Limits

__all__ = ["SHARE", "fit_to_deadline", "full_length_rate"]

log = logging.getLogger("sieveqa.serving")

#: The share of the deadline a request of the most texts may take alone (the rest: the queue, the
#: tokenizing, a machine busier than at load).
SHARE = 0.6
#: Pairs in the timed call (enough to fill a batch, few enough to load in a second or two), and the
#: timed calls, the fastest of which counts.
_PAIRS, _TIMES = 32, 3


def full_length_rate(ranker: Ranker, pairs: int = _PAIRS) -> float | None:
    """Pairs a second ``ranker`` scores when every pair fills its model's ``max_length`` (the best of
    :data:`_TIMES` calls after an untimed one); None for a ranker without one pair model (an ensemble)."""
    model = pair_model(ranker)
    if model is None:
        return None
    words = " ".join(["word"] * model.config.max_length)  # a token a word at least: truncated
    example = RankingExample(
        Question("rate", "how fast does this machine rank?"),
        [Candidate(str(i), f"{i} {words}") for i in range(pairs)],
    )
    ranker.run([example])
    best = math.inf
    for _ in range(_TIMES):  # the best of a few: a busy moment at load must not cut the limit for good
        started = time.perf_counter()
        ranker.run([example])
        best = min(best, time.perf_counter() - started)
    return pairs / max(best, 1e-9)


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
