"""The derived benchmarks ``sieveqa data build`` makes (each read afterwards by name through
``sieveqa.data.registry``): what each builder takes and where its cache goes."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from sieveqa.errors import DataFormatError
from sieveqa.paths import cache_root


def _build_squad_as2(top_k: int | None, force: bool) -> dict:
    from sieveqa.data.squad_as2 import build_squad_as2

    return build_squad_as2(force=force, **({"top_k": top_k} if top_k is not None else {}))


def _build_squad_train_as2(top_k: int | None, force: bool) -> dict:
    from sieveqa.data.squad_train_as2 import build_squad_train_as2

    return build_squad_train_as2(force=force, **({"train_top_k": top_k} if top_k is not None else {}))


def _build_squad_open_train(top_k: int | None, force: bool) -> dict:
    from sieveqa.data.squad_open import TRAIN_NAME, build_squad_open_train

    if force:
        shutil.rmtree(cache_root() / TRAIN_NAME, ignore_errors=True)
    return build_squad_open_train(**({"top_k": top_k} if top_k is not None else {}))


def _cached(name: str, force: bool) -> Path:
    folder = cache_root() / name
    if force:
        shutil.rmtree(folder, ignore_errors=True)
    return folder


def _build_squad2_open(top_k: int | None, force: bool) -> dict:
    from sieveqa.data.squad2 import OPEN_NAME, build_squad2_open

    return build_squad2_open(_cached(OPEN_NAME, force), **({"top_k": top_k} if top_k is not None else {}))


def _build_squad2_passages(top_k: int | None, force: bool) -> dict:
    from sieveqa.data.squad2 import PASSAGES_NAME, build_squad2_passages

    folder = _cached(PASSAGES_NAME, force)
    return build_squad2_passages(folder, **({"top_k": top_k} if top_k is not None else {}))


def _build_squad_unanswerable(top_k: int | None, force: bool) -> dict:
    from sieveqa.data.unanswerable import NAME, build_squad_unanswerable

    if top_k is not None:
        raise DataFormatError("squad-unanswerable retrieves nothing (its questions keep their own paragraph)")
    return build_squad_unanswerable(_cached(NAME, force))


def _build_squad_train_passages(top_k: int | None, force: bool) -> dict:
    from sieveqa.data.passage_sets import build_squad_train_passages

    if force:
        shutil.rmtree(cache_root() / "squad-train-passages", ignore_errors=True)
    return build_squad_train_passages(**({"top_k": top_k} if top_k is not None else {}))


#: Derived benchmarks ``sieveqa data build`` makes: each builder takes BM25's paragraphs per (training)
#: question (None: its default) and ``force``, and returns the manifest.
BUILDERS: dict[str, Callable[[int | None, bool], dict]] = {
    "squad-as2": _build_squad_as2,
    "squad-train-as2": _build_squad_train_as2,
    "squad-train-passages": _build_squad_train_passages,
    "squad-open-train": _build_squad_open_train,
    "squad2-open": _build_squad2_open,
    "squad2-passages": _build_squad2_passages,
    "squad-unanswerable": _build_squad_unanswerable,
}
