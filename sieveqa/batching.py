"""Batches of token rows for the model: which rows go together, the padded tensors they make, and a
thread that makes the next ones while the model runs the current one.

A batch is shaped one of two ways (:class:`Shapes`); either way rows are sorted by length and a batch
closes early once padding would pass ``PAD_SLACK`` of its tokens:

- **exact** (the default): padded to its longest row. The least padding, but calls keep making new
  (rows, tokens) shapes.
- **bucketed** (the default for torch in fp16 or bf16 on CUDA): tokens padded up to a bucket width (a
  multiple of 16 up to 128, of 32 up to 256, then of 64) and rows up to a power of two to 8, then a
  multiple of 8. CUDA's half-precision kernels are built per new shape (a GPU check measured each at
  5-20x a warm call), so a process now meets under a hundred shapes, which ``EncoderModel.warm_up``
  can pay for at load. On a CPU in bf16 (oneDNN also builds a kernel per shape) it was measured not to
  pay on an AVX512-BF16 CPU: the first pass of exact shapes was within 20% of a warm one there, and
  the padding cost more (docs/RESULTS.md, issue 46); ``model.buckets = True`` turns it on.

Training batches always take bucket widths (``collate(..., bucketed=True)``; rows as chosen). On a
CPU they measured no slower than exact widths and kept a reader run's memory flat where exact widths
grew it by 1.3 GiB in 300 steps (docs/RESULTS.md, issue 43); on a GPU they are a dozen shapes, not one
per length.

Padding is masked either way, so a row's scores do not depend on its batch's shape; a padding row
attends to its first token only (a row with no token to attend to is undefined in some kernels).
"""

from __future__ import annotations

import math
import queue
import random
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import torch
from torch import Tensor
from tqdm.auto import tqdm

from sieveqa.errors import ConfigError
from sieveqa.features import Features
from sieveqa.profiling import stage, timed

if TYPE_CHECKING:
    from sieveqa.encoder import Cost

T = TypeVar("T")

#: Inference batches close early once padding would exceed this share of their tokens ...
PAD_SLACK = 0.1
#: ... but hold at least this many rows (fewer, and the matrix products get too thin to be fast).
MIN_ROWS = 4
#: Bucket widths: up to each bound, a multiple of its step (None: no bound).
TOKEN_STEPS: tuple[tuple[int | None, int], ...] = ((128, 16), (256, 32), (None, 64))


def bucket_width(longest: int, limit: int | None = None) -> int:
    """The bucket width of a batch whose longest row has ``longest`` tokens (at most ``limit``, the
    model's ``max_length``, itself a bucket)."""
    for bound, step in TOKEN_STEPS:
        if bound is None or longest <= bound:
            width = step * math.ceil(longest / step)
            break
    return width if limit is None else max(min(width, limit), longest)


def bucket_rows(n: int, batch_size: int) -> int:
    """The bucket row count of a batch of ``n`` rows: the next power of two up to 8, then the next
    multiple of 8, at most ``batch_size``."""
    if n >= batch_size:
        return n
    return min(1 << max(n - 1, 0).bit_length() if n <= 8 else 8 * math.ceil(n / 8), batch_size)


@dataclass(frozen=True)
class Shapes:
    """How inference batches are shaped: exact, or in buckets (see the module's docstring) for rows
    of at most ``limit`` tokens (the model's ``max_length``, itself a bucket)."""

    buckets: bool = False
    limit: int | None = None

    def batches(self, lengths: Sequence[int], batch_size: int) -> list[list[int]]:
        """Row indices grouped into inference batches (the same groups either way: bucketing only
        pads them further)."""
        return length_batches(lengths, batch_size)

    def shape(self, lengths: Sequence[int], batch_size: int) -> tuple[int, int]:
        """(rows, tokens) of the padded batch holding rows of these ``lengths``."""
        longest = max(lengths)
        if not self.buckets:
            return len(lengths), longest
        return bucket_rows(len(lengths), batch_size), bucket_width(longest, self.limit)

    def grid(self, batch_size: int) -> list[tuple[int, int]]:
        """Every (rows, tokens) shape bucketed batches of up to ``batch_size`` rows can take (what a
        warm-up runs); none when exact, or without a ``limit``."""
        if not self.buckets or self.limit is None:
            return []
        rows = sorted({bucket_rows(n, batch_size) for n in range(1, batch_size + 1)})
        widths = sorted({bucket_width(n, self.limit) for n in range(1, self.limit + 1)})
        return [(r, w) for r in rows for w in widths]


EXACT = Shapes()


