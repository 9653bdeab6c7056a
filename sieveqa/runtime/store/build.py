"""Writing answer stores: builds that resume after a kill, appends, and the first stage over them.

A build writes its manifest first, with a ``build`` entry naming the answers (their sha256), the model
and the options; then one segment of ``segment_size`` answers at a time, each folder written atomically
and then listed in the manifest (atomically). Killed, it leaves every finished segment listed: the same
command continues after the last one, and another command is refused. The first stage is built last;
only then does the ``build`` entry go, and the store open. An append writes new segments and a new
first-stage folder, then the manifest that lists them, so readers see the old store or the new one.

Each distinct text is encoded once: texts that repeat, or that a finished segment already holds (a
resumed build, an append), reuse the stored encoding.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections import Counter
from collections.abc import Container, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from sieveqa.errors import StoreError
from sieveqa.io import LOCK_NAME, atomic_dir, atomic_write_json, exclusive, file_sha256
from sieveqa.models import zoo
from sieveqa.models.hashing import HashingModel
from sieveqa.retrieval.bm25 import BM25Index
from sieveqa.runtime.store import first_stage
from sieveqa.runtime.store.format import (
    FILES,
    FORMAT,
    MANIFEST,
    VERSION,
    Segment,
    check_signature,
    model_signature,
    open_segment,
    read_manifest,
)

SEGMENT_SIZE = 100_000
#: Bytes of encoded answers kept to reuse for repeated texts during one build.
_CACHE_BYTES = 256 << 20


def model_reference(model: HashingModel, model_ref: str | None, store: Path) -> dict[str, Any]:
    """How a store finds its model again: a shipped name, or the folder (absolute and relative to
    the store, so a store moved with its model still finds it), and the body's fingerprint."""
    path = None if model_ref is None or model_ref in zoo.SHIPPED else zoo.resolve_model(model_ref).resolve()
    # A training run's folder is named best: its run's name says more.
    named = None if path is None else (path.name if path.name != "best" else f"{path.parent.name}/best")
    return {
        "name": None if model_ref is None else (model_ref if path is None else named),
        "path": None if path is None else str(path),
        "relative": None if path is None else os.path.relpath(path, store.resolve()),
        "fingerprint": model.body_fingerprint(),
    }


