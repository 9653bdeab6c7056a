"""Answer stores: answers encoded once by a HashingModel, kept on disk, memory-mapped at question time.

A store is a folder::

    manifest.json           format, version, kind, width, the model's signature, segments + sha256
    seg-00000/values.bin    bits: uint8 rows of ⌈D/8⌉ bytes per token (1 bit per value, packbits)
                            float: float32 rows of D values per token; vector: float32 D per answer
    seg-00000/offsets.bin   int64, answers + 1 token offsets into values.bin
    seg-00000/answers.jsonl {"id", "text"} per answer, in row order

Adding answers writes a new segment folder (atomically) and then the small manifest (atomically), so
the existing data is never rewritten and a reader sees the old store or the new one. A segment left
by a killed writer is not in the manifest and is ignored (and replaced by the next append). Opening
checks every file's sha256 (``verify=False`` skips it) and maps ``values.bin`` read-only.

At question time only the candidates asked for are unpacked. A store refuses a model whose signature
(backbone, layers, composition, hashing, β, encoder weights, ...) differs from the one that built it.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from tqdm.auto import tqdm

from sieveqa.errors import StoreError
from sieveqa.io import LOCK_NAME, atomic_dir, atomic_write_json, exclusive, file_sha256, read_json_object
from sieveqa.models import zoo
from sieveqa.models.hashing import HashingModel, StoreKind, pad_matrices

FORMAT = "sieveqa-answer-store"
VERSION = 1
MANIFEST = "manifest.json"
_FILES = ("values.bin", "offsets.bin", "answers.jsonl")
#: Config fields that change what a model stores or how it reads a store.
_SIGNATURE_FIELDS = ("backbone", "num_layers", "max_length", "composition", "hashing", "pooling", "beta")


def model_signature(model: HashingModel) -> dict[str, Any]:
    """What must match between a store and the model that reads it."""
    cfg = model.config
    return {
        **{name: getattr(cfg, name) for name in _SIGNATURE_FIELDS},
        "kind": cfg.store_kind,
        "dim": model.encoder.hidden_size,
        "encoder_fingerprint": model.body_fingerprint(),
    }


def _row_bytes(kind: StoreKind, dim: int) -> int:
    return math.ceil(dim / 8) if kind == "bits" else 4 * dim


@dataclass
class _Segment:
    name: str
    values: np.ndarray  # tokens (or answers) × row bytes/values, memory-mapped
    offsets: np.ndarray  # answers + 1
    ids: list[str]
    texts: list[str]


class AnswerStore:
    """A read-mostly collection of encoded answers (see the module docstring for the format)."""

    def __init__(self, path: Path, manifest: dict[str, Any], segments: list[_Segment]) -> None:
        self.path, self.manifest, self.segments = path, manifest, segments
        self._where: dict[str, tuple[int, int]] = {}
        for s, seg in enumerate(segments):
            for row, answer_id in enumerate(seg.ids):
                self._where[answer_id] = (s, row)

    # -- properties ---------------------------------------------------------------------------------

    @property
    def kind(self) -> StoreKind:
        return self.manifest["kind"]

    @property
    def dim(self) -> int:
        return int(self.manifest["model"]["dim"])

    @property
    def ids(self) -> list[str]:
        return [i for seg in self.segments for i in seg.ids]

    def __len__(self) -> int:
        return len(self._where)

    @property
    def model_ref(self) -> str:
        """The model recorded at build time (a shipped name or an absolute folder path)."""
        ref = self.manifest.get("model_ref")
        if not ref:
            raise StoreError(f"{self.path}: no model recorded with the store; name one (--model)")
        return str(ref)

    def __contains__(self, answer_id: object) -> bool:
        return answer_id in self._where

    def text(self, answer_id: str) -> str:
        s, row = self._locate([answer_id])[0]
        return self.segments[s].texts[row]

    def disk_bytes(self) -> int:
        """Bytes of the stored representations on disk (values and offsets; not ids and texts)."""
        return sum((self.path / seg.name / f).stat().st_size for seg in self.segments for f in _FILES[:2])

    def ram_bytes(self) -> int:
        """Bytes the representations take when every page is loaded (values and offsets)."""
        return sum(seg.values.nbytes + seg.offsets.nbytes for seg in self.segments)

    # -- opening and writing ------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, verify: bool = True, in_memory: bool = False) -> AnswerStore:
        """Open a store; ``verify`` checks sha256 of every file, ``in_memory`` reads values into RAM
        instead of mapping them."""
        path = Path(path)
        manifest = _read_manifest(path)
        segments = [_open_segment(path, entry, manifest, verify, in_memory) for entry in manifest["segments"]]
        return cls(path, manifest, segments)

    @classmethod
    def build(
        cls,
        model: HashingModel,
        answers: Iterable[tuple[str, str]],
        path: str | Path,
        progress: bool = False,
        chunk: int = 4096,
        model_ref: str | None = None,
    ) -> AnswerStore:
        """Encode ``(id, text)`` answers with ``model`` into a new store at ``path``; use ``append``
        to add to an existing one. ``model_ref`` (a shipped name or model folder) is recorded so the
        CLI can reload the model that reads the store.

        All or nothing: the manifest, which makes the folder a store, is written last, so a build
        killed on the way leaves no store, and running it again starts over.
        """
        path = Path(path)
        if (path / MANIFEST).exists():
            raise StoreError(f"{path} already holds an answer store; add to it with `sieveqa index add`")
        if path.is_dir():
            other = sorted(p.name for p in path.iterdir() if not _leftover(p.name))
            if other:
                raise StoreError(
                    f"{path} is not empty ({', '.join(other[:3])}, ...) and holds no answer store"
                )
        answers = _unique(path, list(answers), set())
        with exclusive(path, "answer store"):
            if (path / MANIFEST).exists():  # another build finished first
                raise StoreError(f"{path} already holds an answer store; add to it with `sieveqa index add`")
            manifest = {
                "format": FORMAT,
                "version": VERSION,
                "kind": model.config.store_kind,
                "model": model_signature(model),
                "model_ref": None if model_ref is None else zoo.model_ref(model_ref),
                "count": 0,
                "segments": [],
            }
            _add_segment(path, manifest, model, answers, progress, chunk)
        return cls.open(path, verify=False)

    def append(
        self,
        model: HashingModel,
        answers: Iterable[tuple[str, str]],
        progress: bool = False,
        chunk: int = 4096,
    ) -> AnswerStore:
        """Encode and add answers as a new segment; existing segments are not rewritten. Returns the
        reopened store. Ids already stored, or repeated in ``answers``, are refused."""
        answers = list(answers)
        with exclusive(self.path, "answer store"):
            # Checked against the store as it is now: another writer may have added to it.
            current = AnswerStore.open(self.path, verify=False)
            current.check_model(model)
            answers = _unique(self.path, answers, current._where)
            if answers:
                _add_segment(self.path, current.manifest, model, answers, progress, chunk)
        return AnswerStore.open(self.path, verify=False)

    def check_model(self, model: HashingModel) -> None:
        """Raise StoreError naming every setting in which ``model`` differs from the store's builder."""
        stored, ours = self.manifest["model"], model_signature(model)
        diffs = [
            f"{k} {stored.get(k)!r} (store) != {ours[k]!r} (model)" for k in ours if stored.get(k) != ours[k]
        ]
        if diffs:
            if diffs[-1].startswith("encoder_fingerprint") and len(diffs) == 1:
                diffs = ["the encoder weights differ (another training run or checkpoint)"]
            raise StoreError(f"{self.path} was built by another model: {'; '.join(diffs)}")

    # -- reading ------------------------------------------------------------------------------------

    def _locate(self, ids: Sequence[str]) -> list[tuple[int, int]]:
        missing = [i for i in ids if i not in self._where]
        if missing:
            raise StoreError(f"{self.path}: {len(missing)} answer ids not in the store, e.g. {missing[:5]}")
        return [self._where[i] for i in ids]

    def _decode(self, block: np.ndarray) -> Tensor:
        """Stored rows as floats: bits unpacked to ±1, floats copied out of the map."""
        if self.kind == "bits":
            return torch.from_numpy(np.unpackbits(block, axis=1, count=self.dim).astype(np.float32) * 2 - 1)
        return torch.from_numpy(np.array(block, dtype=np.float32))

    def representations(self, ids: Sequence[str]) -> list[Tensor]:
        """What the model scores, for the given answers only: ±1 (bits) or float L × D matrices, or
        D vectors."""
        out = []
        for s, row in self._locate(ids):
            seg = self.segments[s]
            if self.kind == "vector":
                out.append(self._decode(seg.values[row]))
            else:
                out.append(self._decode(seg.values[seg.offsets[row] : seg.offsets[row + 1]]))
        return out

    def iter_chunks(self, size: int = 1024) -> Iterator[tuple[list[str], list[Tensor]]]:
        """Every stored answer, ``size`` at a time, each chunk decoded in one call (a full scan)."""
        for seg in self.segments:
            for start in range(0, len(seg.ids), size):
                stop = min(start + size, len(seg.ids))
                lo, hi = int(seg.offsets[start]), int(seg.offsets[stop])
                rows = self._decode(seg.values[lo:hi])
                if self.kind == "vector":
                    yield seg.ids[start:stop], list(rows)
                else:
                    cuts = np.diff(seg.offsets[start : stop + 1]).tolist()
                    yield seg.ids[start:stop], list(torch.split(rows, cuts))

    def batch(self, ids: Sequence[str]) -> tuple[Tensor, Tensor | None]:
        """Representations stacked for one scoring call: (rows × L × D, mask) or (rows × D, None)."""
        reps = self.representations(ids)
        if self.kind == "vector":
            return torch.stack(reps), None
        return pad_matrices(reps)


