"""The service's load bench for two versions of the code, interleaved in one run (A B A B ...), so
machine noise falls on both: ``--old`` is a checkout of an earlier commit (``git worktree add``), run
with that checkout's package in place of the installed one, server included.

    git worktree add /tmp/old 54dc826
    python bench/serve_ab.py --old /tmp/old --pairs 2 --clients 8,32 --out-dir bench/results/serving/ab
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

_RUN_OLD = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path.insert(0, {old!r})
{body}
"""
_SERVER = "from sieveqa.cli import main\nmain()\n"
_BENCH = """
import contextlib, subprocess
sys.path.insert(0, {bench!r})
import _common, serve_load
real, server = subprocess.Popen, {server!r}

def popen(cmd, *args, **kwargs):  # the served process runs the old checkout too
    if cmd and str(cmd[0]).endswith("/sieveqa"):
        cmd = [sys.executable, server, *cmd[1:]]
    return real(cmd, *args, **kwargs)

subprocess.Popen = popen
sys.argv = ["serve_load", *{argv!r}]
serve_load.main()
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--old", type=Path, required=True, help="a checkout of the earlier commit")
    parser.add_argument("--pairs", type=int, default=2, help="A/B rounds")
    parser.add_argument("--clients", default="8,32")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out-dir", type=Path, default=Path("bench/results/serving/ab"))
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    bench = str(Path(__file__).resolve().parent)
    server = args.out_dir.resolve() / "_old_server.py"
    server.write_text(_RUN_OLD.format(old=str(args.old.resolve()), body=_SERVER))
    summary = []
    for i in range(args.pairs):
        for which in ("old", "new"):
            out = args.out_dir / f"{which}-{i + 1}.json"
            argv = [
                "--clients",
                args.clients,
                "--repeats",
                "2",
                "--rounds",
                str(args.rounds),
                "--out",
                str(out),
            ]
            if which == "new":
                subprocess.run([sys.executable, f"{bench}/serve_load.py", *argv], check=True)
            else:
                body = _BENCH.format(bench=bench, server=str(server), argv=argv)
                script = _RUN_OLD.format(old=str(args.old.resolve()), body=body)
                subprocess.run([sys.executable, "-c", script], check=True)
            data = json.loads(out.read_text())
            rows = {r["clients"]: r["pairs_per_s"] for r in data["rows"]}
            summary.append({"code": which, "round": i + 1, "offline": data["offline_pairs_per_s"], **rows})
            print(summary[-1], flush=True)
    server.unlink()
    (args.out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
