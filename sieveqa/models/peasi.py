"""PEASI's multi-task models (section 2.3): a passage reranker (PR) and EASI trained together.

- ``mtl0``: one transformer shared by both tasks (PR reads ``[CLS] q [SEP] p``, EASI reads
  ``[CLS] q [SEP] s1 [SEP] ...``; two passes through the same body).
- ``mtl1``: two transformers, trained together on the sum of the two losses.
- ``concat`` (PR ⊕ EASI): two transformers; PR classifies ``tanh([E(q, p); E(q, (s1..sk))])``, its
  own first-token embedding next to EASI's, so ranking a passage takes both passes.

PR scores come from ``score_passages``; ``select`` is EASI's in-place choice, as in ``EasiModel``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, Self

import torch
from torch import Tensor, nn

from sieveqa.backbones import Backbone
from sieveqa.batching import collate, to_device
from sieveqa.encoder import Cost, SteppableEncoder
from sieveqa.errors import ConfigError
from sieveqa.models.configs import SHARING, PeasiConfig
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.easi import (
    EasiModel,
    SentenceRead,
    SentenceReader,
    SentenceSelector,
    featurize_segments,
    read_windows,
)
from sieveqa.models.encoder_model import WORD_EMBEDDINGS, EncoderModel, ModelConfig
from sieveqa.models.heads import ClassifierHead
from sieveqa.profiling import stage

__all__ = ["SHARING", "PeasiConfig", "PeasiModel"]

EASI_BODY = "easi_encoder."
_SEG = "seg_"  # prefix of the EASI input's tensors in a training batch


class PeasiModel(EncoderModel, SentenceReader):
    """PR and EASI with a shared body (``mtl0``) or two bodies (``mtl1``, ``concat``)."""

    one_body = False  # its sentence encoder is a second body

    kind = "peasi"
    config_class = PeasiConfig
    config: PeasiConfig

    def __init__(self, config: PeasiConfig | None = None, backbone: Backbone | None = None) -> None:
        super().__init__(config or PeasiConfig(), backbone)
        hidden = self.encoder.hidden_size
        two = self.config.sharing != "mtl0"
        self.easi_encoder = SteppableEncoder(copy.deepcopy(self.encoder.backbone)) if two else None
        self.selector = SentenceSelector(hidden, self.config)
        if self.config.sharing == "concat":
            self.pr_head: nn.Module = nn.Sequential(
                nn.Tanh(), nn.Dropout(self.config.dropout), nn.Linear(2 * hidden, 1)
            )
        else:
            self.pr_head = ClassifierHead(hidden, 1, "cls", self.config.dropout)
        self.eval()

    @property
    def easi_body(self) -> SteppableEncoder:
        return self.easi_encoder if self.easi_encoder is not None else self.encoder

    def _excluded(self) -> tuple[str, ...]:
        excluded = super()._excluded()
        if WORD_EMBEDDINGS in excluded and self.easi_encoder is not None:
            excluded += (EASI_BODY + WORD_EMBEDDINGS.removeprefix("encoder."),)
        return excluded

    @classmethod
    def start_from(cls, other: EncoderModel, config: ModelConfig) -> Self:
        """Both tasks over a trained ranker's body (PR keeps its head, unless ``concat``)."""
        if not isinstance(other, CrossEncoder | EasiModel):
            return super().start_from(other, config)
        settings = asdict(config) if isinstance(config, PeasiConfig) else {}
        body = {k: getattr(other.config, k) for k in ("backbone", "num_layers", "freeze_word_embeddings")}
        model = cls(PeasiConfig(**{**settings, **body}))
        model.encoder.load_state_dict(other.encoder.state_dict())
        if model.easi_encoder is not None:
            model.easi_encoder.load_state_dict(other.encoder.state_dict())
        if isinstance(other, CrossEncoder) and model.config.sharing != "concat":
            model.pr_head.load_state_dict(other.head.state_dict())
        model.meta = {"body_from": other.meta.get("training", {})}
        return model.to(other.device)

    def load_easi(self, easi: EasiModel) -> None:
        """Take a trained EASI's selector (and body, where this model has a body of its own):
        the first stage of the paper's two-stage training."""
        keys = ("backbone", "num_layers", "selector", "slots")
        differ = [
            f"{k} {getattr(easi.config, k)!r} != {getattr(self.config, k)!r}"
            for k in keys
            if getattr(easi.config, k) != getattr(self.config, k)
        ]
        if differ:
            raise ConfigError(f"the EASI model does not fit this model: {'; '.join(differ)}")
        self.selector.load_state_dict(easi.head.state_dict())
        if self.easi_encoder is not None:
            self.easi_encoder.load_state_dict(easi.encoder.state_dict())

    # -- scoring ---------------------------------------------------------------------------------

    def _pr_logits(self, pair_hidden: Tensor, mask: Tensor, seg_hidden: Tensor | None) -> Tensor:
        if self.config.sharing == "concat":
            assert seg_hidden is not None
            return self.pr_head(torch.cat([pair_hidden[:, 0], seg_hidden[:, 0]], dim=-1)).squeeze(-1)
        return self.pr_head(pair_hidden, mask)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        token_type_ids: Tensor | None = None,
        seg_input_ids: Tensor | None = None,
        seg_attention_mask: Tensor | None = None,
        seg_token_type_ids: Tensor | None = None,
        segment_ids: Tensor | None = None,
        cost: Cost | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """PR logits (one per row) and, with the EASI input, its sentence logits."""
        pair_hidden = self.encoder(input_ids, attention_mask, token_type_ids, cost=cost)
        seg_hidden = None
        if seg_input_ids is not None:
            assert seg_attention_mask is not None
            seg_hidden = self.easi_body(seg_input_ids, seg_attention_mask, seg_token_type_ids, cost=cost)
        sentences = (
            None if seg_hidden is None or segment_ids is None else self.selector(seg_hidden, segment_ids)
        )
        return self._pr_logits(pair_hidden, attention_mask, seg_hidden), sentences

    def inputs(self, questions: Sequence[str], passages: Sequence[Sequence[str]]) -> tuple[Any, Any]:
        """The PR rows (``q``, passage text) and EASI rows (``q``, its sentences; no windows, the
        first ``slots`` sentences for a slots selector), one each per passage."""
        limit = self.config.slots if self.config.selector == "slots" else None
        pairs = self.featurizer.pairs(questions, [" ".join(p) for p in passages], self.config.max_length)
        segs = self.featurizer.segments(
            questions, [list(p[:limit]) for p in passages], self.config.max_length
        )
        return pairs, segs

    def score_passages(
        self, questions: Sequence[str], passages: Sequence[Sequence[str]], progress: bool = False
    ) -> tuple[list[float], Cost]:
        """PR's score of each (question, passage given as its sentences), and the cost."""
        started = time.perf_counter()
        cost = Cost()
        pairs, segs = self.inputs(questions, passages)
        need_segs = self.config.sharing == "concat"
        out = torch.empty(len(pairs))
        with self.inference() as model:
            shapes, size, lengths, seg_lengths = self.shapes, self.batch_size, pairs.lengths, segs.lengths
            for rows in shapes.batches(lengths, size):
                before, shape = cost.snapshot(), shapes.shape([lengths[r] for r in rows], size)
                batch = to_device(collate(pairs, rows, self.pad_id, shape=shape), self.device)
                if need_segs:
                    width = shapes.shape([seg_lengths[r] for r in rows], size)[1]
                    seg = to_device(collate(segs, rows, self.pad_id, True, (shape[0], width)), self.device)
                    batch |= {_SEG + k: v for k, v in seg.items() if k != "segment_ids"}
                    batch["segment_ids"] = seg["segment_ids"]
                with stage("model", cost):
                    out[rows] = model(**batch, cost=cost)[0][: len(rows)].float().cpu()
                cost.count_rows(before, len(rows), shape[0])
        cost.seconds = time.perf_counter() - started
        return out.tolist(), cost

    def read(
        self, questions: Sequence[str], passages: Sequence[Sequence[str]], progress: bool = False
    ) -> SentenceRead:
        """EASI: each passage's sentence logits (as ``EasiModel.read``)."""
        started = time.perf_counter()
        cost = Cost()
        inputs = featurize_segments(self.featurizer, self.config, questions, passages)
        with self.inference() as model:

            def logits(batch: dict[str, Tensor]) -> Tensor:
                hidden = model.easi_body(
                    batch["input_ids"], batch["attention_mask"], batch["token_type_ids"], cost=cost
                )
                return model.selector(hidden, batch["segment_ids"])

            out, nulls = read_windows(model, inputs, logits, progress, cost)
        cost.seconds = time.perf_counter() - started
        return SentenceRead(out, nulls, cost)
