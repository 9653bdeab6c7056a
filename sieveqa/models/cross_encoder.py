"""The pointwise cross-encoder: (question, candidate) → one relevance logit, on the steppable encoder."""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor

from sieveqa.backbones import Backbone
from sieveqa.encoder import Cost
from sieveqa.models.encoder_model import ModelConfig
from sieveqa.models.heads import ClassifierHead
from sieveqa.models.pair_model import PairModel


@dataclass
class CrossEncoderConfig(ModelConfig):
    """Architecture of a cross-encoder ranker."""

    pooling: str = field(default="cls", metadata={"help": "head input: 'cls' token or 'mean' of tokens"})


class CrossEncoder(PairModel):
    """Scores each (question, candidate) pair jointly; the TANDA-style baseline ranker."""

    kind = "cross-encoder"
    config_class = CrossEncoderConfig
    config: CrossEncoderConfig

    def __init__(self, config: CrossEncoderConfig | None = None, backbone: Backbone | None = None) -> None:
        super().__init__(config or CrossEncoderConfig(), backbone)
        self.head = ClassifierHead(self.encoder.hidden_size, 1, self.config.pooling, self.config.dropout)
        self.eval()

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        token_type_ids: Tensor | None = None,
        cost: Cost | None = None,
    ) -> Tensor:
        """Relevance logits, one per row."""
        hidden = self.encoder(input_ids, attention_mask, token_type_ids, cost=cost)
        return self.head(hidden, attention_mask)

    def batch_logits(self, batch: dict[str, Tensor], cost: Cost, last_only: bool) -> Tensor:
        return self(**batch, cost=cost).unsqueeze(1)
