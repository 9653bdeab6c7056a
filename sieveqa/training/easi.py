"""Training EASI (PEASI, section 4.3): passages that hold a correct answer, each a multi-class
problem over its sentences, with cross-entropy on the softmax over the passage's sentences (a passage
with several correct sentences counts the probability of all of them).

Passages come from any dataset whose sentence candidates carry a ``passage_id`` (a SQuAD-AS2
paragraph, a ``squad-passages`` passage, a WikiQA document); ``windows`` cuts them into sentence
windows of at most ``passage_tokens`` tokens: ``all`` starts a window at every sentence (the paper's
sliding window, so a correct sentence is seen at several positions), ``one`` keeps one such window
per passage at random, ``passage`` uses each passage as it is.

A question none of whose sentences is correct (SQuAD 2.0's unanswerable ones over their own paragraph,
``squad2-passages:own-sentences``) teaches a ``null`` selector its null option, in the same windows;
a selector without one skips those passages.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from sieveqa.batching import collate
from sieveqa.data.passage_sets import group_passages
from sieveqa.data.passages import count_tokens, pack_windows
from sieveqa.data.records import Question, RankingExample
from sieveqa.errors import DataFormatError
from sieveqa.evaluation.metrics import evaluate_scores
from sieveqa.features import Features
from sieveqa.models.easi import EasiModel
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.training.batches import FeatureRows, Objective, TrainData
from sieveqa.training.config import TrainConfig
from sieveqa.training.options import EasiOptions
from sieveqa.training.recipe import Recipe


@dataclass
class PassageSample:
    """(question, sentences, indices of the correct sentences) per training passage."""

    questions: list[str]
    passages: list[list[str]]
    targets: list[list[int]]

    def __len__(self) -> int:
        return len(self.questions)

    @property
    def summary(self) -> str:
        n = sum(len(p) for p in self.passages)
        unanswered = sum(not t for t in self.targets)
        return f"{len(self) - unanswered} passages with an answer, {unanswered} without ({n} sentences)"


def positive_passages(examples: Sequence[RankingExample], unanswered: bool = False) -> list[RankingExample]:
    """One example per passage that holds a correct sentence, its sentences as candidates; with
    ``unanswered``, the passages of questions with no correct sentence at all too."""
    return [
        RankingExample(Question(f"{ex.qid}@{pid}", ex.question.text), sents)
        for ex in examples
        for pid, sents in group_passages(ex)
        if any(c.label == 1 for c in sents) or (unanswered and not any(c.label == 1 for c in ex.candidates))
    ]


def make_passages(
    examples: Sequence[RankingExample], options: EasiOptions, max_examples: int | None, seed: int
) -> PassageSample:
    rng = random.Random(seed)
    out = PassageSample([], [], [])
    for ex in positive_passages(examples, unanswered=True):
        texts = [c.text for c in ex.candidates]
        labels = [c.label == 1 for c in ex.candidates]
        if options.windows == "passage":
            windows = [(0, len(texts))]
        else:
            windows = pack_windows(count_tokens(texts), options.passage_tokens, step=1)
            windows = [(lo, hi) for lo, hi in windows if any(labels[lo:hi]) or not any(labels)]
            if options.windows == "one":
                windows = [rng.choice(windows)]
        for lo, hi in windows:
            out.questions.append(ex.question.text)
            out.passages.append(texts[lo:hi])
            out.targets.append([i - lo for i in range(lo, hi) if labels[i]])
    order = list(range(len(out)))
    rng.shuffle(order)
    order = order[:max_examples]
    return PassageSample(
        *([column[i] for i in order] for column in (out.questions, out.passages, out.targets))
    )


@dataclass
class SegmentTensors(FeatureRows):
    """EASI rows with the positions of their correct sentences (none: the null option's row)."""

    targets: list[list[int]]
    pad_id: int = 0
    null: bool = False

    def batch(self, rows: Sequence[int]) -> dict[str, Tensor]:
        batch = collate(self.features, rows, self.pad_id, segments=True, bucketed=True)
        width = int(batch["segment_ids"].max().clamp(min=1).item())
        labels = torch.zeros((len(rows), width + self.null))  # the null is the selector's last column
        for j, r in enumerate(rows):
            labels[j, [t - 1 for t in self.targets[r]] or [-1]] = 1.0
        return {**batch, "labels": labels}


class InPlaceCE:
    """−log of the probability the passage's softmax gives its correct sentences."""

    def __call__(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        return self.loss(model(**inputs), batch["labels"])

    @staticmethod
    def loss(logits: Tensor, labels: Tensor) -> Tensor:
        """Mean over rows of ``logsumexp(all) - logsumexp(correct)``."""
        labels = labels[:, : logits.shape[1]].to(logits.device)
        positive = logits.masked_fill(labels == 0, float("-inf"))
        return (torch.logsumexp(logits, dim=1) - torch.logsumexp(positive, dim=1)).mean()


class EasiRecipe(Recipe):
    """EASI on the passages of a dataset that hold an answer; dev metrics rank sentences in place."""

    options_class = EasiOptions

    def sample(self, examples: Sequence[RankingExample], config: TrainConfig, source: str) -> PassageSample:
        sample = make_passages(examples, self.options, config.max_pairs, config.seed)
        if not any(sample.targets):
            raise DataFormatError(f"{source}: no passage holds a sentence labelled correct (1)")
        return sample

    def tensors(self, model: EncoderModel, sample: PassageSample) -> TrainData:
        assert isinstance(model, EasiModel)
        inputs = model.featurize(sample.questions, sample.passages)
        assert inputs.features.segment_ids is not None
        null = model.config.null
        keep, targets = [], []
        for r, segs in enumerate(inputs.features.segment_ids):
            p, lo = inputs.passage[r], inputs.first[r]
            present = set(segs)
            rel = [t - lo + 1 for t in sample.targets[p] if t - lo + 1 in present]
            # A window cut from an answer's passage without it teaches nothing here; a passage of an
            # unanswered question teaches the null option.
            if rel or (null and not sample.targets[p]):
                keep.append(r)
                targets.append(rel)
        f = inputs.features
        assert f.segment_ids is not None
        rows = Features(
            [f.input_ids[r] for r in keep],
            [f.token_type_ids[r] for r in keep],
            segment_ids=[f.segment_ids[r] for r in keep],
            max_length=f.max_length,
        )
        return SegmentTensors(rows, targets, model.pad_id, null)

    def objective(self, model: EncoderModel) -> Objective:
        return InPlaceCE()

    def evaluate(self, model: EncoderModel, dev: Sequence[RankingExample]) -> dict[str, float]:
        """Sentences ranked inside each passage that holds an answer (p@1 is EASI's accuracy)."""
        assert isinstance(model, EasiModel)
        passages = positive_passages(dev)
        return evaluate_scores(passages, model.score(passages)).mean
