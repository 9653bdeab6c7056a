"""Fuzz ``sieveqa serve`` with schemathesis over its own OpenAPI schema (issue 14): valid and invalid
requests of every operation, every check schemathesis has (no 5xx, status codes and bodies as the
schema says, invalid data refused, valid data accepted), against the default model and the demo index.

    python bench/serve_fuzz.py --max-examples 250 --out bench/results/serving/fuzz.json
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import finish, served

HERE = Path(__file__).parent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="default")
    parser.add_argument("--max-examples", type=int, default=250, help="per operation and phase")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--out", type=Path, default=HERE / "results/serving/fuzz.json")
    args = parser.parse_args()
    sieveqa = str(Path(sys.executable).parent / "sieveqa")
    with tempfile.TemporaryDirectory() as tmp:
        index = f"{tmp}/demo-index"
        subprocess.run([sieveqa, "index", "corpus", "--input", "demo", "--out", index], check=True)
        with served("--model", args.model, "--index", index, port=args.port) as url:
            command = [
                str(Path(sys.executable).parent / "schemathesis"),
                "--config-file",
                str(HERE / "schemathesis.toml"),
                "run",
                f"{url}/openapi.json",
                "--checks",
                "all",
                "--max-examples",
                str(args.max_examples),
                "--seed",
                str(args.seed),
                "--no-color",
            ]
            run = subprocess.run(command, capture_output=True, text=True)
    print(run.stdout[-6000:])
    summary = re.search(r"(\d+) generated, (.*)", run.stdout)
    failures = re.findall(r"❌ (ST\d+ [^:]+): (\d+)", run.stdout)
    finish(
        args.out,
        "serve_fuzz",
        {
            "model": args.model,
            "schemathesis_exit_code": run.returncode,
            "cases": int(summary.group(1)) if summary else None,
            "outcome": summary.group(2).strip() if summary else run.stdout[-500:],
            "failures": {name: int(n) for name, n in failures},
            "server_errors": sum(int(n) for name, n in failures if "Server error" in name),
            "max_examples": args.max_examples,
            "seed": args.seed,
        },
    )


if __name__ == "__main__":
    main()
