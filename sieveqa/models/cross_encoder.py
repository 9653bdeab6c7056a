"""The pointwise cross-encoder: (question, candidate) → one relevance logit, on the steppable encoder."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from sieveqa.backbones import Backbone, load_backbone
from sieveqa.batching import PairFeatures, collate, length_batches, tokenize_pairs
from sieveqa.data.records import RankingExample
from sieveqa.encoder import SteppableEncoder, pool
from sieveqa.errors import ModelFormatError
from sieveqa.models._saving import load_into, read_meta, save_model_folder, tensor_fingerprint
from sieveqa.models.base import Ranker, regroup
from sieveqa.models.precision import Precision, apply_precision

WORD_EMBEDDINGS = "encoder.backbone.embeddings.word_embeddings."


@dataclass
class CrossEncoderConfig:
    """Architecture of a cross-encoder ranker."""

    backbone: str = field(default="minilm-l6", metadata={"help": "backbone name or Hugging Face folder"})
    max_length: int = field(default=128, metadata={"help": "tokens per (question, candidate) pair"})
    pooling: str = field(default="cls", metadata={"help": "'cls' or 'mean' token pooling before the head"})
    dropout: float = field(default=0.1, metadata={"help": "dropout before the scoring layer"})
    freeze_word_embeddings: bool = field(
        default=True, metadata={"help": "keep the base word embeddings (smaller saved model, faster steps)"}
    )


@dataclass
class ScoringStats:
    """What the last ``score`` call cost."""

    pairs: int = 0
    seconds: float = 0.0
    layer_units: int = 0
    flops: int = 0

    @property
    def pairs_per_second(self) -> float:
        return self.pairs / self.seconds if self.seconds > 0 else 0.0


class CrossEncoder(nn.Module, Ranker):
    """Scores each (question, candidate) pair jointly; the TANDA-style baseline ranker."""

    kind = "cross-encoder"

    def __init__(self, config: CrossEncoderConfig | None = None, backbone: Backbone | None = None) -> None:
        super().__init__()
        self.config = config or CrossEncoderConfig()
        backbone = backbone or load_backbone(self.config.backbone)
        self.tokenizer = backbone.tokenizer
        self.encoder = SteppableEncoder(backbone.model)
        self.head = nn.Sequential(nn.Dropout(self.config.dropout), nn.Linear(self.encoder.hidden_size, 1))
        if self.config.freeze_word_embeddings:
            backbone.model.embeddings.word_embeddings.weight.requires_grad_(False)
        self.precision: Precision = "fp32"
        self.batch_size = 64
        self.last_stats = ScoringStats()
        # What save_pretrained recorded (training provenance) when loaded from a folder.
        self.meta: dict[str, Any] = {}

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor | None = None
    ) -> Tensor:
        """Relevance logits, one per row."""
        hidden = self.encoder(input_ids, attention_mask, token_type_ids)
        return self.head(pool(hidden, attention_mask, self.config.pooling)).squeeze(-1)

    def featurize(self, questions: Sequence[str], texts: Sequence[str]) -> PairFeatures:
        return tokenize_pairs(self.tokenizer, questions, texts, self.config.max_length)

    def score_pairs(
        self, questions: Sequence[str], texts: Sequence[str], progress: bool = False
    ) -> list[float]:
        """Score pairs in length-sorted batches under ``torch.inference_mode``; returns input order."""
        features = self.featurize(questions, texts)
        scores = torch.empty(len(features))
        was_training = self.training
        self.eval()
        self.encoder.cost.reset()
        start = time.perf_counter()
        batches = length_batches(features.lengths, self.batch_size)
        with torch.inference_mode(), apply_precision(self, self.precision) as model:
            for rows in tqdm(batches, desc="scoring", unit="batch", disable=not progress, leave=False):
                batch = collate(features, rows, self.tokenizer.pad_token_id)
                scores[rows] = model(**batch).float()
        self.train(was_training)
        self.last_stats = ScoringStats(
            len(features), time.perf_counter() - start, self.encoder.cost.layer_units, self.encoder.cost.flops
        )
        return scores.tolist()

    def score(self, examples: Sequence[RankingExample], progress: bool = False) -> list[list[float]]:
        questions = [ex.question.text for ex in examples for _ in ex.candidates]
        texts = [c.text for ex in examples for c in ex.candidates]
        flat = self.score_pairs(questions, texts, progress=progress)
        return regroup(examples, flat)

    # -- persistence ------------------------------------------------------------------------------

    def _excluded(self) -> tuple[str, ...]:
        # A random test backbone has no installed base to read frozen weights from: store them all.
        return (
            (WORD_EMBEDDINGS,)
            if self.config.freeze_word_embeddings and self.config.backbone != "tiny"
            else ()
        )

    def save_pretrained(self, path: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """Save config and weights (fp16; frozen base embeddings left out and fingerprinted)."""
        meta = {
            "sieveqa_model": self.kind,
            "config": asdict(self.config),
            "base_fingerprint": tensor_fingerprint(self.encoder.backbone.embeddings.word_embeddings.weight),
            **(extra or {}),
        }
        return save_model_folder(path, self, meta, exclude=self._excluded())

    @classmethod
    def from_pretrained(cls, path: str | Path) -> CrossEncoder:
        """Load a folder written by ``save_pretrained`` (or a shipped model name, e.g. ``default``)."""
        from sieveqa.models.zoo import resolve_model

        path = resolve_model(path)
        meta = read_meta(path, cls.kind)
        model = cls(CrossEncoderConfig(**meta["config"]))
        if model._excluded():
            found = tensor_fingerprint(model.encoder.backbone.embeddings.word_embeddings.weight)
            if found != meta.get("base_fingerprint"):
                expected = str(meta.get("base_fingerprint"))[:12]
                raise ModelFormatError(
                    f"{path}: trained over other base weights than the installed backbone "
                    f"{model.config.backbone!r} (fingerprint {found[:12]} != {expected})"
                )
        load_into(path, model, meta)
        model.meta = meta
        return model.eval()
