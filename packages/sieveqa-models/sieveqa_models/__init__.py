"""sieveqa's models that ship apart from its wheel (``default-v1``, ``default-v1-cascade``, ``has``):
``sieveqa.models.zoo`` finds them in ``resources/`` here by name."""

from pathlib import Path

RESOURCES = Path(__file__).resolve().parent / "resources"
