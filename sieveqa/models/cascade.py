"""The Cascade Transformer (Soldaini & Moschitti, 2020): one encoder, a classifier after chosen layers.

Exit ``i`` scores a pair from the hidden states after layer ``exits[i]``. At question time
(``sieveqa.runtime.cascade``) each exit drops a fixed share of a question's remaining candidates, so
later layers run on fewer rows. This module holds the model only: its exit heads and the all-exits
forward pass used in training; the drop ratios are a runtime policy saved beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Self

import torch
from torch import Tensor, nn

from sieveqa.backbones import Backbone
from sieveqa.encoder import Cost, check_exits
from sieveqa.models.configs import CascadeConfig
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.encoder_model import EncoderModel, ModelConfig
from sieveqa.models.heads import ClassifierHead
from sieveqa.models.pair_model import PairModel


def default_exits(num_layers: int) -> list[int]:
    """The paper's placement scaled to depth: five exits evenly from layer n/3 to n (fewer if shallow).

    12 layers → 4, 6, 8, 10, 12 (the paper's ρ); 6 layers → 2, 3, 4, 5, 6; 4 layers → 1, 2, 3, 4.
    """
    first = num_layers / 3
    points = (first + k * (num_layers - first) / 4 for k in range(5))
    return sorted({max(1, int(p + 0.5)) for p in points})


class CascadeTransformer(PairModel):
    """A cross-encoder with a classifier after each layer in ``exits``."""

    kind = "cascade"
    config_class = CascadeConfig
    config: CascadeConfig

    def __init__(self, config: CascadeConfig | None = None, backbone: Backbone | None = None) -> None:
        # A copy: the caller's config object is not changed by filling in defaults.
        super().__init__(replace(config) if config else CascadeConfig(), backbone)
        cfg, depth = self.config, self.encoder.num_layers
        cfg.exits = list(cfg.exits) if cfg.exits else default_exits(depth)
        check_exits(cfg.exits, depth)
        hidden, last = self.encoder.hidden_size, len(cfg.exits) - 1
        self.heads = nn.ModuleList(
            ClassifierHead(
                hidden,
                cfg.final_head_layers if i == last and cfg.final_head_layers else cfg.head_layers,
                cfg.final_pooling if i == last and cfg.final_pooling else cfg.pooling,
                cfg.dropout,
                cfg.final_head_activation if i == last else "tanh",
            )
            for i in range(len(cfg.exits))
        )
        self.body_frozen = False
        self.eval()

    def freeze_body(self) -> None:
        """Train only the exits before the last: the encoder and last head stay fixed, in eval mode
        (no dropout), so the last exit keeps scoring exactly as before (retrofit)."""
        for param in [*self.encoder.parameters(), *self.heads[-1].parameters()]:
            param.requires_grad_(False)
        self.body_frozen = True
        self.train(self.training)

    def train(self, mode: bool = True) -> Self:
        super().train(mode)
        if self.body_frozen:
            self.encoder.eval()
            self.heads[-1].eval()
        return self

    @property
    def exits(self) -> list[int]:
        assert self.config.exits is not None
        return self.config.exits

    @property
    def n_scores(self) -> int:
        return len(self.exits)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        token_type_ids: Tensor | None = None,
        exits: Sequence[int] | None = None,
        cost: Cost | None = None,
    ) -> Tensor:
        """Logits of the exits with the given indices (all by default): rows × len(exits).

        Layers run only as deep as the deepest exit asked for.
        """
        order = list(range(len(self.exits))) if exits is None else list(exits)
        wanted = sorted(set(order))
        states = self.encoder.through(
            input_ids, attention_mask, token_type_ids, [self.exits[i] for i in wanted], cost
        )
        out = {
            i: self.heads[i](hidden, attention_mask) for i, (_, hidden) in zip(wanted, states, strict=True)
        }
        return torch.stack([out[i] for i in order], dim=1)

    def batch_logits(self, batch: dict[str, Tensor], cost: Cost, last_only: bool) -> Tensor:
        return self(**batch, exits=[len(self.exits) - 1] if last_only else None, cost=cost)

    def exit_scores(self, questions: Sequence[str], texts: Sequence[str], progress: bool = False) -> Tensor:
        """Every exit's score for every pair, nothing pruned: pairs × exits (input order)."""
        return self.score_matrix(questions, texts, progress)[0]

    @classmethod
    def from_cross_encoder(
        cls, model: CrossEncoder, exits: Sequence[int] | None = None, head_layers: int = 3
    ) -> CascadeTransformer:
        """A cascade over a trained cross-encoder: same body, its head kept as the last exit.

        The new exits start untrained (see ``sieveqa.training.cascade.retrofit_cascade``); the last
        exit scores exactly as the cross-encoder did.
        """
        src = model.config
        config = CascadeConfig(
            backbone=src.backbone,
            max_length=src.max_length,
            num_layers=src.num_layers,
            dropout=src.dropout,
            freeze_word_embeddings=src.freeze_word_embeddings,
            exits=list(exits) if exits else None,
            head_layers=head_layers,
            final_pooling=src.pooling,
            final_head_layers=src.classifier_layers,
            final_head_activation=src.classifier_activation,
        )
        cascade = cls(config)
        cascade.encoder.load_state_dict(model.encoder.state_dict())
        cascade.heads[-1].load_state_dict(model.head.state_dict())
        cascade.to(model.device)
        cascade.meta = {"retrofit_from": model.meta.get("training", {})}
        return cascade

    @classmethod
    def start_from(cls, other: EncoderModel, config: ModelConfig) -> Self:
        """A cascade over a trained cross-encoder keeps its body and head (as the last exit)."""
        if not isinstance(other, CrossEncoder):
            return super().start_from(other, config)
        exits = config.exits if isinstance(config, CascadeConfig) else None
        return cls.from_cross_encoder(other, exits)  # type: ignore[return-value]
