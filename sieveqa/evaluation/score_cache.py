"""Unpruned scores of a saved model on a named dataset, computed once and cached.

Pruning policies (cascade drop ratios, thresholds, sequential rankers) are all simulated from these
matrices, so trying another grid or another α costs no model pass. The cache key covers the model
folder, the sha256 of its weights (and of the body it reads, for heads-only models), and the
dataset's candidates.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from sieveqa.data.records import RankingExample
from sieveqa.io import atomic_open, file_sha256
from sieveqa.models._saving import WEIGHTS, hf_config, read_config
from sieveqa.models.base import flatten_pairs
from sieveqa.models.pair_model import PairModel
from sieveqa.models.zoo import load_model, resolve_model
from sieveqa.paths import cache_root


def _key(folder: Path, dataset: str, examples: Sequence[RankingExample]) -> str:
    if hf_config(folder) is not None:  # a Hugging Face folder: its weights files say which model it is
        meta: dict = {}
        files = sorted([*folder.glob("*.safetensors"), *folder.glob("*.bin")]) or [folder / "config.json"]
        weights = "|".join(file_sha256(f) for f in files)
    else:
        meta = read_config(folder)
        weights = meta.get("weights_sha256") or file_sha256(folder / WEIGHTS)
    # The texts, not only the ids: a file of one's own may change its texts under the same ids.
    digest = hashlib.sha1()
    for ex in examples:
        digest.update(ex.question.text.encode())
        for c in ex.candidates:
            digest.update(f"\x00{c.id}\x01{c.text}".encode())
    ids = digest.hexdigest()
    # A model that reads its body from another one (a retrofit's heads) is also keyed by that body.
    text = f"{folder.resolve()}|{weights}|{meta.get('body_fingerprint', '')}|{dataset}|{ids}"
    return hashlib.sha1(text.encode()).hexdigest()[:20]


def cached_scores(
    model: str,
    dataset: str,
    examples: Sequence[RankingExample],
    progress: bool = False,
    cache_dir: str | Path | None = None,
    batch_size: int = 128,
    loaded: PairModel | None = None,
) -> Tensor:
    """Scores of every candidate with nothing pruned: candidates × scores per pair (one column for a
    cross-encoder, one per exit for a cascade), example order. Read from ``cache_dir`` (default
    ``~/.cache/sieveqa/scores``). ``loaded`` is ``model`` already loaded, if the caller has it.
    Always fp32 on the CPU, so cached numbers do not depend on the machine's precision."""
    folder = resolve_model(model)
    root = Path(cache_dir) if cache_dir is not None else cache_root() / "scores"
    path = root / f"{_key(folder, dataset, examples)}.pt"
    if path.is_file():
        return torch.load(path, weights_only=True)
    loaded = (
        loaded if loaded is not None else load_model(model, PairModel, want="a pair model (cached scores)")
    )
    loaded.configure(device="cpu", precision="fp32", batch_size=batch_size)
    matrix, _ = loaded.score_matrix(*flatten_pairs(examples), progress=progress)
    with atomic_open(path, "wb") as handle:
        torch.save(matrix, handle)
    return matrix
