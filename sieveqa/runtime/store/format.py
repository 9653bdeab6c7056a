"""The on-disk format of answer stores, reading one segment of it, and the model a store belongs to.

A store is a folder::

    manifest.json           format, version, kind, the model's signature and reference, segments,
                            the first stage, and (only while a build runs) what is being built
    seg-00000/values.bin    bits: uint8 rows of ⌈D/8⌉ bytes per token (1 bit per value, packbits)
                            float: float32 rows of D values per token; vector: float32 D per answer
    seg-00000/offsets.bin   int64, answers + 1 token offsets into values.bin
    seg-00000/answers.jsonl {"id", "text"} per answer, in row order
    seg-00000/answers.idx   int64, answers + 1 byte offsets of those lines (texts are read on demand)
    first-stage-00000/      the first stage over every answer: vectors.faiss (one pooled vector per
                            answer), bm25/ (BM25 over the texts)

Everything but the manifest is written once and never rewritten, so a reader sees the old store or
the new one. Values, offsets and texts are memory-mapped: opening a store reads only the manifest
(and, with ``verify``, every file once to check its sha256).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sieveqa.errors import StoreError
from sieveqa.io import file_sha256
from sieveqa.io import read_manifest as read_manifest_file
from sieveqa.models import zoo
from sieveqa.models.configs import StoreKind
from sieveqa.models.hashing import HashingModel

FORMAT = "sieveqa-answer-store"
VERSION = 2
MANIFEST = "manifest.json"
FILES = ("values.bin", "offsets.bin", "answers.jsonl", "answers.idx")


def row_bytes(kind: StoreKind, dim: int) -> int:
    """Bytes of one stored row: a token's bits, a token's floats, or an answer's vector."""
    return math.ceil(dim / 8) if kind == "bits" else 4 * dim


def value_dtype(kind: StoreKind) -> type[np.generic]:
    return np.uint8 if kind == "bits" else np.float32


@dataclass
class Segment:
    """One segment's arrays, all memory-mapped (or read into RAM with ``in_memory``)."""

    name: str
    values: np.ndarray  # token rows (answer rows for vectors) × row width
    offsets: np.ndarray  # answers + 1 token offsets
    records: np.ndarray  # the bytes of answers.jsonl
    lines: np.ndarray  # answers + 1 byte offsets into records

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def blocks(self, rows: int) -> Iterator[tuple[int, int]]:
        """``(start, stop)`` answer ranges covering the segment, each holding at most ``rows`` stored
        rows (token rows; one row an answer for vectors), or one answer longer than that."""
        start = 0
        while start < len(self):
            stop = int(np.searchsorted(self.offsets, self.offsets[start] + rows, side="right")) - 1
            stop = min(max(stop, start + 1), len(self))
            yield start, stop
            start = stop

    def record(self, row: int) -> tuple[str, str]:
        """``(id, text)`` of one answer, parsed from its line."""
        line = self.records[int(self.lines[row]) : int(self.lines[row + 1])].tobytes()
        try:
            obj = json.loads(line)
            return str(obj["id"]), str(obj["text"])
        except (ValueError, TypeError, KeyError):
            raise StoreError(f"{self.name}/answers.jsonl:{row + 1} is not an answer record") from None


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the store at ``path``, checked for the fields every reader relies on."""
    manifest = read_manifest_file(path, FORMAT, VERSION, "an answer store", "sieveqa index build")
    file = path / MANIFEST
    model, segments = manifest.get("model"), manifest.get("segments")
    ok = (
        manifest.get("kind") in ("bits", "float", "vector")
        and isinstance(model, dict)
        and isinstance(model.get("dim"), int)
        and model["dim"] > 0
        and isinstance(manifest.get("model_ref"), dict)
        and isinstance(segments, list)
        and all(_segment_entry(entry) for entry in segments)
        and (manifest.get("first_stage") is None or _first_stage_entry(manifest["first_stage"]))
    )
    if not ok:
        raise StoreError(
            f"{file}: malformed manifest (kind, model, a segment or the first stage); rebuild the store"
        )
    return manifest


def _sha_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _segment_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("name"), str)
        and all(isinstance(entry.get(k), int) and entry[k] >= 0 for k in ("count", "tokens"))
        and _sha_map(entry.get("sha256"))
        and all(f in entry["sha256"] for f in FILES)
    )


def _first_stage_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("dir"), str)
        and entry.get("vector") in (None, "flat", "ivf")
        and isinstance(entry.get("bm25"), bool)
        and _sha_map(entry.get("sha256"))
    )


def verify_files(path: Path, folder: str, sha256: dict[str, str]) -> None:
    """Raise StoreError unless every file listed exists and has its recorded sha256."""
    for name, digest in sha256.items():
        file = path / folder / name
        if not file.is_file():
            raise StoreError(f"{path}: {folder}/{name} is missing")
        if file_sha256(file) != digest:
            raise StoreError(f"{path}: {folder}/{name} is corrupt (sha256 mismatch)")


def open_segment(
    path: Path, entry: dict[str, Any], manifest: dict[str, Any], verify: bool, in_memory: bool
) -> Segment:
    """One segment's arrays, each file checked for its size (and, with ``verify``, its sha256)."""
    name, folder = entry["name"], path / entry["name"]
    for file_name in FILES:
        if not (folder / file_name).is_file():
            raise StoreError(f"{path}: segment file {name}/{file_name} is missing")
    if verify:
        verify_files(path, name, entry["sha256"])
    kind, dim, count = manifest["kind"], manifest["model"]["dim"], entry["count"]
    dtype = value_dtype(kind)
    width = row_bytes(kind, dim) // np.dtype(dtype).itemsize
    rows = entry["tokens"] if kind != "vector" else count
    sizes = {
        "values.bin": rows * width * np.dtype(dtype).itemsize,
        "offsets.bin": 8 * (count + 1),
        "answers.idx": 8 * (count + 1),
    }
    if any((folder / f).stat().st_size != size for f, size in sizes.items()):
        raise StoreError(f"{path}: {name} has files of the wrong size (truncated?); rebuild the store")
    offsets = _array(folder / "offsets.bin", np.int64, (count + 1,), in_memory)
    lines = _array(folder / "answers.idx", np.int64, (count + 1,), in_memory)
    records = _array(folder / "answers.jsonl", np.uint8, None, in_memory)
    if offsets[-1] != rows or (count and lines[-1] != len(records)):
        raise StoreError(f"{path}: {name} has offsets that do not match its files; rebuild the store")
    values = _array(folder / "values.bin", dtype, (rows, width), in_memory)
    return Segment(name, values, offsets, records, lines)


