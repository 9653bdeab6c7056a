"""Fixtures of the command-line tests: a runner and small saved models."""

import functools
from pathlib import Path

import pytest
import typer.testing
from typer.testing import CliRunner

from sieveqa.cli import app

# Typer's test runner builds the Click app from every command's signature on each invoke: about a
# quarter of a command test's time. The app does not change during a run, so it is built once.
# A test that registers a command option (a method of its own) calls rebuild_app before and after.
typer.testing._get_command = functools.cache(typer.testing._get_command)  # type: ignore[attr-defined]


def rebuild_app() -> None:
    """Build the app anew at the next invoke (after its commands' options changed)."""
    typer.testing._get_command.cache_clear()  # type: ignore[attr-defined]


class Runner:
    """Invokes ``sieveqa`` in-process; stderr comes back mixed into ``output``."""

    def __init__(self) -> None:
        self._runner = CliRunner()

    def __call__(self, *args: str):
        # A wide terminal, so help tables do not cut long option names.
        return self._runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "200"})


@pytest.fixture
def sieveqa() -> Runner:
    return Runner()


@pytest.fixture
def saved_easi(tmp_path: Path) -> Path:
    """A tiny EASI selector saved as a model folder."""
    from sieveqa.models.easi import EasiConfig, EasiModel

    return EasiModel(EasiConfig(backbone="tiny", max_length=64, stride=8)).save_pretrained(tmp_path / "easi")


@pytest.fixture
def saved_cascade(tiny_cascade, tmp_path: Path) -> Path:
    return tiny_cascade.save_pretrained(tmp_path / "tiny-cascade")


def one_error_line(result, code: int = 2) -> str:
    """The single ``error: ...`` line a failed command printed (and nothing like a traceback)."""
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]
