"""Training the anytime reader (adaptive computation for ODQA, section 3.1): every exit learns the
span and the has-answer label at once, the loss summed over exits (the per-layer loss of Schwartz et
al., 2020); then per-exit temperature calibration of the has-answer head on held-out questions.

A training row is a (question, passage) window from a question's top retrieved passages. Its
has-answer label is 1 when a gold answer string lies wholly inside the window; the span loss of such
a row marginalises over every occurrence of every gold answer in it (the passages are retrieved, not
annotated, so any occurrence may be the one meant).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.functional import binary_cross_entropy_with_logits
from tqdm.auto import tqdm

from sieveqa.batching import collate
from sieveqa.data.open_qa import OpenExample, answer_spans
from sieveqa.data.registry import load_open_datasets
from sieveqa.errors import DataFormatError
from sieveqa.evaluation.odqa import evaluate_reader
from sieveqa.features import Features
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.models.reader import NEG, ReaderModel
from sieveqa.training.batches import FeatureRows, Objective, TrainData
from sieveqa.training.config import TrainConfig
from sieveqa.training.options import ReaderOptions
from sieveqa.training.recipe import Recipe

Span = tuple[int, int]

#: Passages tokenized at a time when training rows are built: their lists and offsets (about 70 MB for
#: 4,096 SQuAD passages) are all that is held beside the compact rows (a bar shows the tokenizing on a
#: terminal).
TOKENIZE_CHUNK = 4096


@dataclass
class ReaderSample:
    """(question, passage, answer character spans) per training passage."""

    questions: list[str]
    texts: list[str]
    spans: list[list[Span]]

    def __len__(self) -> int:
        return len(self.questions)

    @property
    def summary(self) -> str:
        return f"{len(self)} passages ({sum(1 for s in self.spans if s)} with an answer)"


def make_sample(
    examples: Sequence[OpenExample], passages: int, max_negatives: int | None, max_rows: int | None, seed: int
) -> ReaderSample:
    """The top ``passages`` of each question with its answer spans; at most ``max_negatives`` passages
    without an answer per question (drawn at random; an ``impossible`` question keeps its best
    retrieved ones, the passages that most look as though they answer it); at most ``max_rows`` rows,
    whole questions sampled."""
    rng = random.Random(seed)
    order = list(range(len(examples)))
    rng.shuffle(order)
    out = ReaderSample([], [], [])
    for i in order:
        ex = examples[i]
        rows = [(p.text, answer_spans(p.text, ex.answers)) for p in ex.passages[:passages]]
        negatives = [r for r in rows if not r[1]]
        if max_negatives is not None and len(negatives) > max_negatives:
            chosen = negatives[:max_negatives] if ex.impossible else rng.sample(negatives, max_negatives)
            keep = set(map(id, chosen))
            rows = [r for r in rows if r[1] or id(r) in keep]
        if max_rows is not None and len(out) + len(rows) > max_rows:
            break
        for text, spans in rows:
            out.questions.append(ex.question)
            out.texts.append(text)
            out.spans.append(spans)
    return out


def token_targets(
    segments: Sequence[int], offsets: Sequence[Span], spans: Sequence[Span]
) -> tuple[list[int], list[int]]:
    """Token positions where the answers of ``spans`` start and end, for the spans wholly inside this
    row's passage tokens (segment 1)."""
    starts, ends = [], []
    for s, e in spans:
        first = next((k for k, (a, b) in enumerate(offsets) if segments[k] == 1 and a <= s < b), None)
        last = next((k for k, (a, b) in enumerate(offsets) if segments[k] == 1 and a < e <= b), None)
        if first is not None and last is not None and first <= last:
            starts.append(first)
            ends.append(last)
    return starts, ends


@dataclass
class ReaderTensors(FeatureRows):
    """Reader rows with their answers' start and end token positions (empty: no answer)."""

    starts: list[list[int]]
    ends: list[list[int]]
    pad_id: int = 0

    def batch(self, rows: Sequence[int]) -> dict[str, Tensor]:
        batch = collate(self.features, rows, self.pad_id, segments=True, bucketed=True)
        width = batch["input_ids"].shape[1]
        starts = torch.zeros((len(rows), width), dtype=torch.bool)
        ends = torch.zeros((len(rows), width), dtype=torch.bool)
        for j, r in enumerate(rows):
            starts[j, self.starts[r]] = True
            ends[j, self.ends[r]] = True
        return {**batch, "starts": starts, "ends": ends}


