"""Where data and caches live: ``$SIEVEQA_DATA`` (else ``../shared/data``) and ``$SIEVEQA_CACHE``."""

from __future__ import annotations

import os
from pathlib import Path

from sieveqa.errors import ConfigError, DatasetNotFoundError

_CANDIDATES = (Path.cwd() / ".." / "shared" / "data", Path(__file__).resolve().parents[2] / "shared" / "data")


def data_root() -> Path:
    """Return the folder holding wikiqa/, trecqa/ and squad/ (raises if there is none)."""
    env = os.environ.get("SIEVEQA_DATA")
    if env:
        root = Path(env).expanduser()
        if not root.is_dir():
            raise DatasetNotFoundError(f"SIEVEQA_DATA={env!r} is not a folder")
        return root
    for root in _CANDIDATES:
        if root.is_dir():
            return root.resolve()
    raise DatasetNotFoundError(
        "no data folder: set SIEVEQA_DATA to the folder holding wikiqa/, trecqa/ and squad/"
    )


def cache_root() -> Path:
    """Folder for derived data (SQuAD-AS2): ``$SIEVEQA_CACHE``, else ``~/.cache/sieveqa``."""
    env = os.environ.get("SIEVEQA_CACHE")
    root = Path(env).expanduser() if env else Path.home() / ".cache" / "sieveqa"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        why = err.strerror or err
        raise ConfigError(
            f"{root}: the cache folder cannot be made ({why}); set SIEVEQA_CACHE to a writable one"
        ) from None
    return root


def run_folder_hint(path: str | Path) -> str:
    """``"; a training run's folder: its model is PATH/best"`` where ``path`` holds a trained model in
    ``best/`` (what ``train --out`` writes), else ``""``: for errors about a folder that is no model."""
    best = Path(path).expanduser() / "best"
    return f"; a training run's folder: its model is {best}" if (best / "config.json").is_file() else ""
