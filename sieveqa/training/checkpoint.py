"""A run's checkpoint beside its weights: every random generator's state (so a resumed run ends with
the weights an uninterrupted one would), the check that a checkpoint to resume was written with
the same settings and data, made before any model or data is prepared, and a stop asked for by a
signal, taken at a step's end (``StopRequest``)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import random
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from sieveqa.errors import ConfigError
from sieveqa.io import read_json_object
from sieveqa.training.config import TrainConfig

__all__ = ["StopRequest", "check_checkpoint", "rng_state", "sample_digest", "set_rng_state", "targets_digest"]


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


#: The ``run`` entry holding ``targets_digest`` of the teachers' scores (a checkpoint written before it
#: has none, and is not refused for it).
TARGETS = "targets"
#: The ``run`` entry holding ``sample_digest`` of the training sample.
DATA = "data"


def sample_digest(sample: Any) -> str | None:
    """sha256 of a recipe's training sample (a dataclass of lists: texts, labels, targets), fed item by
    item (a JSON copy of SQuAD-train-AS2's 2.16M pairs took 25 s and 3.6 GB): what the count of
    examples a checkpoint records does not pin (a file edited in place keeps its count)."""
    if not dataclasses.is_dataclass(sample) or isinstance(sample, type):
        return None

    def text(item: Any) -> str:
        if isinstance(item, str):
            return item
        return repr(item) if isinstance(item, int | float) else json.dumps(item, default=repr)

    digest = hashlib.sha256()
    for f in dataclasses.fields(sample):
        value = getattr(sample, f.name)
        items = value if isinstance(value, list) else [value]
        digest.update(f"\x1d{f.name}:{len(items)}".encode())
        for start in range(0, len(items), 65536):  # joined a chunk at a time: a call an item was slow
            chunk = "\x1e".join(map(text, items[start : start + 65536]))
            digest.update(("\x1e" + chunk).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def targets_digest(targets: list[list[float]]) -> str:
    """sha256 of what a run learns from beside its sample (teachers' scores), rounded to fp16: scores
    computed again on another machine differ in their last bits, not in what they teach."""
    digest = hashlib.sha256()
    for i, scores in enumerate(targets):
        digest.update(f"\x1d{i}:{len(scores)}".encode())
        digest.update(np.asarray(scores, dtype=np.float16).tobytes())
    return digest.hexdigest()


_CHANGED = {
    DATA: "the training data's content (a file edited in place?)",
    TARGETS: "the teachers' scores (a scores file replaced, or scored by another teacher?)",
}


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
            _CHANGED.get(k) or f"--{k.replace('_', '-')} {theirs_run.get(k)!r} -> {v!r}"
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


class StopRequest:
    """Ctrl-C or SIGTERM while a run trains: the run stops at the end of the step under way, its
    checkpoint written, so the same command goes on from there (a step killed midway lost every step
    since the last checkpoint); the same signal again stops at once."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signal: int | None = None

    @contextlib.contextmanager
    def installed(self) -> Iterator[StopRequest]:
        """Catch the signals while the block runs (in the main thread only: elsewhere as before)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        # A signal its launcher ignores (SIGINT in a background job) or that C code handles stays so.
        previous = {s: h for s in self.SIGNALS if callable(h := signal.getsignal(s)) or h == signal.SIG_DFL}

        def handler(signum: int, frame: Any) -> None:
            if self.signal is not None:  # asked twice: stop now, as without this handler
                signal.signal(signum, previous[signum])
                os.kill(os.getpid(), signum)
                return
            self.signal = signum
            from tqdm.auto import tqdm

            name = signal.Signals(signum).name
            tqdm.write(f"{name}: stopping at this step's end, its checkpoint written ({name} again: now)")

        for s in previous:
            signal.signal(s, handler)
        try:
            yield self
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
