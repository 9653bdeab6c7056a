"""(question, positive, negative) triplets for the ranking hinge loss of the siamese models (HAS), and
the recipe that trains them."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from torch import Tensor

from sieveqa.batching import collate
from sieveqa.data.records import RankingExample
from sieveqa.errors import DataFormatError
from sieveqa.features import Features
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.models.hashing import HashingModel
from sieveqa.training.batches import Objective, TrainData
from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import TripletHinge
from sieveqa.training.options import TripletOptions
from sieveqa.training.recipe import Recipe


@dataclass
class TextTriplets:
    """Parallel lists of question, positive answer and negative answer texts."""

    questions: list[str]
    positives: list[str]
    negatives: list[str]

    def __len__(self) -> int:
        return len(self.questions)

    @property
    def summary(self) -> str:
        return f"{len(self)} triplets"


def make_triplets(
    examples: Sequence[RankingExample],
    negatives_per_positive: int = 4,
    max_triplets: int | None = None,
    seed: int = 0,
) -> TextTriplets:
    """Each positive with ``negatives_per_positive`` negatives of the same question drawn at random
    (all when fewer); questions without a labelled positive and negative give none. ``max_triplets``
    keeps a random subset of whole questions."""
    if negatives_per_positive < 1:
        raise ValueError(f"negatives_per_positive must be >= 1, got {negatives_per_positive}")
    rng = random.Random(seed)
    order = list(range(len(examples)))
    if max_triplets is not None:
        rng.shuffle(order)
    out = TextTriplets([], [], [])
    for i in order:
        ex = examples[i]
        pos = [c.text for c in ex.candidates if c.label == 1]
        neg = [c.text for c in ex.candidates if c.label == 0]
        if not pos or not neg:
            continue
        drawn = [rng.sample(neg, min(negatives_per_positive, len(neg))) for _ in pos]
        if max_triplets is not None and len(out) + sum(map(len, drawn)) > max_triplets and len(out):
            break
        for p, negs in zip(pos, drawn, strict=True):
            for n in negs:
                out.questions.append(ex.question.text)
                out.positives.append(p)
                out.negatives.append(n)
    return out


@dataclass
class TripletBatches:
    """Tokenized triplets the Trainer batches: ``q_*`` rows, and ``a_*`` rows holding the positives
    then the negatives (one encoder pass for both)."""

    questions: Features
    positives: Features
    negatives: Features
    pad_id: int = 0

    def __post_init__(self) -> None:
        sizes = {len(self.questions), len(self.positives), len(self.negatives)}
        if len(sizes) != 1:
            raise ValueError(f"triplet parts differ in length: {sorted(sizes)}")

    def __len__(self) -> int:
        return len(self.questions)

    @property
    def lengths(self) -> list[int]:
        return [max(p, n) for p, n in zip(self.positives.lengths, self.negatives.lengths, strict=True)]

    def batch(self, rows: Sequence[int]) -> dict[str, Tensor]:
        answers = Features(
            [self.positives.input_ids[i] for i in rows] + [self.negatives.input_ids[i] for i in rows],
            [self.positives.token_type_ids[i] for i in rows]
            + [self.negatives.token_type_ids[i] for i in rows],
            max_length=self.positives.max_length,
        )
        q = collate(self.questions, rows, self.pad_id, bucketed=True)
        a = collate(answers, range(len(answers)), self.pad_id, bucketed=True)
        return {f"q_{k}": v for k, v in q.items()} | {f"a_{k}": v for k, v in a.items()}


class TripletRecipe(Recipe):
    """(question, positive, negative) triplets; the hinge loss with HAS's binary constraint."""

    options_class = TripletOptions

    def sample(self, examples: Sequence[RankingExample], config: TrainConfig, source: str) -> TextTriplets:
        triplets = make_triplets(examples, self.options.negatives_per_positive, config.max_pairs, config.seed)
        if not len(triplets):
            raise DataFormatError(f"{source}: no question has both a positive and a negative answer")
        return triplets

    def tensors(self, model: EncoderModel, sample: TextTriplets) -> TrainData:
        assert isinstance(model, HashingModel)
        return TripletBatches(
            model.featurize_questions(sample.questions),
            model.featurize_answers(sample.positives),
            model.featurize_answers(sample.negatives),
            model.pad_id,
        )

    def objective(self, model: EncoderModel) -> Objective:
        return TripletHinge()
