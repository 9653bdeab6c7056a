"""The pointwise cross-encoder: (question, candidate) → one relevance logit, on the steppable encoder."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from torch import Tensor, nn

from sieveqa.backbones import Backbone
from sieveqa.data.records import RankingExample
from sieveqa.encoder import pool
from sieveqa.models.base import flatten_pairs, regroup
from sieveqa.models.pair_model import PairModel, PairModelConfig


@dataclass
class CrossEncoderConfig(PairModelConfig):
    """Architecture of a cross-encoder ranker."""

    pooling: str = field(default="cls", metadata={"help": "'cls' or 'mean' token pooling before the head"})


class CrossEncoder(PairModel):
    """Scores each (question, candidate) pair jointly; the TANDA-style baseline ranker."""

    kind = "cross-encoder"
    config_class = CrossEncoderConfig
    config: CrossEncoderConfig

    def __init__(self, config: CrossEncoderConfig | None = None, backbone: Backbone | None = None) -> None:
        super().__init__(config or CrossEncoderConfig(), backbone)
        self.head = nn.Sequential(nn.Dropout(self.config.dropout), nn.Linear(self.encoder.hidden_size, 1))

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor | None = None
    ) -> Tensor:
        """Relevance logits, one per row."""
        hidden = self.encoder(input_ids, attention_mask, token_type_ids)
        return self.head(pool(hidden, attention_mask, self.config.pooling)).squeeze(-1)

    def score_pairs(
        self, questions: Sequence[str], texts: Sequence[str], progress: bool = False
    ) -> list[float]:
        """Score pairs in length-sorted batches under ``torch.inference_mode``; returns input order."""
        started = time.perf_counter()
        features = self.featurize(questions, texts)
        return self.run_batches(
            features, lambda model, batch: model(**batch), progress, started=started
        ).tolist()

    def score(self, examples: Sequence[RankingExample], progress: bool = False) -> list[list[float]]:
        return regroup(examples, self.score_pairs(*flatten_pairs(examples), progress=progress))
