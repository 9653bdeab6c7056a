"""The steppable encoder: a BERT-like backbone run one layer at a time, on any subset of rows.

Every technique in sieveqa is a policy for spending transformer layers. This module owns the
mechanics they share: embedding inputs, applying layer ``i`` to the rows a policy keeps, reading
hidden states, and counting the cost in one unit, the *layer-unit* (one layer over one sequence),
with FLOPs beside it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel
from transformers.masking_utils import create_bidirectional_mask

from sieveqa.errors import BackboneError


def layer_flops(seq_len: int, hidden: int, intermediate: int) -> int:
    """Multiply-add FLOPs (x2) of one encoder layer over one sequence of ``seq_len`` tokens.

    Q/K/V/output projections 8·n·h², attention scores and mixing 4·n²·h, feed-forward 4·n·h·f.
    """
    n = seq_len
    return 8 * n * hidden * hidden + 4 * n * n * hidden + 4 * n * hidden * intermediate


@dataclass
class CostCounter:
    """Accumulates the compute spent: layer-units, FLOPs, and sequences embedded."""

    layer_units: int = 0
    flops: int = 0
    sequences: int = 0
    per_layer: dict[int, int] = field(default_factory=dict)

    def add_layer(self, layer: int, rows: int, seq_len: int, hidden: int, intermediate: int) -> None:
        self.layer_units += rows
        self.flops += rows * layer_flops(seq_len, hidden, intermediate)
        self.per_layer[layer] = self.per_layer.get(layer, 0) + rows

    def reset(self) -> None:
        self.layer_units = 0
        self.flops = 0
        self.sequences = 0
        self.per_layer = {}

    def as_dict(self) -> dict[str, int]:
        return {"layer_units": self.layer_units, "flops": self.flops, "sequences": self.sequences}


@dataclass
class EncoderState:
    """Hidden states of a batch after ``layer`` layers.

    ``rows`` maps each row back to its index in the batch that was embedded, so a policy that keeps
    a subset can still say which input a row came from.
    """

    hidden: Tensor
    mask: Tensor
    layer: int
    rows: Tensor

    def __len__(self) -> int:
        return self.hidden.shape[0]

    def select(self, keep: Tensor) -> EncoderState:
        """The same state restricted to the rows ``keep`` (indices or a boolean mask into this state)."""
        if keep.dtype == torch.bool:
            keep = keep.nonzero(as_tuple=True)[0]
        return EncoderState(self.hidden[keep], self.mask[keep], self.layer, self.rows[keep])

    def trimmed(self) -> EncoderState:
        """Drop padding columns that no remaining row uses (fewer FLOPs for the next layers)."""
        width = int(self.mask.sum(dim=1).max().item()) if len(self) else 0
        if width == self.mask.shape[1] or width == 0:
            return self
        # Right padding: every row's tokens sit in the first `width` columns.
        return EncoderState(self.hidden[:, :width], self.mask[:, :width], self.layer, self.rows)


class SteppableEncoder(nn.Module):
    """Wraps a Hugging Face BERT-like model (BERT, MiniLM, MPNet) so layers can be run one by one.

    ``encoder.embed(...)`` then ``encoder.step(state)`` ``num_layers`` times equals the backbone's
    own forward pass; a policy may ``state.select(rows)`` between steps to stop spending on rows.
    """

    def __init__(self, backbone: PreTrainedModel) -> None:
        super().__init__()
        if not hasattr(backbone, "embeddings") or not hasattr(backbone, "encoder"):
            raise BackboneError(
                f"{type(backbone).__name__} is not a BERT-like encoder (needs .embeddings and .encoder.layer)"
            )
        self.backbone = backbone
        self.config = backbone.config
        self._relative_bias = hasattr(backbone.encoder, "compute_position_bias")
        params = inspect.signature(backbone.embeddings.forward).parameters
        self._takes_token_types = "token_type_ids" in params
        self.cost = CostCounter()

    @property
    def layers(self) -> nn.ModuleList:
        # A property, not an attribute: registering the list twice would duplicate it in state_dict.
        return self.backbone.encoder.layer

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def hidden_size(self) -> int:
        return int(self.config.hidden_size)

    def embed(
        self, input_ids: Tensor, attention_mask: Tensor, token_type_ids: Tensor | None = None
    ) -> EncoderState:
        """Embed a batch: the state after 0 layers."""
        kwargs = {"input_ids": input_ids}
        if self._takes_token_types and token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        hidden = self.backbone.embeddings(**kwargs)
        self.cost.sequences += input_ids.shape[0]
        rows = torch.arange(input_ids.shape[0], device=input_ids.device)
        return EncoderState(hidden, attention_mask, 0, rows)

    def step(self, state: EncoderState) -> EncoderState:
        """Apply the next layer (``state.layer``) to every row of ``state``."""
        index = state.layer
        if index >= self.num_layers:
            raise IndexError(f"state is already after layer {index}; the encoder has {self.num_layers}")
        hidden = self.run_layer(index, state.hidden, state.mask)
        return EncoderState(hidden, state.mask, index + 1, state.rows)

    def run_layer(self, index: int, hidden: Tensor, mask: Tensor) -> Tensor:
        """Apply layer ``index`` to ``hidden`` (rows × tokens × width) under the 2-D padding ``mask``."""
        if hidden.shape[0] == 0:
            return hidden
        layer = self.layers[index]
        attn_mask = create_bidirectional_mask(config=self.config, inputs_embeds=hidden, attention_mask=mask)
        if self._relative_bias:
            bias = self.backbone.encoder.compute_position_bias(hidden)
            out = layer(hidden, attn_mask, bias)
        else:
            out = layer(hidden, attn_mask)
        self.cost.add_layer(
            index, hidden.shape[0], hidden.shape[1], self.hidden_size, self.config.intermediate_size
        )
        return out[0] if isinstance(out, tuple) else out

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        token_type_ids: Tensor | None = None,
        num_layers: int | None = None,
        return_all: bool = False,
    ) -> Tensor | list[Tensor]:
        """Run ``num_layers`` layers (all by default) on every row.

        Returns the last hidden states, or with ``return_all`` the list of hidden states after each
        layer (index 0 is after layer 1).
        """
        state = self.embed(input_ids, attention_mask, token_type_ids)
        outputs = []
        for _ in range(num_layers if num_layers is not None else self.num_layers):
            state = self.step(state)
            outputs.append(state.hidden)
        return outputs if return_all else state.hidden


def masked_mean(hidden: Tensor, mask: Tensor) -> Tensor:
    """Mean of token vectors over the non-padding positions of each row."""
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


def pool(hidden: Tensor, mask: Tensor, mode: str) -> Tensor:
    """Pool token states into one vector per row: ``"cls"`` (first token), ``"mean"`` or ``"max"``
    (both over the non-padding positions)."""
    if mode == "cls":
        return hidden[:, 0]
    if mode == "mean":
        return masked_mean(hidden, mask)
    if mode == "max":
        return hidden.masked_fill(~mask.bool().unsqueeze(-1), torch.finfo(hidden.dtype).min).amax(dim=1)
    raise ValueError(f"pooling must be 'cls', 'mean' or 'max', got {mode!r}")
