"""sieveqa: answer sentence selection and open-domain QA with as little transformer compute as needed.

>>> from sieveqa import CrossEncoder, load_dataset, evaluate_scores
>>> ranker = CrossEncoder.from_pretrained("default")
>>> examples = load_dataset("wikiqa:test")
>>> evaluate_scores(examples, ranker.score(examples)).mean["map"]
"""

from sieveqa.backbones import load_backbone
from sieveqa.data import (
    Candidate,
    Question,
    RankingExample,
    ScoredCandidate,
    load_dataset,
    read_jsonl,
    write_jsonl,
)
from sieveqa.encoder import CostCounter, EncoderState, SteppableEncoder
from sieveqa.errors import (
    BackboneError,
    DataFormatError,
    DatasetNotFoundError,
    MissingExtraError,
    ModelFormatError,
    SieveQAError,
)
from sieveqa.evaluation import MetricReport, evaluate_ranked, evaluate_scores
from sieveqa.models import CrossEncoder, CrossEncoderConfig, Ranker
from sieveqa.training import TrainConfig, Trainer

__version__ = "0.1.0"

__all__ = [
    "BackboneError",
    "Candidate",
    "CostCounter",
    "CrossEncoder",
    "CrossEncoderConfig",
    "DataFormatError",
    "DatasetNotFoundError",
    "EncoderState",
    "MetricReport",
    "MissingExtraError",
    "ModelFormatError",
    "Question",
    "Ranker",
    "RankingExample",
    "ScoredCandidate",
    "SieveQAError",
    "SteppableEncoder",
    "TrainConfig",
    "Trainer",
    "evaluate_ranked",
    "evaluate_scores",
    "load_backbone",
    "load_dataset",
    "read_jsonl",
    "write_jsonl",
]
