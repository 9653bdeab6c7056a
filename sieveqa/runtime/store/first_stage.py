"""The first stage of a store search: a cheap look over every answer that keeps the best ``k`` for HAS.

Two signals, each optional when the store is built:

- **vector**: one pooled vector per answer, the mean of its stored rows (the mean of its ±1 bits for
  HAS), L2-normalised, in a FAISS index searched by inner product with the question's u_q. So the first
  stage scores cos(u_q, mean b_i), HAS's own score with the attention made uniform. Up to
  ``FLAT_MAX`` answers the index is flat (fp16 codes, every answer scored); above it, an inverted file
  (IVF) over 8-bit codes, which scores only the ``nprobe`` nearest lists. Indexes are memory-mapped.
- **bm25**: BM25 (``sieveqa.retrieval.BM25Index``) over the answers' texts, memory-mapped.

and two ways to fuse them: reciprocal rank fusion (``rrf``) and a weighted sum of min-max normalised
scores (``mix``), both over the union of the two top-``k`` lists.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from sieveqa.errors import ConfigError, require_extra
from sieveqa.retrieval.bm25 import BM25Index
from sieveqa.runtime.store.format import Segment

VECTOR_INDEXES = ("auto", "flat", "ivf", "none")
FLAT_MAX = 200_000
#: An IVF search reads 1 / IVF_SHARE of its lists by default: on 87k real sentences (dev questions) a
#: quarter kept 98% of the flat search's top 10, an eighth 94.5% (docs/RESULTS.md).
IVF_SHARE = 4
VECTORS = "vectors.faiss"
BM25_DIR = "bm25"
#: RRF's constant (Cormack et al. 2009): a hit at rank r adds 1 / (RRF_C + r).
RRF_C = 60
#: Rows pooled per step while building (bounds the unpacked floats held at once).
_POOL_TOKENS = 1 << 16

Hits = tuple[np.ndarray, np.ndarray]  # global rows and their scores, best first


def _faiss() -> Any:
    return require_extra("faiss", "dense", "the vector first stage of answer stores")


def choose_vector_index(count: int, asked: str) -> str | None:
    """The index a store of ``count`` answers gets: ``asked``, or by size for ``auto``."""
    if asked not in VECTOR_INDEXES:
        raise ConfigError(f"--vector-index must be one of {', '.join(VECTOR_INDEXES)}, got {asked!r}")
    if asked == "none":
        return None
    if asked == "auto":
        return "flat" if count <= FLAT_MAX else "ivf"
    return asked


def pooled_vectors(kind: str, dim: int, segments: Sequence[Segment]) -> Iterator[np.ndarray]:
    """Each answer's stored rows averaged (a vector store's vectors as they are), L2-normalised,
    segment by segment and a bounded number of stored rows at a time."""
    for seg in segments:
        for start, stop in seg.blocks(_POOL_TOKENS):
            lo, hi = int(seg.offsets[start]), int(seg.offsets[stop])
            block = seg.values[lo:hi]
            if kind == "vector":
                yield _normalise(np.asarray(block, dtype=np.float32))
                continue
            rows = np.unpackbits(block, axis=1, count=dim) if kind == "bits" else np.asarray(block)
            sums = np.add.reduceat(rows.astype(np.float32), seg.offsets[start:stop] - lo, axis=0)
            if kind == "bits":  # the mean of ±1 values from the mean of the bits
                sums = 2 * sums - np.diff(seg.offsets[start : stop + 1])[:, None]
            yield _normalise(sums)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)


def build_vector_index(vectors: np.ndarray, index: str, file: Path, seed: int = 0) -> None:
    """Write a FAISS index over ``vectors`` (N × D, unit length) to ``file``: ``flat`` or ``ivf``."""
    faiss = _faiss()
    count, dim = vectors.shape
    if index == "flat":
        built = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    else:
        lists = nlist(count)
        built = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(dim), dim, lists, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        sample = np.random.default_rng(seed).choice(count, min(count, 64 * lists), replace=False)
        built.cp.seed = seed
        built.train(np.asarray(vectors[np.sort(sample)], dtype=np.float32))
    for start in range(0, count, 65536):
        built.add(np.asarray(vectors[start : start + 65536], dtype=np.float32))
    faiss.write_index(built, str(file))


def nlist(count: int) -> int:
    """Inverted lists for ``count`` vectors: about √count (a power of two), at least 16, but never
    more than FAISS can train from them (39 vectors a list)."""
    return max(1, min(max(16, 2 ** round(math.log2(max(math.sqrt(count), 1)))), count // 39))


def collect_vectors(kind: str, dim: int, segments: Sequence[Segment], progress: bool) -> np.ndarray:
    """Every answer's pooled vector, in store order, as one fp16 array (half the RAM of fp32)."""
    count = sum(len(s) for s in segments)
    out = np.empty((count, dim), dtype=np.float16)
    done = 0
    with tqdm(total=count, desc="pooling answers", unit="answer", disable=not progress) as bar:
        for block in pooled_vectors(kind, dim, segments):
            out[done : done + len(block)] = block
            done += len(block)
            bar.update(len(block))
    return out


