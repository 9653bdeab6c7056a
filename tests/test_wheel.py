"""The wheel, as a new user gets it: built, installed into a clean virtualenv, answering on the
demo corpus (bench/fresh_install.py does the work; its JSON is checked here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_wheel_installs_clean_and_ranks_and_answers(tmp_path: Path) -> None:
    pytest.importorskip("build")
    out = tmp_path / "fresh.json"
    done = subprocess.run(
        [sys.executable, "bench/fresh_install.py", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    report = json.loads(out.read_text())
    steps = {s["step"]: s["exit_code"] for s in report["runs"]["base"]}
    assert steps["sieveqa rank"] == steps["sieveqa answer"] == 0
    assert report["wheel"].startswith("sieveqa-0.1.0-py3-none-any") and report["wheel_mb"] <= 100
    assert steps["load has from sieveqa-models"] == 0 and report["models_wheel_mb"] <= 100