def answers_sha256(answers: Sequence[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for answer_id, text in answers:
        digest.update(json.dumps([answer_id, text], ensure_ascii=False).encode())
    return digest.hexdigest()


def build(
    model: HashingModel,
    answers: Sequence[tuple[str, str]],
    path: Path,
    model_ref: str | None = None,
    options: dict[str, Any] | None = None,
    progress: bool = False,
) -> None:
    """Build (or resume building) a store of ``answers`` at ``path``; ``options``: ``segment_size``,
    ``vector_index`` (auto, flat, ivf, none), ``bm25`` (bool), ``chunk`` (answers encoded at once)."""
    options = {
        "segment_size": SEGMENT_SIZE,
        "vector_index": "auto",
        "bm25": True,
        "chunk": 4096,
        **(options or {}),
    }
    first_stage.choose_vector_index(len(answers), options["vector_index"])  # an unknown name fails here
    unique(path, answers, set())
    # How many answers are encoded at once changes nothing stored, so a resume may use another.
    same = {key: value for key, value in options.items() if key != "chunk"}
    target = {"answers_sha256": answers_sha256(answers), "total": len(answers), "options": same}
    with exclusive(path, "answer store"):
        manifest = _resume_or_start(path, model, model_ref, target, options["chunk"])
        size = options["segment_size"]
        with tqdm(
            total=len(answers),
            initial=manifest["count"],
            desc="encoding answers",
            unit="answer",
            disable=not progress,
        ) as bar:
            cache = _EncodingCache(manifest["kind"], open_segments(path, manifest))
            for start in range(manifest["count"], len(answers), size):
                add_segment(
                    path, manifest, model, answers[start : start + size], bar, options["chunk"], cache
                )
        finish(path, manifest, progress)


def _resume_or_start(
    path: Path, model: HashingModel, model_ref: str | None, target: dict[str, Any], chunk: int
) -> dict[str, Any]:
    if (path / MANIFEST).exists():
        manifest = read_manifest(path)
        if "build" not in manifest:
            raise StoreError(f"{path} already holds an answer store; add to it with `sieveqa index add`")
        done, before = manifest["count"], manifest["build"]
        differs = [k for k in ("answers_sha256", "total") if before.get(k) != target[k]]
        was, now = before.get("options") or {}, target["options"]
        changed = [
            f"--{k.replace('_', '-')} {was.get(k)!r} -> {now.get(k)!r}"
            for k in sorted(set(was) | set(now))
            if was.get(k) != now.get(k)
        ]
        if changed:
            differs.append(f"options ({', '.join(changed)})")
        try:
            check_signature(path, manifest["model"], model_signature(model))
        except StoreError:
            differs.append("model")
        if differs:
            raise StoreError(
                f"{path}: holds a build stopped after {done} of {before.get('total')} answers, of other "
                f"{' and '.join(differs)}; rerun the command that started it, or remove the folder"
            )
        return manifest
    if path.is_dir():
        other = sorted(p.name for p in path.iterdir() if not leftover(p.name))
        if other:
            raise StoreError(f"{path} is not empty ({', '.join(other[:3])}, ...) and holds no answer store")
    signature = model_signature(model)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "kind": signature["kind"],
        "model": signature,
        "model_ref": model_reference(model, model_ref, path),
        "count": 0,
        "segments": [],
        "first_stage": None,
        "options": {**target["options"], "chunk": chunk},
        "build": target,
    }
    atomic_write_json(path / MANIFEST, manifest)
    return manifest


def open_segments(path: Path, manifest: dict[str, Any]) -> list[Segment]:
    return [
        open_segment(path, entry, manifest, verify=False, in_memory=False) for entry in manifest["segments"]
    ]


def finish(path: Path, manifest: dict[str, Any], progress: bool) -> None:
    """Build the first stage over every answer in a new folder, then list it in the manifest."""
    old = manifest.get("first_stage")
    number = 0 if old is None else int(old["dir"].rsplit("-", 1)[1]) + 1
    name = f"first-stage-{number:05d}"
    options, segments = manifest["options"], open_segments(path, manifest)
    empty = manifest["count"] == 0  # nothing to index: an empty store scans nothing
    index = None if empty else first_stage.choose_vector_index(manifest["count"], options["vector_index"])
    bm25 = bool(options["bm25"]) and not empty
    with atomic_dir(path / name) as tmp:
        if index is not None:
            vectors = first_stage.collect_vectors(
                manifest["kind"], manifest["model"]["dim"], segments, progress
            )
            first_stage.build_vector_index(vectors, index, tmp / first_stage.VECTORS)
            del vectors
        if bm25:
            records = [seg.record(row) for seg in segments for row in range(len(seg))]
            BM25Index.build([str(i) for i in range(len(records))], [t for _, t in records]).save(
                tmp / first_stage.BM25_DIR
            )
        sha = {str(f.relative_to(tmp)): file_sha256(f) for f in sorted(tmp.rglob("*")) if f.is_file()}
    manifest["first_stage"] = {"dir": name, "vector": index, "bm25": bm25, "sha256": sha}
    manifest.pop("build", None)
    atomic_write_json(path / MANIFEST, manifest)
    # What killed writers left: segments no manifest lists, and first stages older than the one this
    # replaces (kept: a reader that opened the store before this write reads it lazily).
    listed = {entry["name"] for entry in manifest["segments"]} | {name, "" if old is None else old["dir"]}
    for stale in [*path.glob("seg-*"), *path.glob("first-stage-*")]:
        if stale.name not in listed:
            shutil.rmtree(stale, ignore_errors=True)


def append(path: Path, model: HashingModel, answers: Sequence[tuple[str, str]], progress: bool) -> None:
    """Encode ``answers`` into new segments of the finished store at ``path``, then rebuild its first
    stage; existing segments are not rewritten."""
    with exclusive(path, "answer store"):
        manifest = read_manifest(path)  # as it is now: another writer may have added to it
        if "build" in manifest:
            raise StoreError(f"{path}: its build has not finished; rerun `sieveqa index build` to finish it")
        check_signature(path, manifest["model"], model_signature(model))
        cache = _EncodingCache(manifest["kind"], open_segments(path, manifest))
        unique(path, answers, cache.ids)
        if not answers:
            return
        size = manifest["options"]["segment_size"]
        with tqdm(total=len(answers), desc="encoding answers", unit="answer", disable=not progress) as bar:
            for start in range(0, len(answers), size):
                add_segment(
                    path,
                    manifest,
                    model,
                    answers[start : start + size],
                    bar,
                    manifest["options"]["chunk"],
                    cache,
                    write=False,
                )
        finish(path, manifest, progress)


def leftover(name: str) -> bool:
    """What a killed build leaves in a store folder: its lock, segments, temporary folders."""
    return name == LOCK_NAME or name.startswith(("seg-", ".seg-", "first-stage-", ".first-stage-"))


def unique(path: Path, answers: Sequence[tuple[str, str]], stored: Container[str]) -> None:
    repeated = sorted({i for i, n in Counter(a[0] for a in answers).items() if n > 1 or i in stored})
    if repeated:
        raise StoreError(f"{path}: answer ids already stored or repeated: {repeated[:5]}")


class _EncodingCache:
    """Encoded rows to reuse for a text seen before: in this run (up to ``_CACHE_BYTES``), or in the
    store's finished segments (a resumed build, an append), read back from them."""

    def __init__(self, kind: str, segments: Sequence[Segment] = ()) -> None:
        self.kind = kind
        # Keyed by a digest of the text, so the texts themselves are not held twice.
        self.rows: dict[bytes, np.ndarray] = {}
        self.bytes = 0
        self.ids: set[str] = set()
        self.stored: dict[bytes, tuple[Segment, int]] = {}
        for seg in segments:
            for row in range(len(seg)):
                answer_id, text = seg.record(row)
                self.ids.add(answer_id)
                self.stored.setdefault(_key(text), (seg, row))

    def __contains__(self, text: str) -> bool:
        key = _key(text)
        return key in self.rows or key in self.stored

    def get(self, text: str) -> np.ndarray | None:
        key = _key(text)
        rows = self.rows.get(key)
        if rows is None and key in self.stored:
            seg, row = self.stored[key]
            lo, hi = (row, row + 1) if self.kind == "vector" else (seg.offsets[row], seg.offsets[row + 1])
            rows = np.array(seg.values[lo:hi])
        return rows

    def put(self, text: str, rows: np.ndarray) -> None:
        if self.bytes + rows.nbytes <= _CACHE_BYTES:
            self.rows[_key(text)] = rows
            self.bytes += rows.nbytes


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def add_segment(
    path: Path,
    manifest: dict[str, Any],
    model: HashingModel,
    answers: Sequence[tuple[str, str]],
    bar: tqdm,
    chunk: int,
    cache: _EncodingCache,
    write: bool = True,
) -> None:
    """Write the next segment (atomically); then, with ``write``, the manifest that lists it."""
    name = f"seg-{len(manifest['segments']):05d}"
    with atomic_dir(path / name) as tmp:
        tokens = _write_segment(model, answers, tmp, bar, chunk, cache)
        sha = {f: file_sha256(tmp / f) for f in FILES}
    manifest["segments"].append({"name": name, "count": len(answers), "tokens": tokens, "sha256": sha})
    manifest["count"] = sum(s["count"] for s in manifest["segments"])
    if write:
        atomic_write_json(path / MANIFEST, manifest)


def _write_segment(
    model: HashingModel,
    answers: Sequence[tuple[str, str]],
    folder: Path,
    bar: tqdm,
    chunk: int,
    cache: _EncodingCache,
) -> int:
    """Encode answers chunk by chunk, streaming rows to disk; returns the number of stored rows."""
    kind = model.config.store_kind
    offsets, lines = [0], [0]
    with (
        (folder / "values.bin").open("wb") as values,
        (folder / "answers.jsonl").open("wb") as records,
    ):
        for start in range(0, len(answers), chunk):
            part = answers[start : start + chunk]
            new = list(dict.fromkeys(t for _, t in part if t not in cache))
            encoded = dict(zip(new, (_packed(kind, r) for r in model.encode_answers(new)), strict=True))
            for answer_id, text in part:
                rows = cache.get(text)
                if rows is None:
                    rows = encoded[text]
                    cache.put(text, rows)
                values.write(rows.tobytes())
                offsets.append(offsets[-1] + (1 if kind == "vector" else len(rows)))
                line = (json.dumps({"id": answer_id, "text": text}, ensure_ascii=False) + "\n").encode()
                records.write(line)
                lines.append(lines[-1] + len(line))
            bar.update(len(part))
    np.asarray(offsets, dtype=np.int64).tofile(folder / "offsets.bin")
    np.asarray(lines, dtype=np.int64).tofile(folder / "answers.idx")
    return offsets[-1]


def _packed(kind: str, rep: Any) -> np.ndarray:
    """What a store writes for one encoded answer: packed bits, or float32 values."""
    array = rep.numpy()
    if kind == "bits":
        return np.packbits(array > 0, axis=-1)
    return np.ascontiguousarray(array, dtype=np.float32)