class FirstStage:
    """The first-stage indexes of one store, opened read-only and memory-mapped."""

    def __init__(self, folder: Path, entry: dict[str, Any]) -> None:
        self.folder, self.entry = folder, entry

    @cached_property
    def vector(self) -> Any:
        """The FAISS index (opened on first use), or None."""
        if not self.entry.get("vector"):
            return None
        faiss = _faiss()
        # Flat codes and inverted lists each have their own mapping flag (they do not combine).
        mapped = faiss.IO_FLAG_MMAP_IFC if self.entry["vector"] == "flat" else faiss.IO_FLAG_MMAP
        return faiss.read_index(str(self.folder / VECTORS), mapped | faiss.IO_FLAG_READ_ONLY)

    @cached_property
    def bm25(self) -> BM25Index | None:
        """The BM25 index (opened on first use), or None."""
        return BM25Index.load(self.folder / BM25_DIR, mmap=True) if self.entry.get("bm25") else None

    @property
    def signals(self) -> list[str]:
        return [name for name in ("vector", "bm25") if self.entry.get(name)]

    def search_vectors(self, queries: np.ndarray, k: int, nprobe: int | None = None) -> list[Hits]:
        """The ``k`` answers of highest cos(u_q, pooled) per query vector (Q × D); an IVF index
        searches ``nprobe`` lists (default: 1 / ``IVF_SHARE`` of them)."""
        if self.vector is None:
            raise ConfigError(f"{self.folder}: the store was built without a vector first stage")
        if self.entry["vector"] == "ivf":
            lists = int(_faiss().extract_index_ivf(self.vector).nlist)
            nprobe = max(1, lists // IVF_SHARE) if nprobe is None else nprobe
            _faiss().ParameterSpace().set_index_parameter(self.vector, "nprobe", nprobe)
        scores, rows = self.vector.search(_normalise(np.asarray(queries, dtype=np.float32)), k)
        return [(r[r >= 0], s[r >= 0]) for r, s in zip(rows, scores, strict=True)]

    def search_bm25(self, questions: Sequence[str], k: int) -> list[Hits]:
        """The ``k`` answers of highest BM25 score per question (only those sharing a word with it)."""
        if self.bm25 is None:
            raise ConfigError(f"{self.folder}: the store was built without BM25 (index build --bm25)")
        out = []
        for found in self.bm25.search_many(list(questions), k):
            hits = [(i, s) for i, s in found if s > 0]  # a zero shares no word: an arbitrary answer
            rows = np.fromiter((int(i) for i, _ in hits), dtype=np.int64, count=len(hits))
            out.append((rows, np.asarray([s for _, s in hits], dtype=np.float32)))
        return out


def fuse(method: str, lists: Sequence[Hits], k: int, weight: float = 0.5) -> np.ndarray:
    """The best ``k`` rows of several hit lists: ``rrf`` (Σ 1 / (60 + rank)), or ``mix``
    (weight · first + (1 − weight) · second, each min-max normalised over its own hits)."""
    total: dict[int, float] = {}
    for position, (rows, scores) in enumerate(lists):
        if method == "rrf":
            parts = 1.0 / (RRF_C + np.arange(1, len(rows) + 1))
        else:
            span = float(scores.max() - scores.min()) if len(scores) else 0.0
            norm = (scores - scores.min()) / span if span > 0 else np.ones_like(scores)
            parts = norm * (weight if position == 0 else 1.0 - weight)
        for row, part in zip(rows.tolist(), parts.tolist(), strict=True):
            total[row] = total.get(row, 0.0) + part
    best = sorted(total, key=lambda r: (-total[r], r))[:k]
    return np.asarray(best, dtype=np.int64)