@timed("collate")
def collate(
    features: Features,
    rows: Sequence[int],
    pad_id: int,
    segments: bool = False,
    shape: tuple[int, int] | None = None,
    bucketed: bool = False,
) -> dict[str, Tensor]:
    """Right-pad the chosen rows into ``input_ids``, ``attention_mask`` and ``token_type_ids``
    tensors (and ``segment_ids``, padded with -1, when asked), ``shape`` (rows, tokens) if given,
    else as many rows as chosen and the longest one's tokens, rounded up to its bucket width (at most
    ``features.max_length``) when ``bucketed``."""
    rows = list(rows)
    if segments and features.segment_ids is None:
        raise ValueError("these features carry no segment ids")
    lengths = np.fromiter((len(features.input_ids[i]) for i in rows), np.int64, len(rows))
    longest = int(lengths.max(initial=0))
    n_rows, width = shape or (len(rows), bucket_width(longest, features.max_length) if bucketed else longest)
    if n_rows < len(rows) or width < lengths.max(initial=0):
        raise ValueError(
            f"shape {(n_rows, width)} cannot hold {len(rows)} rows of up to {lengths.max()} tokens"
        )
    real = np.arange(width) < lengths[:, None]
    total = int(lengths.sum())

    def padded(per_row: Sequence[Sequence[int]], fill: int) -> Tensor:
        out = np.full((n_rows, width), fill, np.int64)
        out[: len(rows)][real] = np.fromiter(chain.from_iterable(per_row[i] for i in rows), np.int64, total)
        return torch.from_numpy(out)

    mask = np.zeros((n_rows, width), np.int64)
    mask[: len(rows)] = real
    mask[len(rows) :, 0] = 1  # a padding row attends to its one (pad) token
    batch = {
        "input_ids": padded(features.input_ids, pad_id),
        "attention_mask": torch.from_numpy(mask),
        "token_type_ids": padded(features.token_type_ids, 0),
    }
    if segments:
        batch["segment_ids"] = padded(features.segment_ids or [], -1)
    return batch


def length_batches(
    lengths: Sequence[int], batch_size: int, rng: random.Random | None = None, pool_batches: int = 64
) -> list[list[int]]:
    """Group row indices into batches of similar length.

    Without ``rng`` (inference) rows are sorted by length and cut into batches of at most
    ``batch_size``, each closed early (from ``MIN_ROWS`` rows on) when the next, longer row would pad
    it by more than ``PAD_SLACK`` of its tokens: a few dozen pairs of mixed lengths, as a served
    request brings, then run as several short batches instead of one padded to the longest. With
    ``rng`` (training) rows are shuffled, then sorted within pools of ``pool_batches`` batches, and the
    batches shuffled: little padding, yet a different mix of rows every epoch.
    """
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    order = list(range(len(lengths)))
    if rng is None:
        order.sort(key=lambda i: lengths[i])
        out: list[list[int]] = [[]]
        tokens = 0
        for i in order:
            rows, n = len(out[-1]), lengths[i]
            if rows >= batch_size or (rows >= MIN_ROWS and (rows + 1) * n > (1 + PAD_SLACK) * (tokens + n)):
                out.append([])
                tokens = 0
            out[-1].append(i)
            tokens += n
        return out if order else []
    rng.shuffle(order)
    batches: list[list[int]] = []
    pool = batch_size * pool_batches
    for s in range(0, len(order), pool):
        chunk = sorted(order[s : s + pool], key=lambda i: lengths[i])
        batches.extend(chunk[t : t + batch_size] for t in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


_DONE = object()


def prefetched(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """``items``, made by a thread of its own up to ``depth`` ahead of the consumer, so their host
    work (tokenizing, padding, pinning) overlaps with what the consumer does with each (the model's
    forward). An exception in the thread is raised in the consumer; a consumer that stops early stops
    the thread."""
    box: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                box.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(_DONE)
        except BaseException as err:  # handed to the consumer, raised there
            put(_Raised(err))

    worker = threading.Thread(target=produce, name="sieveqa-prefetch", daemon=True)
    worker.start()
    try:
        while (item := box.get()) is not _DONE:
            if isinstance(item, _Raised):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        worker.join()


@dataclass(frozen=True)
class _Raised:
    error: BaseException


def pinned(batch: dict[str, Tensor], device: torch.device) -> dict[str, Tensor]:
    """The batch in page-locked memory when it goes to a CUDA device (so its copy can be
    asynchronous), else as it is."""
    return {k: v.pin_memory() for k, v in batch.items()} if device.type == "cuda" else batch


def to_device(batch: dict[str, Tensor], device: torch.device) -> dict[str, Tensor]:
    """The batch on ``device``; from pinned memory the copy does not block the host."""
    return {k: v.to(device, non_blocking=v.is_pinned()) for k, v in batch.items()}


def on_device(
    made: Iterator[tuple[list[int], dict[str, Tensor]]],
    device: torch.device,
    total: int | Callable[[], int] | None,
    progress: bool = False,
    desc: str = "scoring",
    cost: Cost | None = None,
    overlap: bool | None = None,
) -> Iterator[tuple[list[int], dict[str, Tensor]]]:
    """Host batches ``(rows, tensors)`` (``total`` rows in all, if known; a callable: the rows known so
    far, for inputs whose rows are counted as they are made, a long text's windows) moved to ``device``
    one by one, made ahead by a thread with ``overlap`` (default: on CUDA). What the consumer meters
    into ``cost`` for a batch counts its first ``len(rows)`` rows only (the rest pad a bucketed shape)."""
    if device.type == "cuda" if overlap is None else overlap:
        made = prefetched(made)
    known = total if not callable(total) else None
    with tqdm(total=known, desc=desc, unit="pair", disable=not progress, leave=False) as bar:
        for rows, batch in made:
            if callable(total) and bar.total != total():
                bar.total = total()
                bar.refresh()
            before = None if cost is None else cost.snapshot()
            with stage("model", cost):  # the consumer's forward pass, between two batches
                yield rows, to_device(batch, device)
            if cost is not None and before is not None:
                cost.count_rows(before, len(rows), len(batch["input_ids"]))
            bar.update(len(rows))
