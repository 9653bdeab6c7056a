"""The narrow contract every ranker fulfils: ``run`` questions and get scores plus what they cost."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sieveqa.data.records import RankingExample, ScoredCandidate, score_order
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.models.familiar import CrossEncoderStyle


def flatten_pairs(examples: Sequence[RankingExample]) -> tuple[list[str], list[str]]:
    """Question text and candidate text of every candidate, in example order."""
    questions = [ex.question.text for ex in examples for _ in ex.candidates]
    return questions, [c.text for ex in examples for c in ex.candidates]


def regroup(examples: Sequence[RankingExample], flat: Sequence[float]) -> list[list[float]]:
    """Cut one score per candidate, in example order, back into one list per example."""
    out, start = [], 0
    for ex in examples:
        out.append(list(flat[start : start + len(ex.candidates)]))
        start += len(ex.candidates)
    if start != len(flat):
        raise ValueError(f"{len(flat)} scores for {start} candidates")
    return out


@dataclass
class RankResult:
    """What one ``Ranker.run`` call produced: a score per candidate, and what the call cost.

    ``orders`` is the ranking (by score unless a ranker decides otherwise, as a cascade does);
    ``variants`` are other rankings the same run implies (a cascade stopped at each exit), and
    ``info`` what else a report should show (relative cost, survivors per exit, ...).
    """

    scores: list[list[float]]
    cost: Cost = field(default_factory=Cost)
    #: Whether scores are logits (a probability is their sigmoid), as a cross-encoder's are.
    logits: ClassVar[bool] = True
    #: Whether ``own_scores`` are logits: what ``predict`` and ``rank --scores prob`` turn into
    #: probabilities (a cascade's are, though the scores it sorts by are not).
    own_logits: ClassVar[bool] = True

    @property
    def n_pairs(self) -> int:
        return sum(len(s) for s in self.scores)

    @property
    def pairs_per_second(self) -> float:
        return self.n_pairs / self.cost.seconds if self.cost.seconds > 0 else 0.0

    def orders(self) -> list[list[int]]:
        return [score_order(s) for s in self.scores]

    def own_scores(self) -> list[list[float]]:
        """Each candidate's score from the model that last scored it, on that model's scale (a logit
        for a cross-encoder): what a confidence calibrates. The same as ``scores`` unless those were
        made only to sort (a cascade's)."""
        return self.scores

    def variants(self) -> dict[str, list[list[int]]]:
        return {}

    def info(self) -> dict[str, Any]:
        return {}


@dataclass
class SimilarityResult(RankResult):
    """A ``RankResult`` whose scores are similarities or probabilities already, not logits (a
    cosine, EASI's probabilities within a passage): ``predict`` and the service leave them as they are."""

    logits: ClassVar[bool] = False
    own_logits: ClassVar[bool] = False


class Ranker(CrossEncoderStyle, ABC):
    """Anything that scores (question, candidate) pairs; higher scores rank first.

    Implementations keep no per-call state, so one ranker can serve several threads at once.
    """

    #: What a single request may change (a cascade's ``alpha`` and ``budget``): see ``with_settings``.
    request_settings: ClassVar[tuple[str, ...]] = ()

    def with_settings(self, **settings: Any) -> Ranker:
        """This ranker with one request's settings applied (names from ``request_settings``; None
        leaves a setting as it is). The one hook through which a server changes a ranker per
        request, so serving knows no technique class."""
        given = sorted(k for k, v in settings.items() if v is not None and k not in self.request_settings)
        if given:
            takes = (
                f"takes only {', '.join(self.request_settings)} per request"
                if self.request_settings
                else "takes no per-request settings"
            )
            alpha = "drop_ratios" in given and "alpha" in self.request_settings
            hint = " (a request's drop ratios are its alpha)" if alpha else ""
            raise ConfigError(f"{', '.join(given)}: {type(self).__name__} {takes}{hint}")
        return self

    @abstractmethod
    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        """Score every candidate of every example; the result says what it cost."""

    def score(self, examples: Sequence[RankingExample], progress: bool = False) -> list[list[float]]:
        """One score per candidate, per example."""
        return self.run(examples, progress).scores

    def rank_examples(
        self, examples: Sequence[RankingExample], progress: bool = False
    ) -> list[list[ScoredCandidate]]:
        """Candidates of each example best first, with the model's own scores (a cross-encoder's logits;
        ``predict``/``rank`` give probabilities) and 1-based ranks."""
        return ranked(examples, self.run(examples, progress))


def ranked(examples: Sequence[RankingExample], result: RankResult) -> list[list[ScoredCandidate]]:
    """The candidates of each example in ``result``'s order, with scores and ranks."""
    return [
        [ScoredCandidate(ex.candidates[i], float(scores[i]), r + 1) for r, i in enumerate(order)]
        for ex, scores, order in zip(examples, result.scores, result.orders(), strict=True)
    ]


#: The scale of a ranking's scores where it is neither the model's logit nor its probability.
FUSED, SIMILARITY = "fused", "similarity"


def on_scale(
    examples: Sequence[RankingExample], result: RankResult, wanted: str = "logit"
) -> tuple[str, list[list[ScoredCandidate]]]:
    """The candidates of each question in ``result``'s order, each with its own model's score (as
    Python's ``rank`` gives them) on the ``wanted`` scale (``logit`` or ``prob``), and the scale they
    are on: ``fused`` where the first stage's scores were fused in (the fused score), ``similarity``
    for a ranker without logits (an answer store)."""
    if hasattr(result, "fusion"):  # a FusedResult: the order is the fused scores'
        return FUSED, ranked(examples, result)
    if not result.own_logits:
        wanted = SIMILARITY
    own = result.own_scores()
    if wanted == "prob":
        import torch

        own = [torch.tensor(s, dtype=torch.float64).sigmoid().tolist() for s in own]
    return wanted, [
        [ScoredCandidate(ex.candidates[i], float(scores[i]), r + 1) for r, i in enumerate(order)]
        for ex, scores, order in zip(examples, own, result.orders(), strict=True)
    ]
