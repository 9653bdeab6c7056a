"""Rank a file too large for one sitting: in shards of questions, each written atomically, so a killed
job resumes without redoing finished shards.

A run's folder holds ``run.json`` (the input's size and mtime, the model and the sha256 of its
folder, saved policy included, the shard boundaries) and one ``shard-NNNNN.jsonl`` per shard in the
format ``sieveqa rank --output`` writes. A shard file exists only when the whole shard is ranked; a
second run over the same folder ranks only the shards that have none, and refuses to mix inputs,
models (a retrained or re-tuned one included) or shard sizes; two runs into one folder at once are
refused (``claim`` holds its lock). A Parquet input is read once per process, not once per shard
(each process, a Ray actor included, holds its three columns in memory).
The work of a shard is a plain function, so one process (``run_local``) or a Ray actor pool
(``sieveqa.runtime.batch.ray_pool``) can do it.

Input: JSONL (one question per line, as ``rank`` reads) or Parquet with columns ``qid``, ``question``
and ``candidates`` (a list of ``{id, text}``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sieveqa.data.jsonl import decode_line, example_dict, parse_example, write_jsonl
from sieveqa.errors import ConfigError, DataFormatError
from sieveqa.io import atomic_write_json, exclusive, file_sha256, read_json_object
from sieveqa.models.base import Ranker, on_scale

_PARQUET_COLUMNS = ("qid", "question", "candidates")


@dataclass(frozen=True)
class Shard:
    """Rows ``start`` to ``stop`` of the input (``offset``: the byte where ``start`` begins, JSONL)."""

    index: int
    start: int
    stop: int
    offset: int = 0

    @property
    def name(self) -> str:
        return f"shard-{self.index:05d}.jsonl"


@dataclass(frozen=True)
class ShardDone:
    """What ranking one shard took."""

    index: int
    questions: int
    pairs: int
    seconds: float


# How a resumed run's differing identity is named: by the option that sets it.
_NAMES = {
    "input": "--input",
    "bytes": "--input content",
    "mtime_ns": "--input content",
    "shard_size": "--shard-size",
    "model": "--model",
    "model_sha256": "--model (its files changed)",
    "precision": "--precision",
    "backend": "--backend",
}


@dataclass(frozen=True)
class ShardPlan:
    """An input cut into shards; ``identity`` is what a resumed run must match."""

    source: str
    kind: str
    rows: int
    shards: tuple[Shard, ...]
    identity: dict[str, Any]

    @classmethod
    def make(
        cls,
        source: str | Path,
        shard_size: int,
        model: str,
        model_sha256: str | None = None,
        precision: str | None = None,
        backend: str = "torch",
    ) -> ShardPlan:
        """Check every row (JSONL) or the schema (Parquet) and cut the input into shards; the run is
        of ``model``, whose files hash to ``model_sha256`` (:func:`model_digest`), at ``precision``
        (resolved: ``auto`` may differ between machines) on ``backend``."""
        if shard_size < 1:
            raise ConfigError(f"--shard-size must be >= 1, got {shard_size}")
        path = Path(source)
        if not path.is_file():
            raise DataFormatError(f"{path}: no such file")
        kind = "parquet" if path.suffix == ".parquet" else "jsonl"
        if path.suffix == ".gz":
            raise DataFormatError(f"{path}: shards need a seekable file; decompress it or use Parquet")
        starts = _jsonl_starts(path) if kind == "jsonl" else _parquet_rows(path)
        rows = len(starts) if kind == "jsonl" else starts[0]
        if not rows:
            raise DataFormatError(f"{path}: no questions")
        shards = tuple(
            Shard(i, lo, min(lo + shard_size, rows), starts[lo] if kind == "jsonl" else 0)
            for i, lo in enumerate(range(0, rows, shard_size))
        )
        stat = path.stat()
        identity = {
            "input": str(path.resolve()),
            "bytes": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "shard_size": shard_size,
            "model": model,
            "model_sha256": model_sha256,
            "precision": precision,
            "backend": backend,
        }
        return cls(str(path), kind, rows, shards, identity)

    @contextlib.contextmanager
    def claim(self, out: str | Path) -> Iterator[list[Shard]]:
        """``open`` holding ``out``'s lock for the whole run: a second run into it is refused."""
        with exclusive(out, "batch run"):
            yield self.open(out)

    def open(self, out: str | Path) -> list[Shard]:
        """Start or resume a run in ``out``: the shards still to rank."""
        out = Path(out)
        record = out / "run.json"
        if record.exists():
            before = read_json_object(record).get("identity")
            # A run recorded before precision or backend were part of the identity is not refused for them.
            before = {"precision": self.identity["precision"], "backend": "torch", **(before or {})}
            if before != self.identity:
                changed = sorted(
                    {_NAMES.get(k, k) for k in self.identity if before.get(k) != self.identity[k]}
                )
                raise ConfigError(
                    f"{out} holds a run with another {', '.join(changed) or 'setup'}: "
                    "give a new --out, or delete it to start over"
                )
        else:
            atomic_write_json(
                record, {"identity": self.identity, "rows": self.rows, "shards": len(self.shards)}
            )
        return [s for s in self.shards if not (out / s.name).exists()]