def _array(file: Path, dtype: type[np.generic], shape: tuple[int, ...] | None, in_memory: bool) -> np.ndarray:
    """A file as an array: mapped read-only, or read (an empty file cannot be mapped)."""
    if in_memory or file.stat().st_size == 0:
        array = np.fromfile(file, dtype=dtype)
        return array if shape is None else array.reshape(shape)
    return np.memmap(file, dtype=dtype, mode="r", shape=shape)


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


def check_signature(path: Path, stored: dict[str, Any], ours: dict[str, Any]) -> None:
    """Raise StoreError naming every setting in which a model differs from the store's builder."""
    diffs = [
        f"{k} {stored.get(k)!r} (store) != {ours[k]!r} (model)" for k in ours if stored.get(k) != ours[k]
    ]
    if diffs:
        if diffs[-1].startswith("encoder_fingerprint") and len(diffs) == 1:
            diffs = ["the encoder weights differ (another training run or checkpoint)"]
        raise StoreError(f"{path} was built by another model: {'; '.join(diffs)}")


def store_model(name: str | Path) -> HashingModel:
    """A model that encodes or reads a store: a HAS, BERT-attention or BERT-pooling model."""
    return zoo.load_model(
        name,
        HashingModel,
        want="a HAS, bert-attention or bert-pooling model: answer stores need one (sieveqa train --arch has)",
    )


def find_model(store: Path, reference: dict[str, Any]) -> HashingModel:
    """The model a store records: by shipped name, else at its folder, else at the same place
    relative to the store (both moved together). Raises StoreError naming it when none is found."""
    name, fingerprint = reference.get("name"), str(reference.get("fingerprint") or "")
    if name in zoo.SHIPPED:
        return store_model(name)
    places = [reference.get("path")]
    if reference.get("relative"):
        places.append(str((store / reference["relative"]).resolve()))
    for place in places:
        if place and Path(place).is_dir():
            return store_model(place)
    if name is None:
        raise StoreError(f"{store}: no model recorded with the store; name one (--model)")
    raise StoreError(
        f"{store}: its model {name!r} (body fingerprint {fingerprint[:12]}) is no longer at {places[0]}; "
        "pass --model FOLDER (the store checks it is the same model)"
    )
