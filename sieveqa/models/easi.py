"""EASI, extraction of the answer sentence in place (PEASI, section 2.2): one pass over
``[CLS] question [SEP] s1 [SEP] s2 ... [SEP] sk [SEP]`` scores every sentence of a passage.

Two selectors:

- ``slots`` (the paper): a classifier on the first token with one output per sentence position
  (``W ∈ R^{k×|E|}``); a passage with more than ``slots`` sentences is read ``slots`` sentences at
  a time.
- ``pooled``: each sentence's own tokens, mean-pooled, go through one shared linear layer; any number
  of sentences, and the score does not depend on where a sentence sits.

A passage longer than ``max_length`` is cut into overlapping token windows (``stride``), never
truncated silently; a sentence seen in several windows keeps its highest logit. A passage's
probabilities are the softmax of its sentences' logits.

With ``null``, the first token also scores "no sentence here answers" (SQuAD 2.0's null answer, for a
sentence): one more option in the passage's softmax, trained on questions the passage does not answer.
Its logit (a passage read in windows keeps its lowest) is :attr:`SentenceRead.nulls`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from sieveqa.backbones import Backbone
from sieveqa.data.passage_sets import group_passages
from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost, pool_segments
from sieveqa.features import Features, Featurizer
from sieveqa.models.base import Ranker, RankResult, SimilarityResult
from sieveqa.models.configs import SELECTORS, EasiConfig
from sieveqa.models.encoder_model import EncoderModel

__all__ = ["SELECTORS", "EasiConfig", "EasiModel", "SentenceRead", "SentenceReader", "in_passage"]

NEG = -1e4  # logit of a sentence position a row does not hold (finite: fp16/bf16 safe)


class SentenceSelector(nn.Sequential):
    """EASI's head: token states of a ``q [SEP] s1 [SEP] ...`` row → one logit per sentence (and,
    with ``null``, one more last: "none of them")."""

    def __init__(self, hidden: int, config: EasiConfig) -> None:
        width = config.slots if config.selector == "slots" else 1
        super().__init__(nn.Dropout(config.dropout), nn.Linear(hidden, width))
        self.selector, self.slots = config.selector, config.slots
        if config.null:
            self.add_module("null", nn.Linear(hidden, 1))

    def forward(self, hidden: Tensor, segment_ids: Tensor) -> Tensor:  # type: ignore[override]
        """Rows × sentence positions (+ the null, last), ``NEG`` where a row holds no such sentence."""
        dropout, linear = self[0], self[1]
        n = int(segment_ids.max().clamp(min=1).item())
        if self.selector == "slots":
            n = min(n, self.slots)
            logits = linear(dropout(hidden[:, 0]))[:, :n]
            present = (segment_ids.unsqueeze(-1) == torch.arange(1, n + 1, device=hidden.device)).any(dim=1)
        else:
            pooled, present = pool_segments(hidden, segment_ids, n)
            logits = linear(dropout(pooled)).squeeze(-1)
        logits = logits.float().masked_fill(~present, NEG)
        if hasattr(self, "null"):
            logits = torch.cat([logits, self.null(dropout(hidden[:, 0])).float()], dim=1)
        return logits


@dataclass
class SentenceRead:
    """What EASI read: each passage's sentence logits, its null logit (None without ``null``), the cost."""

    logits: list[list[float]]
    nulls: list[float] | None
    cost: Cost


class SentenceReader(ABC):
    """What reads a passage's sentences in place (EASI, PEASI's EASI side): ``read``, and the views
    of it the runtime takes."""

    @abstractmethod
    def read(
        self, questions: Sequence[str], passages: Sequence[Sequence[str]], progress: bool = False
    ) -> SentenceRead:
        """Each passage's sentence logits, its null logit (with ``null``), and the cost."""

    @property
    def has_null(self) -> bool:
        """Whether :meth:`read` gives each passage's null logit (``EasiConfig.null``)."""
        return bool(getattr(getattr(self, "config", None), "null", False))

    def sentence_logits(
        self, questions: Sequence[str], passages: Sequence[Sequence[str]], progress: bool = False
    ) -> tuple[list[list[float]], Cost]:
        """Each passage's sentence logits and the cost (:meth:`read` without the null)."""
        out = self.read(questions, passages, progress)
        return out.logits, out.cost

    def select(
        self, questions: Sequence[str], passages: Sequence[Sequence[str]], progress: bool = False
    ) -> tuple[list[list[float]], Cost]:
        """Each passage's sentence probabilities (softmax over the passage), and the cost."""
        logits, cost = self.sentence_logits(questions, passages, progress)
        return in_passage(logits), cost


@dataclass
class SegmentInputs:
    """Featurized (question, passage) rows with, per row, which passage and sentences it holds."""

    features: Features
    passage: list[int]  # input passage of each row
    first: list[int]  # index of the row's sentence 1 in its passage (a window may start later)
    sizes: list[int]  # sentences per input passage


