"""Unpruned scores of a saved model on a named dataset, computed once and cached.

Pruning policies (cascade drop ratios, thresholds, sequential rankers) are all simulated from these
matrices, so trying another grid or another α costs no model pass. The cache key covers the model
folder, its weights file (size and modification time) and the dataset's candidates.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from sieveqa.data.paths import cache_root
from sieveqa.data.records import RankingExample
from sieveqa.io import atomic_open
from sieveqa.models.base import flatten_pairs
from sieveqa.models.cascade import CascadeTransformer
from sieveqa.models.zoo import load_model, resolve_model


def _key(folder: Path, dataset: str, examples: Sequence[RankingExample]) -> str:
    weights = (folder / "model.safetensors").stat()
    ids = hashlib.sha1("|".join(c.id for ex in examples for c in ex.candidates).encode()).hexdigest()
    # A model that reads its body from another one (a retrofit's heads) is also keyed by that body.
    body = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("body_fingerprint", "")
    text = f"{folder.resolve()}|{weights.st_mtime_ns}|{weights.st_size}|{dataset}|{ids}"
    if body:
        text += f"|{body}"
    return hashlib.sha1(text.encode()).hexdigest()[:20]


def cached_scores(
    model: str,
    dataset: str,
    examples: Sequence[RankingExample],
    progress: bool = False,
    cache_dir: str | Path | None = None,
    batch_size: int = 128,
) -> Tensor:
    """Scores of every candidate with nothing pruned: candidates × exits (one column for a
    cross-encoder), example order. Read from ``cache_dir`` (default ``~/.cache/sieveqa/scores``)."""
    folder = resolve_model(model)
    root = Path(cache_dir) if cache_dir is not None else cache_root() / "scores"
    path = root / f"{_key(folder, dataset, examples)}.pt"
    if path.is_file():
        return torch.load(path, weights_only=True)
    loaded = load_model(model)
    loaded.batch_size = batch_size
    questions, texts = flatten_pairs(examples)
    if isinstance(loaded, CascadeTransformer):
        matrix = loaded.exit_scores(questions, texts, progress=progress)
    else:
        matrix = torch.tensor(loaded.score_pairs(questions, texts, progress=progress)).unsqueeze(1)
    with atomic_open(path, "wb") as handle:
        torch.save(matrix, handle)
    return matrix
