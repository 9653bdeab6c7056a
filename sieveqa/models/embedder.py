"""The sentence embedder behind dense passage retrieval: all-MiniLM-L6-v2 as sentence-transformers
runs it (mean of the token states, L2-normalised, 256 tokens), on the steppable encoder.

It is not trained here and never saved; its ``signature`` (backbone and a fingerprint of its
weights) is recorded in a corpus index so an index is never searched with another model's vectors.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from sieveqa.backbones import Backbone
from sieveqa.encoder import Cost, masked_mean
from sieveqa.models.configs import EmbedderConfig
from sieveqa.models.encoder_model import EncoderModel

__all__ = ["EmbedderConfig", "SentenceEmbedder"]


class SentenceEmbedder(EncoderModel):
    """Texts → unit vectors (cosine similarity = inner product)."""

    kind = "sentence-embedder"
    config_class = EmbedderConfig

    def __init__(self, config: EmbedderConfig | None = None, backbone: Backbone | None = None) -> None:
        super().__init__(config or EmbedderConfig(), backbone)
        self.eval()
        self._signature: dict[str, Any] | None = None

    def signature(self) -> dict[str, Any]:
        """What made the vectors: recorded in an index, compared when it is searched."""
        if self._signature is None:
            self._signature = {
                "name": f"{self.config.backbone} mean-pooled, normalised",
                "max_length": self.config.max_length,
                "fingerprint": self.body_fingerprint(),
            }
        return self._signature

    def embed(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """One float32 unit vector per text, in input order."""
        return self.embed_with_cost(texts, progress)[0]

    def embed_with_cost(self, texts: Sequence[str], progress: bool = False) -> tuple[np.ndarray, Cost]:
        started = time.perf_counter()
        cost = Cost()
        features = self.featurizer.texts(texts, self.config.max_length)
        out = torch.zeros((len(features), self.encoder.hidden_size))
        with self.inference() as model:
            for rows, batch in self.batches(features, progress, desc="embedding passages", cost=cost):
                hidden = model.encoder(
                    batch["input_ids"], batch["attention_mask"], batch["token_type_ids"], cost=cost
                )
                pooled = masked_mean(hidden[: len(rows)], batch["attention_mask"][: len(rows)])
                out[rows] = F.normalize(pooled.float(), dim=-1).cpu()
        cost.seconds = time.perf_counter() - started
        return out.numpy(), cost
