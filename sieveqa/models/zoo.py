"""Models that ship with sieveqa, by name."""

from __future__ import annotations

from pathlib import Path

from sieveqa.errors import ModelFormatError

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
SHIPPED = {"default": RESOURCES / "default-ranker"}


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
