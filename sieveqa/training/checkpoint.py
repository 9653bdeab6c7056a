"""A run's checkpoint beside its weights: every random generator's state (so a resumed run ends with
the weights an uninterrupted one would), and the check that a checkpoint to resume was written with
the same settings and data, made before any model or data is prepared."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from sieveqa.errors import ConfigError
from sieveqa.io import read_json_object
from sieveqa.training.config import TrainConfig

__all__ = ["check_checkpoint", "rng_state", "sample_digest", "set_rng_state"]


def rng_state() -> dict[str, Any]:
    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": [version, list(internal), gauss],
        "numpy": [kind, keys.tolist(), pos, has_gauss, cached],
    }


def set_rng_state(saved: dict[str, Any]) -> None:
    version, internal, gauss = saved["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = saved["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))


#: The ``run`` entry holding ``sample_digest`` of the training sample.
DATA = "data"


def sample_digest(sample: Any) -> str | None:
    """sha256 of a recipe's training sample (a dataclass of texts, labels and targets, as JSON): what
    the count of examples a checkpoint records does not pin (a file edited in place keeps its count)."""
    if not dataclasses.is_dataclass(sample) or isinstance(sample, type):
        return None
    text = json.dumps(dataclasses.asdict(sample), ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _comparable(config: dict[str, Any]) -> dict[str, Any]:
    # Progress bars, the device and where an invocation pauses change nothing in what a run computes;
    # every other setting does.
    return {k: v for k, v in config.items() if k not in ("progress", "device", "stop_after")}


def check_checkpoint(
    out_dir: str | Path,
    config: TrainConfig,
    n_examples: int,
    unit: str = "n_pairs",
    run: dict[str, Any] | None = None,
) -> bool:
    """Whether ``out_dir`` holds a checkpoint to resume; refuse one written with other settings or
    data, naming what differs (before any model or data is prepared).

    ``unit`` says what ``n_examples`` counts: ``n_pairs`` the training rows (a reader's passage may
    make several), ``n_examples`` the sampled examples a recipe counts before tokenizing; a
    checkpoint that did not record the count is checked again by the trainer, by rows. ``run`` is
    what the run was asked to do (``--arch``, ``--init``, data, recipe options), compared by option.
    """
    path = Path(out_dir) / "checkpoint" / "trainer_state.json"
    if not path.is_file():
        return False
    saved = read_json_object(path)
    # A setting added after the checkpoint was written compares as its default, which it then had.
    theirs = _comparable({**TrainConfig().to_dict(), **saved.get("config", {})})
    ours = _comparable(config.to_dict())
    diffs = [f"{k} {theirs.get(k)!r} -> {ours.get(k)!r}" for k in sorted(ours) if theirs.get(k) != ours[k]]
    if run is not None and isinstance(saved.get("run"), dict):
        theirs_run = saved["run"]
        diffs += [
            "the training data's content (a file edited in place?)"
            if k == DATA
            else f"--{k.replace('_', '-')} {theirs_run.get(k)!r} -> {v!r}"
            for k, v in sorted(run.items())
            if k in theirs_run and theirs_run[k] != _jsonable(v)
        ]
    if unit in saved and saved[unit] != n_examples:
        diffs.append(f"training examples {saved[unit]} -> {n_examples}")
    if diffs:
        raise ConfigError(
            f"{path.parent}: the checkpoint was written with other settings ({'; '.join(diffs)}); "
            "run with the same settings to resume, or use a new output folder (or --no-resume)"
        )
    return True


def _jsonable(value: Any) -> Any:
    """``value`` as a JSON round trip gives it back (tuples become lists)."""
    return json.loads(json.dumps(value))
