"""The pointwise cross-encoder: (question, candidate) → one relevance logit, on the steppable encoder."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Self

import torch
from torch import Tensor

from sieveqa.backbones import Backbone
from sieveqa.encoder import Cost
from sieveqa.models import zoo
from sieveqa.models._saving import hf_config
from sieveqa.models.configs import CrossEncoderConfig
from sieveqa.models.foreign import read_foreign
from sieveqa.models.heads import ClassifierHead
from sieveqa.models.pair_model import PairModel


class CrossEncoder(PairModel):
    """Scores each (question, candidate) pair jointly; the TANDA-style baseline ranker."""

    kind = "cross-encoder"
    config_class = CrossEncoderConfig
    config: CrossEncoderConfig

    def __init__(self, config: CrossEncoderConfig | None = None, backbone: Backbone | None = None) -> None:
        super().__init__(config or CrossEncoderConfig(), backbone)
        cfg = self.config
        self.head = ClassifierHead(
            self.encoder.hidden_size,
            cfg.classifier_layers,
            cfg.pooling,
            cfg.dropout,
            cfg.classifier_activation,
        )
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

    @classmethod
    def from_pretrained(cls, path: str | Path) -> Self:
        """Load a sieveqa model folder, a shipped name, or a Hugging Face sequence classifier's folder
        (BERT, ELECTRA, RoBERTa, XLM-RoBERTa, MPNet: ``sieveqa.models.foreign``) with its own head."""
        folder = zoo.resolve_model(path)
        if hf_config(folder) is None:
            return super().from_pretrained(folder)
        found = read_foreign(folder)
        config = CrossEncoderConfig(**found.settings)
        model = cls(config, found.backbone)
        with torch.no_grad():
            model.head[1].load_state_dict(found.dense)
            model.head.output.load_state_dict(found.output)
        model.meta, model.path = {"config": asdict(config), "foreign": found.about}, folder
        return model.eval()
