"""The Cascade Transformer (Soldaini & Moschitti, 2020): one encoder, a classifier after chosen layers.

Exit ``i`` scores a pair from the hidden states after layer ``exits[i]``. At question time
(``sieveqa.runtime.cascade``) each exit drops a fixed share of a question's remaining candidates, so
later layers run on fewer rows. This module holds the model only: heads, the all-exits forward pass
used in training, and the saved inference settings (drop ratios).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch
from torch import Tensor, nn

from sieveqa.backbones import Backbone
from sieveqa.data.records import RankingExample
from sieveqa.encoder import pool
from sieveqa.models.base import flatten_pairs, regroup
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.pair_model import PairModel, PairModelConfig


def default_exits(num_layers: int) -> list[int]:
    """The paper's placement scaled to depth: five exits evenly from layer n/3 to n (fewer if shallow).

    12 layers → 4, 6, 8, 10, 12 (the paper's ρ); 6 layers → 2, 3, 4, 5, 6; 4 layers → 1, 2, 3, 4.
    """
    first = num_layers / 3
    points = (first + k * (num_layers - first) / 4 for k in range(5))
    return sorted({max(1, int(p + 0.5)) for p in points})


@dataclass
class CascadeConfig(PairModelConfig):
    """Architecture of a cascade and its saved inference settings."""

    exits: list[int] | None = field(
        default=None, metadata={"help": "layers with a classifier, e.g. 2,3,4,5,6 (None: the paper's rule)"}
    )
    pooling: str = field(
        default="mean", metadata={"help": "exit input: 'mean' of all token states (paper) or 'cls'"}
    )
    head_layers: int = field(
        default=3, metadata={"help": "linear layers per exit head (3: the paper's tanh feed-forward)"}
    )
    final_pooling: str | None = field(
        default=None, metadata={"help": "pooling of the last exit if it differs (a retrofitted head)"}
    )
    final_head_layers: int | None = field(
        default=None, metadata={"help": "linear layers of the last exit head if it differs"}
    )
    drop_ratios: list[float] | None = field(
        default=None,
        metadata={"help": "α after each exit but the last, used at inference (None: no pruning)"},
    )


class ExitHead(nn.Module):
    """Pool the token states of one layer and map them to a logit.

    ``layers=3`` is the paper's classifier: two tanh layers as wide as the encoder, then the output
    layer, with dropout before each. ``layers=1`` is the plain cross-encoder head.
    """

    def __init__(self, hidden: int, layers: int, pooling: str, dropout: float) -> None:
        super().__init__()
        if layers < 1:
            raise ValueError(f"an exit head needs at least 1 layer, got {layers}")
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'cls' or 'mean', got {pooling!r}")
        self.pooling = pooling
        modules: list[nn.Module] = []
        for _ in range(layers - 1):
            modules += [nn.Dropout(dropout), nn.Linear(hidden, hidden), nn.Tanh()]
        modules += [nn.Dropout(dropout), nn.Linear(hidden, 1)]
        self.net = nn.Sequential(*modules)

    def forward(self, hidden: Tensor, mask: Tensor) -> Tensor:
        return self.net(pool(hidden, mask, self.pooling)).squeeze(-1)


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
        if cfg.exits != sorted(set(cfg.exits)) or cfg.exits[0] < 1 or cfg.exits[-1] != depth:
            raise ValueError(
                f"exits must be increasing layer numbers in 1..{depth} ending at {depth} (layers above "
                f"the last exit would never run), got {cfg.exits}"
            )
        if cfg.drop_ratios is not None:
            cfg.drop_ratios = check_drop_ratios(cfg.drop_ratios, len(cfg.exits))
        hidden, last = self.encoder.hidden_size, len(cfg.exits) - 1
        self.heads = nn.ModuleList(
            ExitHead(
                hidden,
                cfg.final_head_layers if i == last and cfg.final_head_layers else cfg.head_layers,
                cfg.final_pooling if i == last and cfg.final_pooling else cfg.pooling,
                cfg.dropout,
            )
            for i in range(len(cfg.exits))
        )

    def freeze_body(self) -> None:
        """Train only the exits before the last: the encoder and last head stay fixed, in eval mode
        (no dropout), so the last exit keeps scoring exactly as before (retrofit)."""
        for param in [*self.encoder.parameters(), *self.heads[-1].parameters()]:
            param.requires_grad_(False)
        self.body_frozen = True
        self.train(self.training)

    def train(self, mode: bool = True) -> CascadeTransformer:
        super().train(mode)
        if getattr(self, "body_frozen", False):
            self.encoder.eval()
            self.heads[-1].eval()
        return self

    @property
    def exits(self) -> list[int]:
        assert self.config.exits is not None
        return self.config.exits

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        token_type_ids: Tensor | None = None,
        exits: Sequence[int] | None = None,
    ) -> Tensor:
        """Logits of the exits with the given indices (all by default): rows × len(exits).

        Layers run only as deep as the deepest exit asked for.
        """
        wanted = sorted(set(range(len(self.exits)) if exits is None else exits))
        state = self.encoder.embed(input_ids, attention_mask, token_type_ids)
        out: dict[int, Tensor] = {}
        for i in wanted:
            while state.layer < self.exits[i]:
                state = self.encoder.step(state)
            out[i] = self.heads[i](state.hidden, state.mask)
        return torch.stack([out[i] for i in (range(len(self.exits)) if exits is None else exits)], dim=1)

    def exit_scores(self, questions: Sequence[str], texts: Sequence[str], progress: bool = False) -> Tensor:
        """Every exit's score for every pair, no pruning: pairs × exits (input order)."""
        started = time.perf_counter()
        features = self.featurize(questions, texts)
        run = self.run_batches
        return run(features, lambda m, batch: m(**batch), progress, len(self.exits), started)

    def score(self, examples: Sequence[RankingExample], progress: bool = False) -> list[list[float]]:
        """The last exit's scores with nothing pruned (the cascade used as a monolithic model).

        Pruning is a question-time policy: ``sieveqa.runtime.CascadeRanker`` applies the drop
        ratios saved with the model (the CLI does so for every cascade it loads).
        """
        started = time.perf_counter()
        features = self.featurize(*flatten_pairs(examples))
        last = len(self.exits) - 1
        flat = self.run_batches(
            features, lambda m, batch: m(**batch, exits=[last])[:, 0], progress, None, started
        )
        return regroup(examples, flat.tolist())

    @classmethod
    def from_cross_encoder(
        cls, model: CrossEncoder, exits: Sequence[int] | None = None, head_layers: int = 3
    ) -> CascadeTransformer:
        """A cascade over a trained cross-encoder: same body, its head kept as the last exit.

        The new exits start untrained (see ``sieveqa.training.recipes.retrofit_cascade``); the last
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
            final_head_layers=1,
        )
        cascade = cls(config)
        cascade.encoder.load_state_dict(model.encoder.state_dict())
        final = cascade.heads[-1].net[-1]
        assert isinstance(final, nn.Linear)
        final.load_state_dict(model.head[-1].state_dict())
        cascade.meta = {"retrofit_from": model.meta.get("training", {})}
        return cascade


def check_drop_ratios(ratios: float | Sequence[float], n_exits: int) -> list[float]:
    """One α per pruning exit (every exit but the last); one value (alone or in a list) applies to all."""
    if not isinstance(ratios, int | float) and len(ratios) == 1:
        ratios = ratios[0]
    if isinstance(ratios, int | float):
        ratios = [float(ratios)] * (n_exits - 1)
    ratios = [float(a) for a in ratios]
    if len(ratios) != n_exits - 1:
        raise ValueError(
            f"need {n_exits - 1} drop ratios (one per exit but the last) or a single one, got {len(ratios)}"
        )
    bad = [a for a in ratios if not 0.0 <= a < 1.0]
    if bad:
        raise ValueError(f"drop ratios must be in [0, 1), got {bad}")
    return ratios