def model_digest(model: str | Path) -> str:
    """sha256 over every file of the model's folder (weights, config, saved policy) and, for an
    ensemble, of each member's folder: a retrained model or a re-tuned policy under the same name
    differs. Names resolve as loading does (a shipped name before a folder of that name)."""
    from sieveqa.models.zoo import SHIPPED, resolve_model
    from sieveqa.runtime.ensemble import EnsembleSpec, is_ensemble

    name = str(model)
    folder = Path(name) if name not in SHIPPED and is_ensemble(name) else resolve_model(name)
    digest = hashlib.sha256()
    _hash_folder(digest, folder)
    if is_ensemble(folder):
        for member in EnsembleSpec.load(folder).members:
            digest.update(f"member {member}\n".encode())
            _hash_folder(digest, resolve_model(member))
    return digest.hexdigest()


def _hash_folder(digest: Any, folder: Path) -> None:
    for file in sorted(f for f in folder.rglob("*") if f.is_file() and not f.name.startswith(".")):
        digest.update(f"{file.relative_to(folder).as_posix()}\0{file_sha256(file)}\n".encode())


def _jsonl_starts(path: Path) -> list[int]:
    """The byte offset of every non-blank line, each line checked as a question (unique qids)."""
    starts, seen, offset = [], set(), 0
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            where = f"{path}:{lineno}"
            if raw.strip():
                example = parse_example(decode_line(raw, where), where)
                if example.qid in seen:
                    raise DataFormatError(f"{where}: duplicate qid {example.qid!r}")
                seen.add(example.qid)
                starts.append(offset)
            offset += len(raw)
    return starts


def _parquet_rows(path: Path) -> list[int]:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
        rows = pq.ParquetFile(path).metadata.num_rows
    except Exception as err:  # pyarrow raises several kinds for a file that is not Parquet
        raise DataFormatError(f"{path}: not a Parquet file ({err})") from None
    missing = [c for c in _PARQUET_COLUMNS if c not in schema.names]
    if missing:
        raise DataFormatError(f"{path}: no column {', '.join(missing)} (needs {', '.join(_PARQUET_COLUMNS)})")
    return [rows]


def read_shard(source: str | Path, kind: str, shard: Shard) -> list[Any]:
    """The questions of one shard, each checked (errors name the file and line or row)."""
    path = Path(source)
    if kind == "jsonl":
        out = []
        with path.open("rb") as handle:
            handle.seek(shard.offset)
            while len(out) < shard.stop - shard.start:
                raw = handle.readline()
                if not raw:
                    raise DataFormatError(
                        f"{path}: ends at row {shard.start + len(out)}, but the run planned "
                        f"{shard.stop} rows: the file changed since; give a new --out"
                    )
                if raw.strip():
                    out.append(parse_example(json.loads(raw), f"{path}: row {shard.start + len(out)}"))
        return out
    stat = path.stat()
    table = _parquet_table(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if table.num_rows < shard.stop:
        raise DataFormatError(
            f"{path}: {table.num_rows} rows, but the run planned {shard.stop}: the file changed since; "
            "give a new --out"
        )
    rows = table.slice(shard.start, shard.stop - shard.start).to_pylist()
    return [parse_example(obj, f"{path}: row {shard.start + i}") for i, obj in enumerate(rows)]


@functools.lru_cache(maxsize=1)
def _parquet_table(path: str, size: int, mtime_ns: int) -> Any:
    """The input's columns, read once per process (a Ray actor ranks many shards of one file);
    ``size`` and ``mtime_ns`` make a changed file a new read."""
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=list(_PARQUET_COLUMNS))


def rank_shard(ranker: Ranker, source: str | Path, kind: str, shard: Shard, out: str | Path) -> ShardDone:
    """Rank one shard and write it, whole or not at all."""
    started = time.perf_counter()
    examples = read_shard(source, kind, shard)
    scale, ranked = on_scale(examples, ranker.run(examples))  # the logits, as rank --output writes them
    rows = ({**example_dict(e, r), "score_scale": scale} for e, r in zip(examples, ranked, strict=True))
    write_jsonl(Path(out) / shard.name, rows)
    pairs = sum(len(e.candidates) for e in examples)
    return ShardDone(shard.index, len(examples), pairs, time.perf_counter() - started)


def run_local(
    ranker: Ranker,
    plan: ShardPlan,
    out: str | Path,
    shards: Iterable[Shard],
    on_done: Callable[[ShardDone], None] | None = None,
) -> list[ShardDone]:
    """Rank ``shards`` one after another in this process."""
    done = []
    for shard in shards:
        done.append(rank_shard(ranker, plan.source, plan.kind, shard, out))
        if on_done is not None:
            on_done(done[-1])
    return done


def shard_dict(shard: Shard) -> dict[str, int]:
    return asdict(shard)
