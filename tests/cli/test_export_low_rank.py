"""sieveqa export --format low-rank: a model folder of factors, and one line for what cannot be."""

from __future__ import annotations

import json

import pytest

from sieveqa.models.zoo import load_model
from tests.cli.conftest import one_error_line


@pytest.mark.slow
def test_the_command_writes_a_folder_that_loads_and_refuses_bad_asks_in_one_line(
    sieveqa, saved_tiny, tmp_path
) -> None:
    result = sieveqa("export", saved_tiny, tmp_path / "out", "--format", "low-rank", "--rank", "4")
    assert result.exit_code == 0, result.output
    assert "0 matrices at rank 4" in result.output  # the tiny model is its base: nothing changed
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["low_rank"]["rank"] == 4 and config["low_rank_of"] == str(saved_tiny)
    assert load_model(tmp_path / "out").score_pairs(["q"], ["a"]) == load_model(saved_tiny).score_pairs(
        ["q"], ["a"]
    )
    assert "exists and is not an empty folder" in one_error_line(
        sieveqa("export", saved_tiny, tmp_path / "out", "--format", "low-rank")
    )
    assert "needs OUT" in one_error_line(sieveqa("export", saved_tiny, "--format", "low-rank"))
    assert "--int8 and --calibrate are for onnx" in one_error_line(
        sieveqa("export", saved_tiny, tmp_path / "q", "--format", "low-rank", "--int8")
    )
    assert "--rank" in one_error_line(
        sieveqa("export", saved_tiny, tmp_path / "r", "-f", "low-rank", "--rank", "0")
    )
