"""``sieveqa batch`` in one process against Ray Data on the same CPUs (issue 14), and a killed Ray job
resumed: every question of a dataset written to a JSONL file, ranked in shards by each setup, wall time
of the whole command (model loading and, for Ray, starting it included).

Then a Ray job is killed (SIGKILL to its process group) once some shards are on disk, run again, and
the bench checks that the second run ranked only the missing shards and that the result matches the
single-process one.

    python bench/ray_batch.py --dataset wikiqa:train-raw --out bench/results/serving/ray_batch.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import finish, markdown

from sieveqa.data.jsonl import example_dict, write_jsonl
from sieveqa.data.registry import load_dataset

SIEVEQA = str(Path(sys.executable).parent / "sieveqa")


def batch(source: Path, out: Path, shard_size: int, *extra: str) -> tuple[float, str]:
    """Run ``sieveqa batch``; its wall time and output."""
    started = time.perf_counter()
    command = [SIEVEQA, "batch", "-i", str(source), "-o", str(out), "--shard-size", str(shard_size), *extra]
    run = subprocess.run(command, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, run.stdout


def ranked(out: Path) -> dict[str, list[tuple[str, float]]]:
    rows = (json.loads(line) for p in sorted(out.glob("shard-*.jsonl")) for line in p.open())
    return {r["qid"]: [(c["id"], c["score"]) for c in r["candidates"]] for r in rows}


def kill_and_resume(source: Path, out: Path, shard_size: int, shards: int, after: int) -> dict:
    """Kill a Ray job once ``after`` shards are written; run it again; what each run ranked."""
    command = [SIEVEQA, "batch", "-i", str(source), "-o", str(out), "--shard-size", str(shard_size), "--ray"]
    job = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    while len(list(out.glob("shard-*.jsonl"))) < after and job.poll() is None:
        time.sleep(0.2)
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    subprocess.run(
        [str(Path(sys.executable).parent / "ray"), "stop", "--force"], capture_output=True, check=False
    )
    before = len(list(out.glob("shard-*.jsonl")))
    leftovers = [p.name for p in out.iterdir() if p.name.startswith(".")]
    seconds, text = batch(source, out, shard_size, "--ray")
    return {
        "shards": shards,
        "written_before_kill": before,
        "temporary_files_after_kill": leftovers,
        "second_run_said": next(line for line in text.splitlines() if "already done" in line),
        "second_run_seconds": round(seconds, 1),
        "shards_at_end": len(list(out.glob("shard-*.jsonl"))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", default="wikiqa:train-raw")
    parser.add_argument("--shard-size", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("bench/results/serving/ray_batch.json"))
    args = parser.parse_args()
    examples = [e for e in load_dataset(args.dataset) if e.candidates]
    pairs = sum(len(e.candidates) for e in examples)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = work / "questions.jsonl"
        write_jsonl(source, (example_dict(e) for e in examples))
        shards = -(-len(examples) // args.shard_size)
        setups = {
            "one process, 2 threads": (),
            "Ray, 2 actors x 1 thread": ("--ray", "--actors", "2", "--threads", "1"),
            "Ray, 1 actor x 2 threads": ("--ray", "--actors", "1", "--threads", "2"),
        }
        rows = []
        for name, extra in setups.items():
            out = work / name.replace(" ", "_").replace(",", "")
            seconds, _ = batch(source, out, args.shard_size, *extra)
            rows.append(
                {"setup": name, "seconds": round(seconds, 1), "pairs_per_s": round(pairs / seconds, 1)}
            )
            print(rows[-1])
        base = rows[0]["pairs_per_s"]
        for row in rows:
            row["of_one_process"] = round(row["pairs_per_s"] / base, 2)
        local = ranked(work / "one_process_2_threads")
        resumed_out = work / "resumed"
        resume = kill_and_resume(source, resumed_out, args.shard_size, shards, after=max(1, shards // 3))
        resumed = ranked(resumed_out)
    same_order = all([c for c, _ in local[q]] == [c for c, _ in resumed[q]] for q in local)
    worst = max(abs(a - b) for q in local for (_, a), (_, b) in zip(local[q], resumed[q], strict=True))
    resume |= {"questions_match": sorted(local) == sorted(resumed), "same_rankings": same_order}
    resume["max_score_difference"] = worst
    print(markdown(rows, ["setup", "seconds", "pairs_per_s", "of_one_process"]))
    print(resume)
    finish(
        args.out,
        "ray_batch",
        {
            "dataset": args.dataset,
            "questions": len(examples),
            "pairs": pairs,
            "shard_size": args.shard_size,
            "rows": rows,
            "kill_and_resume": resume,
        },
    )


if __name__ == "__main__":
    main()
