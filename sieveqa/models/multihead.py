"""Multiple Heads Student (MHS, "Efficient Ensemble Transformer for Accurate Answer Sentence Ranking").

``B_b kH_h``: the first ``b`` layers are a body shared by ``k`` heads, each head being its own stack
of the next ``h`` layers (copies of the backbone's, branches of the steppable encoder) and a
classifier. Training gives every head its own teacher and the body learns from all of them
(``sieveqa.training.objectives.Distillation``); a pair's score is the mean of the heads' logits (the
paper's eq. 5), so a question costs ``b + k·h`` layer-units per candidate.

Head 0 runs the backbone's own top layers and heads 1..k-1 their copies, so a student stores
``k − 1`` extra stacks, not ``k``.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import replace
from pathlib import Path
from typing import Any, Self

import torch
from torch import Tensor, nn

from sieveqa.backbones import Backbone, load_backbone
from sieveqa.encoder import Cost
from sieveqa.errors import ConfigError
from sieveqa.models.configs import MultiHeadConfig
from sieveqa.models.cross_encoder import CrossEncoder, CrossEncoderConfig
from sieveqa.models.encoder_model import EncoderModel, ModelConfig
from sieveqa.models.heads import ClassifierHead
from sieveqa.models.pair_model import PairModel


class MultiHeadStudent(PairModel):
    """One shared body, ``k`` heads of ``h`` layers each; scores are the heads' mean logit (weighted by
    ``config.head_weights`` where given)."""

    one_body = False  # its branches are bodies of their own

    kind = "multihead"
    config_class = MultiHeadConfig
    config: MultiHeadConfig

    def __init__(self, config: MultiHeadConfig | None = None, backbone: Backbone | None = None) -> None:
        cfg = replace(config) if config else MultiHeadConfig()
        backbone = backbone or load_backbone(cfg.backbone)
        depth = cfg.num_layers or len(backbone.model.encoder.layer)
        body = cfg.body_depth if cfg.body_depth is not None else depth - cfg.head_depth
        if body < 1 or body + cfg.head_depth > depth:
            raise ConfigError(
                f"B{body} {cfg.heads}H{cfg.head_depth} does not fit {cfg.backbone}: b + h must be at most "
                f"its {depth} layers, with b >= 1"
            )
        # A student shallower than its backbone keeps only the layers it uses.
        cfg.body_depth, cfg.num_layers = body, body + cfg.head_depth
        super().__init__(cfg, backbone)
        hidden = self.encoder.hidden_size
        top = self.encoder.layers[body:]
        self.branches = nn.ModuleList(
            nn.ModuleList(copy.deepcopy(layer) for layer in top) for _ in range(cfg.heads - 1)
        )
        self.heads = nn.ModuleList(
            ClassifierHead(hidden, 1, cfg.pooling, cfg.dropout) for _ in range(cfg.heads)
        )
        # eq. 5's mean, weighted where the config says (a buffer: it moves with the model, no per-batch work)
        self.register_buffer("pool_weights", torch.tensor(cfg.normalised_weights()), persistent=False)
        self.eval()

    def copy_top_layers(self) -> None:
        """Restart heads 1..k-1 from the backbone's top ``h`` layers (after a body was loaded)."""
        top = self.encoder.layers[self.config.body_depth :]
        for branch in self.branches:
            for mine, source in zip(branch, top, strict=True):
                mine.load_state_dict(source.state_dict())

    def head_stack(self, head: int) -> nn.ModuleList:
        """The layers head ``head`` runs after the body."""
        return self.encoder.layers[self.config.body_depth :] if head == 0 else self.branches[head - 1]

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        token_type_ids: Tensor | None = None,
        cost: Cost | None = None,
    ) -> Tensor:
        """Every head's logit, rows × k (training gives each column its own teacher)."""
        b = self.config.body_depth
        body = self.encoder(input_ids, attention_mask, token_type_ids, num_layers=b, cost=cost)
        logits = []
        for i, head in enumerate(self.heads):
            hidden = body
            for j, layer in enumerate(self.head_stack(i)):
                hidden = self.encoder.run_layer(b + j, hidden, attention_mask, cost, layer, f"head-{i}")
            logits.append(head(hidden, attention_mask))
        return torch.stack(logits, dim=1)

    def batch_logits(self, batch: dict[str, Tensor], cost: Cost, last_only: bool) -> Tensor:
        logits = self(**batch, cost=cost)
        return (logits * self.pool_weights.to(logits.dtype)).sum(dim=1, keepdim=True)

    def as_cross_encoder(self) -> CrossEncoder:
        """A one-head student is a cross-encoder: the same layers and classifier, in that class (on
        the CPU; building it leaves the random state of a training run as it was)."""
        if self.config.heads != 1:
            raise ConfigError(
                f"{self.config.name} has {self.config.heads} heads; only one makes a cross-encoder"
            )
        fields = {
            f.name: getattr(self.config, f.name)
            for f in dataclasses.fields(CrossEncoderConfig)
            if hasattr(self.config, f.name)  # the head's shape fields keep their defaults: one linear layer
        }
        with torch.random.fork_rng(devices=[]):
            model = CrossEncoder(CrossEncoderConfig(**fields))
        model.encoder.load_state_dict(self.encoder.state_dict())
        model.head.load_state_dict(self.heads[0].state_dict())
        return model

    def save_pretrained(
        self,
        path: str | Path,
        extra: dict[str, Any] | None = None,
        policy: dict[str, Any] | None = None,
        low_rank: int | None = None,
    ) -> Path:
        """Saved as what it is: with one head (a single-teacher student) a plain cross-encoder, which
        everything that takes a cross-encoder (retrofit, PEASI, readers) accepts."""
        if self.config.heads == 1:
            return self.as_cross_encoder().save_pretrained(path, extra, policy, low_rank)
        return super().save_pretrained(path, extra, policy, low_rank)

    @classmethod
    def start_from(cls, other: EncoderModel, config: ModelConfig) -> Self:
        """A student over a trained cross-encoder: its body, its top layers copied into every head and
        its classifier into every head, so each head first scores exactly as the cross-encoder did."""
        if not isinstance(other, CrossEncoder):
            return super().start_from(other, config)
        wanted = config if isinstance(config, MultiHeadConfig) else MultiHeadConfig()
        src = other.config
        student = cls(
            replace(
                wanted,
                backbone=src.backbone,
                max_length=src.max_length,
                num_layers=src.num_layers,
                dropout=src.dropout,
                pooling=src.pooling,  # every head starts as the cross-encoder's head, reading what it read
                freeze_word_embeddings=src.freeze_word_embeddings,
            )
        )
        own, theirs = student.encoder.state_dict(), other.encoder.state_dict()
        if missing := sorted(set(own) - set(theirs)):
            raise ConfigError(
                f"{student.config.name} needs layers the cross-encoder lacks ({missing[0]}, ...)"
            )
        student.encoder.load_state_dict({k: v for k, v in theirs.items() if k in own})
        student.copy_top_layers()
        for head in student.heads:
            head.load_state_dict(other.head.state_dict())
        student.to(other.device)
        student.meta = {"student_of": other.meta.get("training", {})}
        return student
