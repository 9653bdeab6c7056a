"""Exact inner-product search over unit vectors with FAISS (``IndexFlatIP``), string ids, saved with
FAISS's own writer. Vectors come from outside (``sieveqa.models.embedder``), so this layer needs no model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sieveqa.errors import require_extra

__all__ = ["DenseIndex"]

VECTORS = "vectors.faiss"
IDS = "ids.json"


def _faiss() -> Any:
    return require_extra("faiss", "dense", "dense retrieval")


class DenseIndex:
    """Cosine search over L2-normalised float32 vectors (inner product = cosine)."""

    def __init__(self, ids: list[str], index: object) -> None:
        self._ids = ids
        self._index = index

    @classmethod
    def build(cls, ids: Sequence[str], vectors: np.ndarray) -> DenseIndex:
        ids = [str(i) for i in ids]
        if vectors.ndim != 2 or len(ids) != len(vectors):
            raise ValueError(f"DenseIndex.build: {len(ids)} ids but vectors of shape {vectors.shape}")
        index = _faiss().IndexFlatIP(vectors.shape[1])
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        return cls(ids, index)

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Append vectors (the ids must be new)."""
        self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        self._ids.extend(str(i) for i in ids)

    def remove(self, ids: Iterable[str]) -> None:
        """Drop the vectors of ``ids`` (those it does not hold are ignored)."""
        gone = set(ids)
        keep = [i for i, x in enumerate(self._ids) if x not in gone]
        if len(keep) == len(self._ids):
            return
        vectors = self._index.reconstruct_n(0, self._index.ntotal)[keep]
        index = _faiss().IndexFlatIP(self.dim)
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        self._index, self._ids = index, [self._ids[i] for i in keep]

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def dim(self) -> int:
        return int(self._index.d)

    def search_many(self, queries: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """The ``min(k, len(self))`` nearest ``(id, score)`` pairs per query vector, best first."""
        k = min(k, len(self._ids))
        if k <= 0 or len(queries) == 0:
            return [[] for _ in range(len(queries))]
        scores, rows = self._index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        return [
            [(self._ids[r], float(s)) for r, s in zip(row, score, strict=True) if r >= 0]
            for row, score in zip(rows, scores, strict=True)
        ]

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        _faiss().write_index(self._index, str(folder / VECTORS))
        (folder / IDS).write_text(json.dumps(self._ids), encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path) -> DenseIndex:
        folder = Path(folder)
        index = _faiss().read_index(str(folder / VECTORS))
        return cls(json.loads((folder / IDS).read_text(encoding="utf-8")), index)
