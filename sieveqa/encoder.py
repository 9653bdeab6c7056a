"""The steppable encoder: a BERT-like backbone run one layer at a time, on any rows, at any depth.

Every technique in sieveqa is a policy for spending transformer layers. This module owns the
mechanics they share:

- :meth:`SteppableEncoder.forward` / :meth:`~SteppableEncoder.run_layer` on padded batches (training,
  plain scoring);
- :class:`EncoderState`, the per-row state of a question's candidates or of a set of passages: each
  row's hidden states unpadded, and its own depth. :meth:`~SteppableEncoder.advance` gives the chosen
  rows their next layer, grouping them by depth and length, so a cascade can drop rows between exits
  and a tower scheduler can give one layer to one passage;
- :class:`Cost`, what a call spent: *layer-units* (one layer over one sequence), FLOPs and wall time,
  keyed by branch and layer. A cost object belongs to one call, never to the model, so one loaded
  model can serve many threads.

A layer run can be any layer module (``module=``), e.g. a head's own copy of the top layer in a
multi-head student; its cost is keyed by the ``branch`` it belongs to.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pad_sequence
from transformers import PreTrainedModel
from transformers.masking_utils import create_bidirectional_mask

from sieveqa.batching import EXACT, Shapes, collate
from sieveqa.cost import BODY, Cost
from sieveqa.errors import BackboneError, ConfigError
from sieveqa.features import Features


class LayerRunner(Protocol):
    """Runs the body's layers somewhere other than torch (an exported ONNX Runtime or OpenVINO graph
    per layer): ``run`` takes and returns what :meth:`SteppableEncoder.run_layer` does."""

    def run(self, index: int, hidden: Tensor, mask: Tensor) -> Tensor: ...


@dataclass
class Group:
    """Rows that ran one layer together: their padded hidden states and mask (rows × tokens); rows
    past ``len(rows)`` pad the batch to a bucketed shape (a head reads them all, its caller keeps the
    first ``len(rows)`` results)."""

    rows: list[int]
    hidden: Tensor
    mask: Tensor


class EncoderState:
    """Hidden states of some inputs, one unpadded ``tokens × width`` tensor and one depth per row.

    Made by :meth:`SteppableEncoder.start` for one call and advanced by
    :meth:`SteppableEncoder.advance`; ``cost`` accumulates what it took.
    """

    def __init__(self, hidden: list[Tensor], lengths: list[int], cost: Cost) -> None:
        self.hidden: list[Tensor | None] = list(hidden)
        self.lengths = lengths
        self.depth = [0] * len(hidden)
        self.cost = cost

    def __len__(self) -> int:
        return len(self.hidden)

    def _rows(self, rows: Sequence[int]) -> list[Tensor]:
        out = [self.hidden[r] for r in rows]
        if any(h is None for h in out):
            freed = [r for r, h in zip(rows, out, strict=True) if h is None]
            raise ValueError(f"rows {freed[:5]} were released")
        return out  # type: ignore[return-value]

    def padded(self, rows: Sequence[int], shape: tuple[int, int] | None = None) -> Group:
        """The chosen rows right-padded into one batch (their depths may differ), of ``shape``
        (rows, tokens) when given: rows past the chosen ones are padding that attends to one token."""
        states = self._rows(rows)
        if len(states) == 1 and shape is None:
            hidden = states[0].unsqueeze(0)
            return Group(list(rows), hidden, hidden.new_ones(hidden.shape[:2], dtype=torch.long))
        n_rows, width = shape or (len(rows), max(self.lengths[r] for r in rows))
        # One copy: zero rows of the full width stand in for the padding rows (one more when none is
        # needed but the width is wider than every state), so pad_sequence pads to the shape itself.
        extra = n_rows - len(rows) + (n_rows == len(rows) and width > max(len(s) for s in states))
        filler = [states[0].new_zeros((width, states[0].shape[-1]))] * extra
        hidden = pad_sequence([*states, *filler], batch_first=True)[:n_rows]
        lengths = torch.tensor([self.lengths[r] for r in rows] + [1] * (n_rows - len(rows)))
        mask = (torch.arange(width) < lengths.unsqueeze(1)).long().to(hidden.device)
        return Group(list(rows), hidden, mask)

    def release(self, rows: Sequence[int]) -> None:
        """Forget the states of rows no policy will advance or read again. A row's state is a view
        into the batch it last ran in, so the memory goes once no row of that batch holds it."""
        for r in rows:
            self.hidden[r] = None


def state_fingerprint(state: Mapping[str, Tensor]) -> str:
    """sha256 over named tensors in fp16 (as models are saved): identifies exact weights."""
    digest = hashlib.sha256()
    for name, tensor in state.items():
        digest.update(name.encode())
        digest.update(tensor.detach().to(torch.float16).cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


class SteppableEncoder(nn.Module):
    """Wraps a Hugging Face BERT-like model (BERT, MiniLM, MPNet, ELECTRA, RoBERTa, XLM-RoBERTa) so
    layers can be run one by one.

    ``forward`` equals the backbone's own forward pass; ``start`` and ``advance`` run the same
    layers row by row, at whatever depth each row is.
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
        # Where the body's layers run when not in torch (set by EncoderModel.configure(backend=...));
        # a branch's own layers (``module=``) always run in torch.
        self.runner: LayerRunner | None = None

    def fingerprint(self) -> str:
        """sha256 over the tensors (in fp16, as models are saved): identifies the exact body."""
        return state_fingerprint(self.state_dict())

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
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        token_type_ids: Tensor | None = None,
        cost: Cost | None = None,
    ) -> Tensor:
        """Embed a padded batch: the hidden states before layer 0."""
        kwargs = {"input_ids": input_ids}
        if self._takes_token_types and token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        if cost is not None:
            cost.sequences += input_ids.shape[0]
        hidden = self.backbone.embeddings(**kwargs)
        project = getattr(
            self.backbone, "embeddings_project", None
        )  # ELECTRA's, when narrower than its layers
        return hidden if project is None else project(hidden)

    def run_layer(
        self,
        index: int,
        hidden: Tensor,
        mask: Tensor,
        cost: Cost | None = None,
        module: nn.Module | None = None,
        branch: str = BODY,
        rows: int | None = None,
    ) -> Tensor:
        """Apply layer ``index`` (or ``module`` in its place) to ``hidden`` (rows × tokens × width)
        under the 2-D padding ``mask``; the cost is keyed by ``(branch, index)`` and counts ``rows``
        (default: all; the first ``rows`` when the rest pad a bucketed shape)."""
        if hidden.shape[0] == 0:
            return hidden
        if module is None and self.runner is not None:
            out = self.runner.run(index, hidden, mask)
        else:
            out = self.torch_layer(self.layers[index] if module is None else module, hidden, mask)
        if cost is not None:
            cost.add_layer(
                index,
                hidden.shape[0] if rows is None else rows,
                hidden.shape[1],
                self.hidden_size,
                self.config.intermediate_size,
                branch,
            )
        return out

    def torch_layer(self, layer: nn.Module, hidden: Tensor, mask: Tensor) -> Tensor:
        """``layer`` (one of the body's, or a branch's copy) over ``hidden`` in torch."""
        attn_mask = create_bidirectional_mask(config=self.config, inputs_embeds=hidden, attention_mask=mask)
        if self._relative_bias:
            out = layer(hidden, attn_mask, self.backbone.encoder.compute_position_bias(hidden))
        else:
            out = layer(hidden, attn_mask)
        return out[0] if isinstance(out, tuple) else out

    def through(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        token_type_ids: Tensor | None,
        depths: Sequence[int],
        cost: Cost | None = None,
    ) -> Iterator[tuple[int, Tensor]]:
        """``(depth, hidden states)`` of a padded batch after each of ``depths`` (increasing) layers;
        no layer beyond the last of them runs. Exit heads read their depth's states from here."""
        hidden = self.embed(input_ids, attention_mask, token_type_ids, cost)
        done = 0
        for depth in depths:
            for layer in range(done, depth):
                hidden = self.run_layer(layer, hidden, attention_mask, cost)
            done = depth
            yield depth, hidden

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        token_type_ids: Tensor | None = None,
        num_layers: int | None = None,
        cost: Cost | None = None,
    ) -> Tensor:
        """The hidden states after ``num_layers`` layers (all by default) of a padded batch."""
        hidden = self.embed(input_ids, attention_mask, token_type_ids, cost)
        for index in range(self.num_layers if num_layers is None else num_layers):
            hidden = self.run_layer(index, hidden, attention_mask, cost)
        return hidden

    # -- per-row state ------------------------------------------------------------------------------

    def embedded(
        self,
        features: Features,
        pad_id: int,
        batch_size: int = 64,
        cost: Cost | None = None,
        shapes: Shapes = EXACT,
    ) -> Iterator[Group]:
        """Every row of ``features`` embedded, in length-sorted batches shaped as ``shapes`` says."""
        device = self.backbone.embeddings.word_embeddings.weight.device
        lengths = features.lengths
        for rows in shapes.batches(lengths, batch_size):
            shape = shapes.shape([lengths[r] for r in rows], batch_size)
            batch = {k: v.to(device) for k, v in collate(features, rows, pad_id, shape=shape).items()}
            hidden = self.embed(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
            if cost is not None:
                cost.sequences += len(rows)
            yield Group(rows, hidden, batch["attention_mask"])

    def start(
        self,
        features: Features,
        pad_id: int,
        batch_size: int = 64,
        cost: Cost | None = None,
        shapes: Shapes = EXACT,
    ) -> EncoderState:
        """Embed every row of ``features`` (in length-sorted batches shaped as ``shapes`` says) into a
        state at depth 0."""
        cost = cost if cost is not None else Cost()
        hidden: list[Tensor] = [torch.empty(0)] * len(features)
        lengths = features.lengths
        for group in self.embedded(features, pad_id, batch_size, cost, shapes):
            for j, r in enumerate(group.rows):
                hidden[r] = group.hidden[j, : lengths[r]]
        return EncoderState(hidden, lengths, cost)

    def advance(
        self,
        state: EncoderState,
        rows: Sequence[int],
        batch_size: int = 64,
        layers: Mapping[int, nn.Module] | Sequence[nn.Module] | None = None,
        branch: str = BODY,
        shapes: Shapes = EXACT,
    ) -> list[Group]:
        """Give each of ``rows`` its next layer and write the results back into ``state``.

        Rows are grouped by depth, then into length-sorted batches of ``batch_size``; each group runs
        its depth's layer: ``layers[depth]`` from a sequence of layers (a branch's own stack), or
        from a mapping where it has that depth, costed under ``branch``; else the backbone's. Returns
        the groups that ran, with their padded outputs, so a head can read them without padding again.
        """
        by_depth: dict[int, list[int]] = {}
        for r in rows:
            by_depth.setdefault(state.depth[r], []).append(r)
        groups = []
        for depth in sorted(by_depth):
            module = _branch_layer(layers, depth)
            if module is None and depth >= self.num_layers:
                raise IndexError(f"rows are already after layer {depth}; the encoder has {self.num_layers}")
            members = by_depth[depth]
            for pos in shapes.batches([state.lengths[r] for r in members], batch_size):
                chosen = [members[p] for p in pos]
                group = state.padded(chosen, shapes.shape([state.lengths[r] for r in chosen], batch_size))
                out = self.run_layer(
                    depth,
                    group.hidden,
                    group.mask,
                    state.cost,
                    module,
                    BODY if module is None else branch,
                    rows=len(chosen),
                )
                for j, r in enumerate(chosen):
                    state.hidden[r] = out[j, : state.lengths[r]]
                    state.depth[r] = depth + 1
                groups.append(Group(chosen, out, group.mask))
        return groups


def check_exits(exits: Sequence[int], depth: int) -> None:
    """Exit layers must increase within 1..depth and end at ``depth`` (layers above the last exit
    would never run)."""
    if list(exits) != sorted(set(exits)) or not exits or exits[0] < 1 or exits[-1] != depth:
        raise ConfigError(
            f"exits must be increasing layer numbers in 1..{depth} ending at {depth} (layers above the "
            f"last exit would never run), got {list(exits)}"
        )


def _branch_layer(
    layers: Mapping[int, nn.Module] | Sequence[nn.Module] | None, depth: int
) -> nn.Module | None:
    if layers is None:
        return None
    if isinstance(layers, Mapping):
        return layers.get(depth)
    if depth >= len(layers):
        raise IndexError(f"rows are already after layer {depth}; the branch has {len(layers)}")
    return layers[depth]


def masked_mean(hidden: Tensor, mask: Tensor) -> Tensor:
    """Mean of token vectors over the non-padding positions of each row."""
    weights = mask.to(hidden.dtype).unsqueeze(
        1
    )  # rows x 1 x tokens: one product, no rows x tokens x width copy
    return torch.bmm(weights, hidden).squeeze(1) / weights.sum(dim=2).clamp(min=1.0)


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


def pool_segments(hidden: Tensor, segment_ids: Tensor, n_segments: int) -> tuple[Tensor, Tensor]:
    """Mean of the token states of each segment 1..n: (rows × n × width, rows × n present-mask).

    ``segment_ids`` (rows × tokens, from :class:`~sieveqa.features.Features`) is -1 on special and
    padding tokens and 0 on the question, which are never pooled; a segment with no token in a row
    (cut off by a window) pools to zeros and is marked absent.
    """
    segment_ids = segment_ids.to(hidden.device)
    wanted = torch.arange(1, n_segments + 1, device=hidden.device)
    weights = (segment_ids.unsqueeze(-1) == wanted).to(hidden.dtype)
    counts = weights.sum(dim=1)
    sums = torch.einsum("rtn,rtd->rnd", weights, hidden)
    return sums / counts.clamp(min=1.0).unsqueeze(-1), counts > 0
