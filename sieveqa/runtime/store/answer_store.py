"""Answer stores: answers encoded once by a HashingModel, kept on disk, memory-mapped at question time.

The format is in ``sieveqa.runtime.store.format``; writing (resumable builds, appends) in
``store_build``; the first stage (pooled vectors in FAISS, BM25) in ``first_stage``.

Reading is bounded: answers are addressed by *row* (their position in the store), only the rows asked
for are unpacked, and a full scan walks the store a bounded number of token rows at a time. Ids and
texts are read from the mapped records on demand; the id → row map is built on the first lookup by id.
A store refuses a model whose signature (backbone, layers, composition, hashing, β, encoder weights)
differs from the one that built it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from sieveqa.errors import StoreError
from sieveqa.models.configs import StoreKind
from sieveqa.models.hashing import HashingModel
from sieveqa.runtime.store import build as store_build
from sieveqa.runtime.store.first_stage import FirstStage
from sieveqa.runtime.store.format import (
    FILES,
    Segment,
    check_signature,
    model_signature,
    open_segment,
    read_manifest,
    row_bytes,
    verify_files,
)

#: Stores whose representations take at most this many bytes are checked against their sha256 at every
#: open; larger ones only when asked (``index info`` does), as reading gigabytes would dominate a search.
VERIFY_MAX = 256 << 20
#: Token rows unpacked at once by a full scan (bounds its memory: 16k rows × D floats, 25 MB at D 384).
SCAN_TOKENS = 1 << 14


class AnswerStore:
    """A read-mostly collection of encoded answers (see ``store_format`` for the files)."""

    def __init__(self, path: Path, manifest: dict[str, Any], segments: list[Segment], verify: bool) -> None:
        self.path, self.manifest, self.segments = path, manifest, segments
        self.starts = np.cumsum([0] + [len(s) for s in segments])
        entry = manifest.get("first_stage")
        if entry is not None and verify:
            verify_files(path, entry["dir"], entry["sha256"])
        self.first_stage = None if entry is None else FirstStage(path / entry["dir"], entry)

    # -- properties ---------------------------------------------------------------------------------

    @property
    def kind(self) -> StoreKind:
        return self.manifest["kind"]

    @property
    def dim(self) -> int:
        return int(self.manifest["model"]["dim"])

    def __len__(self) -> int:
        return int(self.starts[-1])

    @property
    def ids(self) -> list[str]:
        """Every answer id in row order (reads every record)."""
        return [seg.record(row)[0] for seg in self.segments for row in range(len(seg))]

    @cached_property
    def _rows(self) -> dict[str, int]:
        return {answer_id: i for i, answer_id in enumerate(self.ids)}

    def __contains__(self, answer_id: object) -> bool:
        return answer_id in self._rows

    def record(self, row: int) -> tuple[str, str]:
        """``(id, text)`` of the answer at ``row``."""
        s = int(np.searchsorted(self.starts, row, side="right")) - 1
        return self.segments[s].record(row - int(self.starts[s]))

    def text(self, answer_id: str) -> str:
        return self.record(int(self.rows_of([answer_id])[0]))[1]

    def disk_bytes(self) -> int:
        """Bytes of the stored representations on disk (values and token offsets)."""
        return sum((self.path / seg.name / f).stat().st_size for seg in self.segments for f in FILES[:2])

    def folder_bytes(self) -> int:
        """Bytes of everything the store reads: segments, first stage and manifest."""
        folders = [seg.name for seg in self.segments]
        if self.first_stage is not None:
            folders.append(self.manifest["first_stage"]["dir"])
        files = [f for name in folders for f in (self.path / name).rglob("*") if f.is_file()]
        return sum(f.stat().st_size for f in files) + (self.path / "manifest.json").stat().st_size

    def ram_bytes(self) -> int:
        """Bytes the representations take when every page is loaded (values and offsets)."""
        return sum(seg.values.nbytes + seg.offsets.nbytes for seg in self.segments)

    # -- opening and writing ------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, verify: bool | None = None, in_memory: bool = False) -> AnswerStore:
        """Open a store; ``verify`` checks sha256 of every file (default: for stores of at most
        ``VERIFY_MAX`` bytes; sizes are always checked), ``in_memory`` reads values into RAM instead
        of mapping them."""
        path = Path(path)
        manifest = read_manifest(path)
        if verify is None:
            rows = sum(e["count" if manifest["kind"] == "vector" else "tokens"] for e in manifest["segments"])
            verify = rows * row_bytes(manifest["kind"], manifest["model"]["dim"]) <= VERIFY_MAX
        build = manifest.get("build")
        if build is not None:
            raise StoreError(
                f"{path}: its build stopped after {manifest['count']} of {build.get('total')} answers; "
                "run the same `sieveqa index build` command to resume it"
            )
        segments = [open_segment(path, entry, manifest, verify, in_memory) for entry in manifest["segments"]]
        return cls(path, manifest, segments, verify)

    @classmethod
    def build(
        cls,
        model: HashingModel,
        answers: Iterable[tuple[str, str]],
        path: str | Path,
        progress: bool = False,
        model_ref: str | None = None,
        **options: Any,
    ) -> AnswerStore:
        """Encode ``(id, text)`` answers with ``model`` into a store at ``path`` (or resume a build
        of the same answers that was killed). ``model_ref`` (a shipped name or model folder) is
        recorded so the store finds its model again. ``options``: ``segment_size``, ``vector_index``
        (auto, flat, ivf, none), ``bm25``, ``chunk``; see ``store_build``."""
        store_build.build(model, list(answers), Path(path), model_ref, options, progress)
        return cls.open(path, verify=False)

    def append(
        self, model: HashingModel, answers: Iterable[tuple[str, str]], progress: bool = False
    ) -> AnswerStore:
        """Encode and add answers as new segments (existing ones are not rewritten), rebuild the first
        stage, and return the reopened store. Ids already stored, or repeated, are refused."""
        store_build.append(self.path, model, list(answers), progress)
        return AnswerStore.open(self.path, verify=False)

    def check_model(self, model: HashingModel) -> None:
        """Raise StoreError naming every setting in which ``model`` differs from the store's builder."""
        check_signature(self.path, self.manifest["model"], model_signature(model))

    # -- reading ------------------------------------------------------------------------------------

    def rows_of(self, ids: Sequence[str]) -> np.ndarray:
        """The rows of answer ids (StoreError naming the ones not stored)."""
        missing = [i for i in ids if i not in self._rows]
        if missing:
            raise StoreError(f"{self.path}: {len(missing)} answer ids not in the store, e.g. {missing[:5]}")
        return np.fromiter((self._rows[i] for i in ids), dtype=np.int64, count=len(ids))

    def _decode(self, block: np.ndarray) -> Tensor:
        """Stored rows as floats: bits unpacked to ±1, floats copied out of the map."""
        if self.kind == "bits":
            bits = torch.from_numpy(np.unpackbits(block, axis=1, count=self.dim))
            return bits.to(torch.float32).mul_(2).sub_(1)
        return torch.from_numpy(np.array(block, dtype=np.float32))

    def gather(self, rows: Sequence[int] | np.ndarray) -> tuple[Tensor, Tensor | None]:
        """The representations of ``rows`` for ``HashingModel.score_ragged``: their token rows one
        after another with each answer's length, or (vector stores) one vector per row and None."""
        rows = np.asarray(rows, dtype=np.int64)
        seg_of = np.searchsorted(self.starts, rows, side="right") - 1
        blocks, lengths = [], []
        for row, s in zip(rows.tolist(), seg_of.tolist(), strict=True):
            seg, local = self.segments[s], row - int(self.starts[s])
            lo, hi = (
                (local, local + 1) if self.kind == "vector" else (seg.offsets[local], seg.offsets[local + 1])
            )
            blocks.append(seg.values[lo:hi])
            lengths.append(hi - lo)
        empty = np.empty((0, self.segments[0].values.shape[1] if self.segments else 0), dtype=np.uint8)
        values = self._decode(np.concatenate(blocks) if blocks else empty)
        return values, None if self.kind == "vector" else torch.tensor(lengths, dtype=torch.long)

    def representations(self, ids: Sequence[str]) -> list[Tensor]:
        """What the model scores, per answer: ±1 (bits) or float L × D matrices, or D vectors."""
        values, lengths = self.gather(self.rows_of(ids))
        return list(values) if lengths is None else list(torch.split(values, lengths.tolist()))

    def scan(self, tokens: int = SCAN_TOKENS) -> Iterator[tuple[int, Tensor, Tensor | None]]:
        """The whole store as ``(first row, values, lengths)`` blocks of at most ``tokens`` token
        rows (one answer longer than that is a block of its own): what a full scan scores."""
        for s, seg in enumerate(self.segments):
            for start, stop in seg.blocks(tokens):
                values = self._decode(seg.values[seg.offsets[start] : seg.offsets[stop]])
                lengths = (
                    None
                    if self.kind == "vector"
                    else torch.from_numpy(np.diff(seg.offsets[start : stop + 1]))
                )
                yield int(self.starts[s]) + start, values, lengths
