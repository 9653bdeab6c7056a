"""The body as one ONNX graph per layer, and the layer inputs that calibrate its int8 copies.

Why per layer: every technique decides *between* layers (a cascade drops rows at an exit, a tower
scheduler gives one passage one more layer), so the steppable encoder must be able to stop after any
layer with any rows. One graph per layer keeps that for free: :class:`~sieveqa.encoder.SteppableEncoder`
hands each layer call to the exported graph instead of torch, and schedules, exits and heads stay as
they are. The embeddings (a table lookup and a LayerNorm) and the heads (a few thousand FLOPs per row)
stay in torch. The price, measured (docs/RESULTS.md, bench/exported_layers.py): against one graph for
the whole body, per-layer graphs run at 0.56x on ONNX Runtime and 0.90x on OpenVINO; graphs between
exits (one for a plain cross-encoder) would win that back, at the cost of a graph per exit layout.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from sieveqa.encoder import SteppableEncoder
from sieveqa.errors import require_extra

#: ONNX opset of the exported graphs (what ONNX Runtime and OpenVINO both read).
OPSET = 17
INPUTS = ("hidden", "mask")


def layer_file(index: int, suffix: str = ".onnx") -> str:
    return f"layer{index:02d}{suffix}"


class LayerGraph(nn.Module):
    """Layer ``index`` of ``encoder`` as a traceable function of (hidden states, 2-D padding mask).

    The additive mask is built here from the 0/1 mask, so the graph has no branch on the mask's
    values (torch's own mask helper skips an all-ones mask, which a trace would bake in).
    """

    def __init__(self, encoder: SteppableEncoder, index: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.index = index

    def forward(self, hidden: Tensor, mask: Tensor) -> Tensor:
        additive = (1.0 - mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
        layer = self.encoder.layers[self.index]
        if self.encoder._relative_bias:
            out = layer(hidden, additive, self.encoder.backbone.encoder.compute_position_bias(hidden))
        else:
            out = layer(hidden, additive)
        return out[0] if isinstance(out, tuple) else out


def sample_inputs(encoder: SteppableEncoder, rows: int = 2, tokens: int = 16) -> tuple[Tensor, Tensor]:
    """A small padded batch to trace with (one row padded, so the mask path is traced)."""
    hidden = torch.randn(rows, tokens, encoder.hidden_size, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(rows, tokens, dtype=torch.long)
    mask[-1, tokens // 2 :] = 0
    return hidden, mask


def export_onnx(encoder: SteppableEncoder, folder: Path) -> list[str]:
    """Write one fp32 ONNX graph per layer of ``encoder`` into ``folder``; returns the file names.

    Batch and sequence length are dynamic; the encoder must be in fp32 on the CPU (a loaded model is).
    """
    require_extra("onnx", "onnx", "exporting a model to ONNX")
    names = []
    sample = sample_inputs(encoder)
    axes = {
        "hidden": {0: "rows", 1: "tokens"},
        "mask": {0: "rows", 1: "tokens"},
        "out": {0: "rows", 1: "tokens"},
    }
    with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
        # The TorchScript exporter warns that it is deprecated in favour of torch.export; the dynamo
        # exporter needs onnxscript and takes ~10x longer per layer for the same graph.
        warnings.simplefilter("ignore")
        for index in range(encoder.num_layers):
            name = layer_file(index)
            torch.onnx.export(
                LayerGraph(encoder, index).eval(),
                sample,
                str(folder / name),
                input_names=list(INPUTS),
                output_names=["out"],
                dynamic_axes=axes,
                opset_version=OPSET,
                dynamo=False,
            )
            names.append(name)
    return names


def record_inputs(
    encoder: SteppableEncoder, batches: Iterable[Mapping[str, Tensor]]
) -> list[list[dict[str, np.ndarray]]]:
    """Each layer's inputs, batch by batch, from running ``batches`` (collated features; every row of
    them) through the torch fp32 body: what static int8 quantization calibrates its activation
    ranges on."""
    per_layer: list[list[dict[str, np.ndarray]]] = [[] for _ in range(encoder.num_layers)]
    with torch.inference_mode():
        for batch in batches:
            mask = batch["attention_mask"]
            hidden = encoder.embed(batch["input_ids"], mask, batch.get("token_type_ids"))
            for index in range(encoder.num_layers):
                per_layer[index].append(
                    {"hidden": hidden.float().numpy().copy(), "mask": mask.numpy().copy()}
                )
                hidden = encoder.torch_layer(encoder.layers[index], hidden, mask)
    return per_layer
