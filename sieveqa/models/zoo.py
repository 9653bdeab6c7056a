"""Models that ship with sieveqa, by name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sieveqa.errors import ModelFormatError

if TYPE_CHECKING:
    from sieveqa.models.pair_model import PairModel

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
SHIPPED = {
    "default": RESOURCES / "default-ranker",
    # The default ranker retrofitted with exits (heads only; its body is read from "default").
    "default-cascade": RESOURCES / "default-cascade",
}


def resolve_model(name_or_path: str | Path) -> Path:
    """A shipped model's folder by name, or the given folder; raises if neither exists."""
    shipped = SHIPPED.get(str(name_or_path))
    path = shipped if shipped is not None else Path(name_or_path).expanduser()
    if not path.is_dir():
        names = ", ".join(SHIPPED)
        raise ModelFormatError(
            f"model {str(name_or_path)!r} is neither a shipped model ({names}) nor a folder"
        )
    return path


def model_ref(name_or_path: str | Path) -> str:
    """How to record a model so it can be found again: a shipped name as is, a folder as its
    absolute path (raises if it is neither)."""
    name = str(name_or_path)
    return name if name in SHIPPED else str(resolve_model(name_or_path).resolve())


def load_model(name_or_path: str | Path) -> PairModel:
    """Load any saved sieveqa pair model, picking the class from the folder's recorded kind."""
    from sieveqa.models._saving import model_kind
    from sieveqa.models.cascade import CascadeTransformer
    from sieveqa.models.cross_encoder import CrossEncoder
    from sieveqa.models.hashing import HashingModel

    path = resolve_model(name_or_path)
    classes: dict[str, type[PairModel]] = {
        c.kind: c for c in (CrossEncoder, CascadeTransformer, HashingModel)
    }
    kind = model_kind(path)
    if kind not in classes:
        raise ModelFormatError(
            f"{path}/config.json: unknown model kind {kind!r}; known: {', '.join(classes)}"
        )
    return classes[kind].from_pretrained(path)
