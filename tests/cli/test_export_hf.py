"""sieveqa export --format hf: the folder, and one line for what cannot be exported."""

from __future__ import annotations

import pytest

from tests.cli.conftest import one_error_line


@pytest.mark.slow
def test_the_command_writes_the_folder_and_refuses_bad_asks_in_one_line(
    sieveqa, saved_tiny, saved_cascade, tmp_path
) -> None:
    result = sieveqa("export", saved_tiny, tmp_path / "out", "--format", "hf")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "config.json").exists()
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []  # nothing left beside it
    assert "exists and is not an empty folder" in one_error_line(
        sieveqa("export", saved_tiny, tmp_path / "out", "--format", "hf")
    )
    assert "needs OUT" in one_error_line(sieveqa("export", saved_tiny, "--format", "hf"))
    assert "no Hugging Face equivalent" in one_error_line(
        sieveqa("export", saved_cascade, tmp_path / "c", "--format", "hf")
    )
    assert "OUT is for --format hf" in one_error_line(sieveqa("export", saved_tiny, tmp_path / "x"))