def _read_manifest(path: Path) -> dict[str, Any]:
    file = path / MANIFEST
    if not file.is_file():
        raise StoreError(f"{path}: not an answer store (no {MANIFEST})")
    manifest = read_json_object(file, StoreError)
    if manifest.get("format") != FORMAT:
        raise StoreError(f"{file}: not a sieveqa answer store (format {manifest.get('format')!r})")
    if manifest.get("version") != VERSION:
        raise StoreError(f"{file}: store version {manifest.get('version')} is not {VERSION}; rebuild it")
    model, segments = manifest.get("model"), manifest.get("segments")
    ok = (
        manifest.get("kind") in ("bits", "float", "vector")
        and isinstance(model, dict)
        and isinstance(model.get("dim"), int)
        and model["dim"] > 0
        and isinstance(segments, list)
        and all(_segment_entry(entry) for entry in segments)
    )
    if not ok:
        raise StoreError(
            f"{file}: malformed manifest (kind, model.dim or a segment entry); rebuild the store"
        )
    return manifest


def _segment_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("name"), str)
        and all(isinstance(entry.get(k), int) and entry[k] >= 0 for k in ("count", "tokens"))
        and isinstance(entry.get("sha256"), dict)
        and all(isinstance(entry["sha256"].get(f), str) for f in _FILES)
    )


