"""A real training run killed and resumed ends with the same weights as an uninterrupted one.

Runs ``sieveqa train ARGS --stop-after N`` twice, into two folders under ``--work``: once straight
through, once SIGKILLed after ``--kill-after`` seconds of training (between two checkpoints) and then
run again with the same command until step N. Compares the two checkpoints' weights tensor by tensor.

    python bench/resume_check.py --steps 600 --kill-after 60 --out bench/results/tanda/resume-check.json \
        -- --init minilm-l6 --train trecqa:train-all,squad-train-as2:train --max-negatives 6 ...
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from _common import finish
from safetensors.torch import load_file

SIEVEQA = str(Path(sys.executable).parent / "sieveqa")


def _train(args: list[str], out: Path, steps: int, log: Path) -> subprocess.Popen:
    command = [SIEVEQA, "train", *args, "--out", str(out), "--stop-after", str(steps), "--no-progress"]
    out.mkdir(parents=True, exist_ok=True)
    with log.open("a") as handle:
        return subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)


def _finish(proc: subprocess.Popen, what: str) -> None:
    if proc.wait() != 0:
        raise SystemExit(f"{what} failed with exit code {proc.returncode}")


def _step(out: Path) -> int:
    state = out / "checkpoint" / "trainer_state.json"
    if not state.is_file():
        return 0
    return json.loads(state.read_text())["step"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600, help="optimizer steps both runs stop at")
    parser.add_argument("--kill-after", type=float, default=60.0, help="seconds after the first checkpoint")
    parser.add_argument("--work", type=Path, default=Path("runs/resume-check"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("train_args", nargs=argparse.REMAINDER, help="-- then sieveqa train's options")
    args = parser.parse_args()
    train_args = [a for a in args.train_args if a != "--"]
    shutil.rmtree(args.work, ignore_errors=True)
    whole, killed = args.work / "whole", args.work / "killed"

    started = time.perf_counter()
    _finish(_train(train_args, whole, args.steps, args.work / "whole.log"), "the uninterrupted run")
    whole_seconds = time.perf_counter() - started

    proc = _train(train_args, killed, args.steps, args.work / "killed.log")
    while _step(killed) == 0 and proc.poll() is None:
        time.sleep(1)
    time.sleep(args.kill_after)
    if proc.poll() is not None:
        raise SystemExit("the run ended before the kill: use a smaller --kill-after or more --steps")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = _step(killed)
    if killed_at >= args.steps:
        raise SystemExit(f"the kill came after step {args.steps}: nothing was resumed")
    _finish(_train(train_args, killed, args.steps, args.work / "killed.log"), "the resumed run")

    a = load_file(str(whole / "checkpoint" / "model.safetensors"))
    b = load_file(str(killed / "checkpoint" / "model.safetensors"))
    diffs = {name: float((a[name].float() - b[name].float()).abs().max()) for name in a}
    if [_step(whole), _step(killed)] != [args.steps, args.steps]:
        raise SystemExit(f"the runs stopped at steps {_step(whole)} and {_step(killed)}, not {args.steps}")
    result = {
        "steps": args.steps,
        "uninterrupted_seconds": round(whole_seconds, 1),
        "checkpoint_step_at_kill": killed_at,
        "final_steps": [_step(whole), _step(killed)],
        "tensors": len(a),
        "same_tensor_names": sorted(a) == sorted(b),
        "max_abs_difference": max(diffs.values()),
        "identical": all(torch.equal(a[n], b[n]) for n in a),
    }
    print(result)
    finish(args.out, "resume_check", {"train_args": train_args, "result": result})


if __name__ == "__main__":
    main()