@dataclass(frozen=True)
class ReaderLoss:
    """Per exit: binary cross-entropy of the has-answer head on every row, plus −log of the
    probability of the answers' starts and of their ends on rows with an answer. The exits' losses
    are averaged with weights falling linearly from ``early_weight`` (first exit) to 1 (last), as
    early-exit training that favours early exits does; ``exit_distill`` adds, for every exit but the
    last, its divergence from the last exit's predictions (has-answer probability, start and end
    distributions; the last exit as a fixed teacher), on every row, answerless ones included."""

    early_weight: float = 1.0
    exit_distill: float = 0.0

    def __call__(self, model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
        context = batch["segment_ids"] == 1
        starts, ends = batch["starts"], batch["ends"]
        inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
        has, start, end = model(**inputs)
        label = starts.any(dim=1)
        target = label.float().expand_as(has)
        per_exit = binary_cross_entropy_with_logits(has.float(), target, reduction="none").mean(-1)
        if bool(label.any()):
            per_exit = per_exit + _marginal_nll(start[:, label], starts[label], context[label])
            per_exit = per_exit + _marginal_nll(end[:, label], ends[label], context[label])
        weights = exit_weights(len(per_exit), self.early_weight, per_exit.device)
        loss = (weights * per_exit).sum()
        if self.exit_distill > 0 and len(per_exit) > 1:
            loss = loss + self.exit_distill * _distill(has, start, end, context)
        return loss


def exit_weights(exits: int, early_weight: float, device: torch.device | None = None) -> Tensor:
    """Weights of the exits' losses, summing to 1: linear from ``early_weight`` (first) to 1 (last)."""
    raw = (
        torch.linspace(early_weight, 1.0, exits, device=device) if exits > 1 else torch.ones(1, device=device)
    )
    return raw / raw.sum()


def _marginal_nll(logits: Tensor, targets: Tensor, context: Tensor) -> Tensor:
    """Per exit: −log of the probability of the target positions, mean over rows."""
    logits = logits.float().masked_fill(~context, NEG)
    positive = logits.masked_fill(~targets, float("-inf"))
    return (logits.logsumexp(-1) - positive.logsumexp(-1)).mean(-1)


def _distill(has: Tensor, start: Tensor, end: Tensor, context: Tensor) -> Tensor:
    """Mean over the exits but the last of: BCE of the has-answer logit against the last exit's
    probability, and KL(last ‖ exit) of the start and of the end distributions over the passage."""
    teacher_has = torch.sigmoid(has[-1].float()).detach()
    loss = binary_cross_entropy_with_logits(has[:-1].float(), teacher_has.expand_as(has[:-1]))
    for logits in (start, end):
        masked = logits.float().masked_fill(~context, NEG)
        teacher = masked[-1].log_softmax(-1).detach()
        student = masked[:-1].log_softmax(-1)
        kl = (teacher.exp() * (teacher - student)).masked_fill(~context, 0.0).sum(-1)
        loss = loss + kl.mean()
    return loss


class ReaderRecipe(Recipe):
    """The anytime reader on open-domain QA data (``squad-open-mini:train``); dev: EM and F1 of the
    answer read from the top passages, after every exit (``em@L``)."""

    options_class = ReaderOptions
    default_metric = "em"

    def load(self, names: str | list[str]) -> list[OpenExample]:
        return load_open_datasets(names)

    def check_dev(self, examples: Sequence[OpenExample], name: str) -> None:
        if not any(ex.answers for ex in examples):
            raise DataFormatError(f"{name}: no question has gold answers to evaluate against")

    def sample(self, examples: Sequence[OpenExample], config: TrainConfig, source: str) -> ReaderSample:
        sample = make_sample(
            examples, self.options.passages, config.max_negatives, config.max_pairs, config.seed
        )
        if not any(sample.spans):
            raise DataFormatError(
                f"{source}: no retrieved passage holds a gold answer; nothing to learn from"
            )
        return sample

    def tensors(self, model: EncoderModel, sample: ReaderSample) -> TrainData:
        """Rows tokenized ``TOKENIZE_CHUNK`` passages at a time, each chunk's answer positions found,
        then its rows kept compact (:meth:`Features.compact`): besides the compact rows, only one
        chunk's lists and character offsets are held at a time."""
        assert isinstance(model, ReaderModel)
        if len(sample) == 0:
            raise DataFormatError("no training examples")
        parts: list[tuple[int, Features]] = []
        starts: list[list[int]] = []
        ends: list[list[int]] = []
        with tqdm(total=len(sample), desc="tokenizing", unit="passage", leave=False, disable=None) as bar:
            for lo in range(0, len(sample), TOKENIZE_CHUNK):
                hi = min(lo + TOKENIZE_CHUNK, len(sample))
                features = model.featurize(sample.questions[lo:hi], sample.texts[lo:hi])
                assert features.segment_ids is not None and features.offsets is not None
                for r in range(len(features)):
                    s, e = token_targets(
                        features.segment_ids[r], features.offsets[r], sample.spans[lo + features.source[r]]
                    )
                    starts.append(s)
                    ends.append(e)
                parts.append((lo, features.compact()))
                del features  # before the next chunk is made
                bar.update(hi - lo)
        return ReaderTensors(Features.concat(parts), starts, ends, model.pad_id)

    def objective(self, model: EncoderModel) -> Objective:
        return ReaderLoss(self.options.early_weight, self.options.exit_distill)

    def evaluate(self, model: EncoderModel, dev: Sequence[OpenExample]) -> dict[str, float]:
        assert isinstance(model, ReaderModel)
        return evaluate_reader(model, dev, self.options.dev_passages)

    def metric_names(self, model: EncoderModel) -> list[str]:
        assert isinstance(model, ReaderModel)
        # has_auc: the has-answer AUROC, given by a dev set that holds unanswerable questions
        return ["em", "f1", "has_auc", *(f"em@{layer}" for layer in model.exits)]