def _open_segment(
    path: Path, entry: dict[str, Any], manifest: dict[str, Any], verify: bool, in_memory: bool
) -> _Segment:
    """One segment's arrays (mapped or read), ids and texts, each file checked against the manifest."""
    name, folder = entry["name"], path / entry["name"]
    for file_name in _FILES:
        file = folder / file_name
        if not file.is_file():
            raise StoreError(f"{path}: segment file {name}/{file_name} is missing")
        if verify and file_sha256(file) != entry["sha256"][file_name]:
            raise StoreError(f"{path}: {name}/{file_name} is corrupt (sha256 mismatch)")
    kind, dim = manifest["kind"], manifest["model"]["dim"]
    width, dtype = (_row_bytes(kind, dim), np.uint8) if kind == "bits" else (dim, np.float32)
    rows = entry["tokens"] if kind != "vector" else entry["count"]
    size = (folder / "values.bin").stat().st_size
    if size != rows * width * np.dtype(dtype).itemsize or (folder / "offsets.bin").stat().st_size != 8 * (
        entry["count"] + 1
    ):
        raise StoreError(f"{path}: {name} has files of the wrong size (truncated?); rebuild the store")
    values: np.ndarray
    if in_memory:
        values = np.fromfile(folder / "values.bin", dtype=dtype).reshape(rows, width)
    else:
        values = np.memmap(folder / "values.bin", dtype=dtype, mode="r", shape=(rows, width))
    offsets = np.fromfile(folder / "offsets.bin", dtype=np.int64)
    records = []
    for lineno, line in enumerate((folder / "answers.jsonl").read_bytes().splitlines(), start=1):
        try:
            record = json.loads(line)
            records.append((str(record["id"]), str(record["text"])))
        except (ValueError, TypeError, KeyError):
            raise StoreError(f"{path}: {name}/answers.jsonl:{lineno} is not an answer record") from None
    if len(records) != entry["count"]:
        raise StoreError(f"{path}: segment {name} does not hold {entry['count']} answers")
    return _Segment(name, values, offsets, [r[0] for r in records], [r[1] for r in records])


