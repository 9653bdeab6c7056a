"""sieveqa: answer sentence selection and open-domain QA with as little transformer compute as needed.

    >>> from sieveqa import load_ranker, load_dataset, evaluate_scores
    >>> ranker = load_ranker("default-cascade")        # its tuned drop ratios applied
    >>> examples = load_dataset("wikiqa:test")
    >>> evaluate_scores(examples, ranker.score(examples)).mean["map"]

Names are imported on first use, so ``import sieveqa`` (and ``sieveqa --help``) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieveqa.lazy import lazy_getattr

__version__ = "0.1.0"

_EXPORTS = {
    "load_backbone": "sieveqa.backbones",
    "Candidate": "sieveqa.data",
    "CorpusIndex": "sieveqa.data",
    "CorpusOptions": "sieveqa.data",
    "Document": "sieveqa.data",
    "read_documents": "sieveqa.data",
    "Question": "sieveqa.data",
    "RankingExample": "sieveqa.data",
    "ScoredCandidate": "sieveqa.data",
    "load_dataset": "sieveqa.data",
    "read_jsonl": "sieveqa.data",
    "write_jsonl": "sieveqa.data",
    "Cost": "sieveqa.encoder",
    "EncoderState": "sieveqa.encoder",
    "SteppableEncoder": "sieveqa.encoder",
    "pool_segments": "sieveqa.encoder",
    "Features": "sieveqa.features",
    "Featurizer": "sieveqa.features",
    "BackboneError": "sieveqa.errors",
    "BusyError": "sieveqa.errors",
    "ConfigError": "sieveqa.errors",
    "DataFormatError": "sieveqa.errors",
    "DeviceError": "sieveqa.errors",
    "DatasetNotFoundError": "sieveqa.errors",
    "MissingExtraError": "sieveqa.errors",
    "ModelFormatError": "sieveqa.errors",
    "SieveQAError": "sieveqa.errors",
    "StoreError": "sieveqa.errors",
    "AnswerReport": "sieveqa.evaluation",
    "evaluate_answers": "sieveqa.evaluation",
    "MetricReport": "sieveqa.evaluation",
    "evaluate_ranked": "sieveqa.evaluation",
    "evaluate_ranker": "sieveqa.evaluation",
    "evaluate_scores": "sieveqa.evaluation",
    "CascadeConfig": "sieveqa.models",
    "CascadeTransformer": "sieveqa.models",
    "ClassifierHead": "sieveqa.models",
    "CrossEncoder": "sieveqa.models",
    "CrossEncoderConfig": "sieveqa.models",
    "EasiConfig": "sieveqa.models",
    "EasiModel": "sieveqa.models",
    "EncoderModel": "sieveqa.models",
    "PeasiConfig": "sieveqa.models",
    "PeasiModel": "sieveqa.models",
    "SentenceEmbedder": "sieveqa.models",
    "HashingConfig": "sieveqa.models",
    "HashingModel": "sieveqa.models",
    "RankResult": "sieveqa.models",
    "Ranker": "sieveqa.models",
    "load_model": "sieveqa.models",
    "Answer": "sieveqa.runtime",
    "Answerer": "sieveqa.runtime",
    "answer": "sieveqa.runtime.answer.answerer",
    "load_answerer": "sieveqa.runtime",
    "AnswerStore": "sieveqa.runtime",
    "CascadePolicy": "sieveqa.runtime",
    "CascadeRanker": "sieveqa.runtime",
    "EnsembleRanker": "sieveqa.runtime",
    "SequentialRanker": "sieveqa.runtime",
    "StoreRanker": "sieveqa.runtime",
    "SearchSettings": "sieveqa.runtime",
    "StoreHit": "sieveqa.runtime",
    "load_ranker": "sieveqa.runtime",
    "TrainConfig": "sieveqa.training",
    "Trainer": "sieveqa.training",
    "train_model": "sieveqa.training",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr("sieveqa", _EXPORTS)


if TYPE_CHECKING:
    from sieveqa.backbones import load_backbone
    from sieveqa.data import (
        Candidate,
        CorpusIndex,
        CorpusOptions,
        Document,
        Question,
        RankingExample,
        ScoredCandidate,
        load_dataset,
        read_documents,
        read_jsonl,
        write_jsonl,
    )
    from sieveqa.encoder import Cost, EncoderState, SteppableEncoder, pool_segments
    from sieveqa.errors import (
        BackboneError,
        BusyError,
        ConfigError,
        DataFormatError,
        DatasetNotFoundError,
        DeviceError,
        MissingExtraError,
        ModelFormatError,
        SieveQAError,
        StoreError,
    )
    from sieveqa.evaluation import (
        AnswerReport,
        MetricReport,
        evaluate_answers,
        evaluate_ranked,
        evaluate_ranker,
        evaluate_scores,
    )
    from sieveqa.features import Features, Featurizer
    from sieveqa.models import (
        CascadeConfig,
        CascadeTransformer,
        ClassifierHead,
        CrossEncoder,
        CrossEncoderConfig,
        EasiConfig,
        EasiModel,
        EncoderModel,
        HashingConfig,
        HashingModel,
        PeasiConfig,
        PeasiModel,
        Ranker,
        RankResult,
        SentenceEmbedder,
        load_model,
    )
    from sieveqa.runtime import (
        Answer,
        Answerer,
        AnswerStore,
        CascadePolicy,
        CascadeRanker,
        EnsembleRanker,
        SearchSettings,
        SequentialRanker,
        StoreHit,
        StoreRanker,
        load_answerer,
        load_ranker,
    )
    from sieveqa.runtime.answer.answerer import answer
    from sieveqa.training import TrainConfig, Trainer, train_model