class EasiModel(EncoderModel, Ranker, SentenceReader):
    """Scores the sentences of a passage in one pass (per window)."""

    kind = "easi"
    config_class = EasiConfig
    config: EasiConfig

    def __init__(self, config: EasiConfig | None = None, backbone: Backbone | None = None) -> None:
        super().__init__(config or EasiConfig(), backbone)
        self.head = SentenceSelector(self.encoder.hidden_size, self.config)
        self.eval()

    # -- inputs ----------------------------------------------------------------------------------

    def featurize(self, questions: Sequence[str], passages: Sequence[Sequence[str]]) -> SegmentInputs:
        """Rows for (question, sentences) pairs; segment ids restart at 1 in every row."""
        return featurize_segments(self.featurizer, self.config, questions, passages)

    # -- scoring ---------------------------------------------------------------------------------

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        token_type_ids: Tensor | None = None,
        segment_ids: Tensor | None = None,
        cost: Cost | None = None,
    ) -> Tensor:
        """Sentence logits per row (rows × positions), ``NEG`` where a row holds no such sentence."""
        assert segment_ids is not None
        hidden = self.encoder(input_ids, attention_mask, token_type_ids, cost=cost)
        return self.head(hidden, segment_ids)

    def read(
        self, questions: Sequence[str], passages: Sequence[Sequence[str]], progress: bool = False
    ) -> SentenceRead:
        """Each passage's sentence logits (how well each sentence answers, on one scale across
        passages), its null logit with ``null``, and the cost."""
        started = time.perf_counter()
        cost = Cost()
        inputs = self.featurize(questions, passages)
        with self.inference() as model:
            logits, nulls = read_windows(
                model, inputs, lambda batch: model(**batch, cost=cost), progress, cost
            )
        cost.seconds = time.perf_counter() - started
        return SentenceRead(logits, nulls, cost)

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        """Score each example's sentences in place, passage by passage (``passage_id`` groups them):
        a sentence's score is its probability within its passage."""
        groups = [(n, sents) for n, ex in enumerate(examples) for _, sents in group_passages(ex)]
        questions = [examples[n].question.text for n, _ in groups]
        probs, cost = self.select(questions, [[c.text for c in s] for _, s in groups], progress)
        by_id: list[dict[str, float]] = [{} for _ in examples]
        for (n, sents), p in zip(groups, probs, strict=True):
            by_id[n].update(zip((c.id for c in sents), p, strict=True))
        scores = [[s[c.id] for c in ex.candidates] for ex, s in zip(examples, by_id, strict=True)]
        return SimilarityResult(scores, cost)


def featurize_segments(
    featurizer: Featurizer, config: EasiConfig, questions: Sequence[str], passages: Sequence[Sequence[str]]
) -> SegmentInputs:
    """EASI rows: a slots selector reads at most ``slots`` sentences per row; a passage longer than
    ``max_length`` becomes overlapping windows; segment ids restart at 1 in every row."""
    limit = config.slots if config.selector == "slots" else None
    qs, parts, owner, offset = [], [], [], []
    for i, (q, sents) in enumerate(zip(questions, passages, strict=True)):
        step = limit or max(len(sents), 1)
        for lo in range(0, max(len(sents), 1), step):
            qs.append(q)
            parts.append(list(sents[lo : lo + step]))
            owner.append(i)
            offset.append(lo)
    feats = featurizer.segments(qs, parts, config.max_length, stride=config.window_stride)
    assert feats.segment_ids is not None
    first = []
    for r, segs in enumerate(feats.segment_ids):
        low = min((s for s in segs if s > 0), default=1)
        feats.segment_ids[r] = [s - low + 1 if s > 0 else s for s in segs]
        first.append(offset[feats.source[r]] + low - 1)
    return SegmentInputs(feats, [owner[s] for s in feats.source], first, [len(p) for p in passages])


def read_windows(
    model: EncoderModel,
    inputs: SegmentInputs,
    logits: Callable[[dict[str, Tensor]], Tensor],
    progress: bool = False,
    cost: Cost | None = None,
) -> tuple[list[list[float]], list[float] | None]:
    """Run ``logits`` over the rows' batches (metering into ``cost``): each passage's sentence logits,
    a sentence read in several windows keeping its highest, and with a ``null`` selector each passage's
    null logit (its lowest over the windows: a passage answers if any window of it does)."""
    null = bool(getattr(model.config, "null", False))
    best = [torch.full((max(n, 1),), NEG) for n in inputs.sizes]
    nulls = torch.full((len(inputs.sizes),), -NEG)
    for rows, batch in model.batches(inputs.features, progress, segments=True, cost=cost):
        out = logits(batch)[: len(rows)].float().cpu()
        if null:
            out, row_nulls = out[:, :-1], out[:, -1]
        for j, r in enumerate(rows):
            p, lo = inputs.passage[r], inputs.first[r]
            width = min(out.shape[1], len(best[p]) - lo)
            best[p][lo : lo + width] = torch.maximum(best[p][lo : lo + width], out[j, :width])
            if null:
                nulls[p] = torch.minimum(nulls[p], row_nulls[j])
    sentences = [b[:n].tolist() for b, n in zip(best, inputs.sizes, strict=True)]
    return sentences, nulls.tolist() if null else None


def in_passage(logits: Sequence[Sequence[float]]) -> list[list[float]]:
    """Each passage's sentence logits as probabilities (a softmax over the passage)."""
    return [torch.softmax(torch.tensor(z, dtype=torch.float32), dim=0).tolist() if z else [] for z in logits]