def _leftover(name: str) -> bool:
    """What a killed build leaves in a store folder: its lock, segments, temporary folders."""
    return name == LOCK_NAME or name.startswith(("seg-", ".seg-"))


def _unique(path: Path, answers: list[tuple[str, str]], stored: Container[str]) -> list[tuple[str, str]]:
    repeated = sorted({i for i, n in Counter(a[0] for a in answers).items() if n > 1 or i in stored})
    if repeated:
        raise StoreError(f"{path}: answer ids already stored or repeated: {repeated[:5]}")
    return answers


def _add_segment(
    path: Path,
    manifest: dict[str, Any],
    model: HashingModel,
    answers: Sequence[tuple[str, str]],
    progress: bool,
    chunk: int,
) -> None:
    """Write the next segment (atomically), then the manifest that lists it (atomically)."""
    if answers:
        name = f"seg-{len(manifest['segments']):05d}"
        with atomic_dir(path / name) as tmp:
            tokens = _write_segment(model, answers, tmp, progress, chunk)
            sha = {f: file_sha256(tmp / f) for f in _FILES}
        manifest["segments"].append({"name": name, "count": len(answers), "tokens": tokens, "sha256": sha})
    manifest["count"] = sum(s["count"] for s in manifest["segments"])
    atomic_write_json(path / MANIFEST, manifest)


def _write_segment(
    model: HashingModel, answers: Sequence[tuple[str, str]], folder: Path, progress: bool, chunk: int
) -> int:
    """Encode answers chunk by chunk, streaming rows to disk; returns the number of token rows."""
    kind = model.config.store_kind
    offsets = [0]
    bar = tqdm(total=len(answers), desc="encoding answers", unit="answer", disable=not progress)
    with (
        (folder / "values.bin").open("wb") as values,
        (folder / "answers.jsonl").open("w", encoding="utf-8") as records,
    ):
        for start in range(0, len(answers), chunk):
            part = answers[start : start + chunk]
            for (answer_id, text), rep in zip(part, model.encode_answers([t for _, t in part]), strict=True):
                array = rep.numpy()
                if kind == "bits":
                    array = np.packbits(array > 0, axis=1)
                values.write(
                    np.ascontiguousarray(array, dtype=np.uint8 if kind == "bits" else np.float32).tobytes()
                )
                offsets.append(offsets[-1] + (1 if kind == "vector" else len(rep)))
                records.write(json.dumps({"id": answer_id, "text": text}, ensure_ascii=False) + "\n")
            bar.update(len(part))
    bar.close()
    np.asarray(offsets, dtype=np.int64).tofile(folder / "offsets.bin")
    return offsets[-1]
