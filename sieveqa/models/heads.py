"""The one classifier head every model uses: pool the token states, then a small feed-forward net.

``layers=1`` is the cross-encoder's head (dropout, linear); ``layers=3`` is the Cascade
Transformer's exit classifier (two tanh layers as wide as the encoder, then the output layer, with
dropout before each). ``layers=2`` is Hugging Face's sequence-classification head on the first token
(BERT's pooler and classifier, RoBERTa's and XLM-R's ``dense``/``tanh``/``out_proj``, ELECTRA's with
``gelu``), which imported cross-encoders keep (``sieveqa.models.foreign``). The head is an
``nn.Sequential`` of exactly those modules, so its parameter names (``1.weight``, ...) are those models
saved before the head was shared.
"""

from __future__ import annotations

from torch import Tensor, nn

from sieveqa.encoder import pool
from sieveqa.errors import ConfigError
from sieveqa.models.configs import POOLINGS

ACTIVATIONS = {"tanh": nn.Tanh, "gelu": nn.GELU}


class ClassifierHead(nn.Sequential):
    """Pool token states (``cls`` or ``mean``), then ``layers`` linear layers to one logit, with
    ``activation`` (tanh or gelu) between them."""

    def __init__(
        self,
        hidden: int,
        layers: int = 1,
        pooling: str = "cls",
        dropout: float = 0.1,
        activation: str = "tanh",
    ) -> None:
        if layers < 1:
            raise ConfigError(f"a classifier head needs at least 1 layer, got {layers}")
        if pooling not in POOLINGS:
            raise ConfigError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        if activation not in ACTIVATIONS:
            raise ConfigError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
        modules: list[nn.Module] = []
        for _ in range(layers - 1):
            modules += [nn.Dropout(dropout), nn.Linear(hidden, hidden), ACTIVATIONS[activation]()]
        modules += [nn.Dropout(dropout), nn.Linear(hidden, 1)]
        super().__init__(*modules)
        self.pooling = pooling

    @property
    def output(self) -> nn.Linear:
        """The last linear layer (what maps onto another framework's classifier)."""
        last = self[-1]
        assert isinstance(last, nn.Linear)
        return last

    def forward(self, hidden: Tensor, mask: Tensor) -> Tensor:  # type: ignore[override]
        """One logit per row of ``hidden`` (rows × tokens × width) under ``mask``."""
        x = pool(hidden, mask, self.pooling)
        for module in self:
            x = module(x)
        return x.squeeze(-1)
