"""The package's layering (pyproject's import-linter contracts) holds: no upward imports, no cycles."""

from pathlib import Path

from importlinter.cli import lint_imports

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_import_contracts_are_kept() -> None:
    assert lint_imports(config_filename=str(PYPROJECT), no_cache=True) == 0
