"""Teacher scores for distillation, computed once and cached beside the run (MHS, issue 13).

A student never runs its teachers inside its training loop: each teacher scores the training pairs
once, and the scores are stored with what they belong to (the dataset, every pair's id in order and
the teacher's weights digest). A cache that does not match the pairs being trained on is refused
with an error that names the first difference, so scores of other data, another order or another
teacher are never silently mixed in.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from torch import nn

from sieveqa.errors import DataFormatError
from sieveqa.io import atomic_open

FORMAT = "sieveqa-teacher-scores/1"


def weights_digest(model: nn.Module) -> str:
    """sha256 over a model's parameters and buffers (names, shapes and fp32 bytes), in state-dict order."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(f"{name}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


@dataclass
class TeacherScores:
    """One teacher's logit for every training pair, and what they were computed on."""

    teacher: str  # the name or folder the teacher was loaded from
    teacher_digest: str  # weights_digest of the teacher
    dataset: str  # the training set's name
    pair_ids: list[str]  # "qid/candidate id" of each pair, in training order
    scores: list[float]

    def __post_init__(self) -> None:
        if len(self.pair_ids) != len(self.scores):
            raise DataFormatError(
                f"teacher scores of {self.teacher}: {len(self.scores)} scores for {len(self.pair_ids)} pairs"
            )

    def save(self, path: str | Path) -> Path:
        """Write gzipped JSON atomically (a killed write leaves no file)."""
        path = Path(path)
        with atomic_open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(json.dumps({"format": FORMAT, **asdict(self)}).encode("utf-8"))
        return path

    @classmethod
    def load(cls, path: str | Path) -> TeacherScores:
        """Read a file written by :meth:`save`; anything else is refused naming the file."""
        try:
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                raw: Any = json.load(handle)
        except EOFError:  # click would take it for Ctrl-D and say "interrupted"
            raise DataFormatError(f"{path}: the gzip stream ends early (a truncated file)") from None
        except (OSError, ValueError) as err:
            raise DataFormatError(f"{path}: not a teacher-scores file ({err})") from None
        if not isinstance(raw, dict) or raw.pop("format", None) != FORMAT:
            raise DataFormatError(f"{path}: not a teacher-scores file (format {FORMAT} expected)")
        try:
            return cls(**raw)
        except TypeError as err:
            raise DataFormatError(f"{path}: {err}") from None

    def check(self, dataset: str, pair_ids: Sequence[str], teacher_digest: str | None = None) -> None:
        """Refuse these scores unless they were computed on exactly ``pair_ids`` of ``dataset`` (and,
        given, by the teacher with ``teacher_digest``); the error names the first difference."""
        where = f"teacher scores of {self.teacher}"
        if dataset != self.dataset:
            raise DataFormatError(f"{where} are for dataset {self.dataset!r}, not {dataset!r}")
        if teacher_digest is not None and teacher_digest != self.teacher_digest:
            raise DataFormatError(
                f"{where} come from other weights (digest {self.teacher_digest[:12]}, "
                f"this teacher's is {teacher_digest[:12]})"
            )
        for i, (cached, wanted) in enumerate(zip(self.pair_ids, pair_ids, strict=False)):
            if cached != wanted:
                raise DataFormatError(
                    f"{where}: pair {i} is {cached!r} in the cache but {wanted!r} in the training pairs "
                    "(other data or another order)"
                )
        if len(self.pair_ids) != len(pair_ids):
            raise DataFormatError(
                f"{where} cover {len(self.pair_ids)} pairs; the training pairs are {len(pair_ids)}"
            )
