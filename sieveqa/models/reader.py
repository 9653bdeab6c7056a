"""The anytime extractive reader (adaptive computation for ODQA, sections 2.3 and 3.1).

After each exit layer (every layer by default) two heads read the hidden states of a
``[CLS] question [SEP] passage [SEP]`` row: span start/end logits over the passage's tokens, and a
has-answer logit from the first token (an MLP, as the paper's). A passage longer than ``max_length``
is read in overlapping windows, each a row; answers are located by the tokens' character offsets in
the passage, never by re-tokenizing. ``temperatures`` (one per exit, fitted on held-out data by
``sieveqa.training.reader.calibrate``) turn has-answer logits into calibrated probabilities.

What reading a passage at an exit gives is a :class:`SpanGuess`: the calibrated has-answer logit and
the best span with its score, ``log P(has) + log P(start) + log P(end)`` (starts and ends softmaxed
over the row's passage tokens), which is comparable across passages and windows.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Self

import torch
from torch import Tensor, nn

from sieveqa.backbones import Backbone
from sieveqa.encoder import Cost, check_exits
from sieveqa.errors import ConfigError
from sieveqa.features import Features
from sieveqa.models.configs import ReaderConfig
from sieveqa.models.encoder_model import EncoderModel, ModelConfig
from sieveqa.models.heads import ClassifierHead

NEG = -1e4  # masked logit: far below any real one, finite in fp16/bf16


@dataclass(frozen=True)
class SpanGuess:
    """One row's (or passage's) reading at one exit: has-answer logit, best span (characters in the
    passage; ``start == end == -1`` when the row has no passage tokens) and ``span``, its
    ``log P(start) + log P(end)``."""

    has_logit: float
    start: int
    end: int
    span: float

    @property
    def score(self) -> float:
        """``log P(has) + log P(start) + log P(end)``: comparable across passages and windows."""
        return _logsigmoid(self.has_logit) + self.span

    def weighted(self, has_weight: float) -> float:
        """``has_weight * log P(has) + log P(start) + log P(end)`` (1: :attr:`score`)."""
        return has_weight * _logsigmoid(self.has_logit) + self.span

    def scaled(self, temperature: float) -> SpanGuess:
        """The same reading with its has-answer logit divided by ``temperature`` (calibration)."""
        return replace(self, has_logit=self.has_logit / temperature)


def _logsigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


def combine(windows: Sequence[SpanGuess]) -> SpanGuess:
    """A passage's reading from its windows' readings: the most confident has-answer logit and the
    best-scoring span."""
    best = max(windows, key=lambda g: g.score)
    return replace(best, has_logit=max(g.has_logit for g in windows))


def span_scores(
    start: Tensor, end: Tensor, context: Tensor, max_tokens: int
) -> tuple[Tensor, Tensor, Tensor]:
    """Best ``(i, j)`` per row with ``i <= j < i + max_tokens``, both on passage tokens: returns the
    start and end token indices and ``log P(start) + log P(end)`` (softmax over passage tokens)."""
    start = start.float().masked_fill(~context, NEG).log_softmax(-1)
    end = end.float().masked_fill(~context, NEG).log_softmax(-1)
    n = start.shape[-1]
    pos = torch.arange(n, device=start.device)
    band = (pos.unsqueeze(1) <= pos.unsqueeze(0)) & (pos.unsqueeze(0) < pos.unsqueeze(1) + max_tokens)
    pair = start.unsqueeze(2) + end.unsqueeze(1)
    pair = pair.masked_fill(~(band & context.unsqueeze(2) & context.unsqueeze(1)), float("-inf"))
    best, flat = pair.flatten(1).max(dim=1)
    return flat // n, flat % n, best


class ReaderModel(EncoderModel):
    """An extractive reader with span and has-answer heads after each exit layer."""

    kind = "reader"
    config_class = ReaderConfig
    config: ReaderConfig

    def __init__(self, config: ReaderConfig | None = None, backbone: Backbone | None = None) -> None:
        super().__init__(replace(config) if config else ReaderConfig(), backbone)
        cfg, depth = self.config, self.encoder.num_layers
        cfg.exits = list(cfg.exits) if cfg.exits else list(range(1, depth + 1))
        check_exits(cfg.exits, depth)
        if cfg.temperatures is not None and (
            len(cfg.temperatures) != len(cfg.exits) or min(cfg.temperatures) <= 0
        ):
            raise ConfigError(
                f"temperatures must be {len(cfg.exits)} positive numbers, got {cfg.temperatures}"
            )
        hidden = self.encoder.hidden_size
        self.span_heads = nn.ModuleList(nn.Linear(hidden, 2) for _ in cfg.exits)
        self.has_heads = nn.ModuleList(
            ClassifierHead(hidden, cfg.has_answer_layers, cfg.has_answer_pooling, cfg.dropout)
            for _ in cfg.exits
        )
        self.dropout = nn.Dropout(cfg.dropout)
        self.eval()

    @property
    def exits(self) -> list[int]:
        assert self.config.exits is not None
        return self.config.exits

    def exit_index(self, depth: int) -> int | None:
        """Which exit reads the states after ``depth`` layers (None: no head there)."""
        return self.exits.index(depth) if depth in self.exits else None

    def temperature(self, exit_index: int) -> float:
        temps = self.config.temperatures
        return 1.0 if temps is None else float(temps[exit_index])

    def featurize(self, questions: list[str], texts: list[str]) -> Features:
        """Rows ``[CLS] question [SEP] passage [SEP]`` with token offsets; long passages windowed."""
        cfg = self.config
        stride = cfg.stride if cfg.stride is not None else cfg.max_length // 4
        return self.featurizer.pairs(questions, texts, cfg.max_length, stride, offsets=True)

    def heads(self, index: int, hidden: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Exit ``index`` on states (rows × tokens × width): has-answer, start and end logits."""
        start, end = self.span_heads[index](self.dropout(hidden)).unbind(-1)
        return self.has_heads[index](hidden, mask), start, end

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor,
        token_type_ids: Tensor | None = None,
        exits: list[int] | None = None,
        cost: Cost | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Every asked exit's logits (all by default): has (exits × rows), start and end
        (exits × rows × tokens). Layers run only as deep as the deepest exit asked for."""
        order = list(range(len(self.exits))) if exits is None else exits
        wanted = sorted(set(order))
        states = self.encoder.through(
            input_ids, attention_mask, token_type_ids, [self.exits[i] for i in wanted], cost
        )
        out = {
            i: self.heads(i, hidden, attention_mask) for i, (_, hidden) in zip(wanted, states, strict=True)
        }
        return tuple(torch.stack([out[i][k] for i in order]) for k in range(3))  # type: ignore[return-value]

    def guesses(
        self,
        index: int,
        has: Tensor,
        start: Tensor,
        end: Tensor,
        context: Tensor,
        offsets: Sequence[Sequence[tuple[int, int]]],
        calibrated: bool = True,
    ) -> list[SpanGuess]:
        """Rows' readings at exit ``index``: has-answer logit (divided by the exit's temperature when
        ``calibrated``) and best character span. ``context`` (rows × tokens, bool) marks passage
        tokens; ``offsets`` are each row's token spans."""
        has = has.float() / (self.temperature(index) if calibrated else 1.0)
        i, j, span = span_scores(start, end, context.to(start.device), self.config.max_answer_tokens)
        out = []
        for r in range(has.shape[0]):
            if not bool(context[r].any()):
                out.append(SpanGuess(float(has[r]), -1, -1, float("-inf")))
                continue
            a, b = offsets[r][int(i[r])][0], offsets[r][int(j[r])][1]
            out.append(SpanGuess(float(has[r]), a, b, float(span[r])))
        return out

    def read(
        self,
        questions: Sequence[str],
        passages: Sequence[Sequence[str]],
        progress: bool = False,
        calibrated: bool = True,
    ) -> tuple[list[list[list[SpanGuess]]], Cost]:
        """Read every passage of every question to full depth: ``[question][passage][exit]`` guesses
        (a passage's windows combined) and what it cost. The static readers and the schedulers'
        replay tables (``calibrated=False``: raw logits) come from this."""
        started = time.perf_counter()
        flat_q = [q for q, ps in zip(questions, passages, strict=True) for _ in ps]
        features = self.featurize(flat_q, [p for ps in passages for p in ps])
        assert features.offsets is not None
        rows: list[list[SpanGuess]] = [[] for _ in range(len(features))]
        cost = Cost()
        with self.inference() as model:
            for batch_rows, batch in self.batches(features, progress, "reading", segments=True, cost=cost):
                n = len(batch_rows)  # rows past n pad the batch to its shape
                context = batch.pop("segment_ids")[:n] == 1
                has, start, end = (x[:, :n] for x in model(**batch, cost=cost))
                offsets = [features.offsets[r] for r in batch_rows]
                for e in range(len(self.exits)):
                    for r, guess in zip(
                        batch_rows,
                        self.guesses(e, has[e], start[e], end[e], context, offsets, calibrated),
                        strict=True,
                    ):
                        rows[r].append(guess)
        by_pair: list[list[list[SpanGuess]]] = [[] for _ in flat_q]
        for r, guesses in enumerate(rows):
            by_pair[features.source[r]].append(guesses)
        combined = [[combine([w[e] for w in windows]) for e in range(len(self.exits))] for windows in by_pair]
        out, at = [], 0
        for ps in passages:
            out.append(combined[at : at + len(ps)])
            at += len(ps)
        cost.seconds = time.perf_counter() - started
        return out, cost

    @classmethod
    def start_from(cls, other: EncoderModel, config: ModelConfig) -> Self:
        """A reader over another trained model's body (e.g. the default ranker's), new heads; with
        ``num_layers`` set, only that body's first layers (an efficient reader)."""
        assert isinstance(config, ReaderConfig)
        layers = config.num_layers if config.num_layers is not None else other.config.num_layers
        reader = cls(replace(config, backbone=other.config.backbone, num_layers=layers))
        depth = reader.encoder.num_layers
        state = {
            k: v
            for k, v in other.encoder.state_dict().items()
            if not (m := re.search(r"\.layer\.(\d+)\.", k)) or int(m.group(1)) < depth
        }
        reader.encoder.load_state_dict(state)
        return reader.to(other.device)
