"""The main side of the race: a sentence-transformers backend in its own process and virtualenv
(bench/_st_worker.py), called like an in-process system and timed by the worker itself."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

WORKER = Path(__file__).resolve().parent / "_st_worker.py"


class StWorker:
    """One ``BACKEND:PRECISION`` of sentence-transformers' CrossEncoder over a copy of ``model_dir``
    (each worker writes its own exports); calling it scores every pair once: ``(scores, seconds)``,
    scores only on the first call."""

    def __init__(
        self, python: str, model_dir: Path, system: str, pairs: list[tuple[str, str]], **options: Any
    ) -> None:
        self.system = system
        self._tmp = tempfile.TemporaryDirectory(prefix="st-race-")
        folder = Path(self._tmp.name) / "model"
        shutil.copytree(model_dir, folder)
        pairs_file = Path(self._tmp.name) / "pairs.json"
        pairs_file.write_text(json.dumps(pairs))
        flags = [f"--{k.replace('_', '-')}={v}" for k, v in options.items() if v is not None]
        command = [
            python,
            str(WORKER),
            "--model",
            str(folder),
            "--system",
            system,
            "--pairs",
            str(pairs_file),
            *flags,
        ]
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:  # libraries may print before the worker is ready
            if line.strip() == "ready":
                return
        raise RuntimeError(
            f"sentence-transformers {system}: the worker exited ({self.proc.wait()}) before ready"
        )

    def __call__(self) -> tuple[list[float] | None, float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        return reply.get("scores"), float(reply["seconds"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self._tmp.cleanup()


def calibration_folder(sentences: list[str], root: Path) -> Path:
    """A local dataset folder (train.jsonl of {sentence}) for sentence-transformers' OpenVINO int8."""
    folder = root / "calibration"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "train.jsonl").open("w") as handle:
        for text in sentences:
            handle.write(json.dumps({"sentence": text}) + "\n")
    return folder
