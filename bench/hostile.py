"""Hostile inputs, tried as a user would: the cases of issues 30 and 42 over the real CLI (one process
per command, the shipped models) and a real `sieveqa serve`. Each case says what must happen: exit 0, or
exit 2 with one `error:` line naming the option, file, line or field; over HTTP, no 5xx and the
status expected. Writes every case's outcome and a summary (tracebacks, 5xx, misses).

    python bench/hostile.py --out bench/results/hostile.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _common import finish
from _hostile_cases import cli_cases, http_cases, write_files

BIN = Path(sys.executable).parent / "sieveqa"


def _run_cli(argv: list, code: int, words: list[str]) -> dict:
    """Run one case; ``--env K=V`` and ``--damage CACHE`` (truncate the first exported layer found
    under CACHE first) are the bench's own, taken out of argv."""
    argv, env = list(map(str, argv)), {**os.environ, "COLUMNS": "200"}
    while "--env" in argv:
        i = argv.index("--env")
        key, _, value = argv[i + 1].partition("=")
        env[key] = value
        del argv[i : i + 2]
    if "--damage" in argv:
        i = argv.index("--damage")
        layer = next(Path(argv[i + 1]).rglob("layer00.onnx"))
        layer.write_bytes(layer.read_bytes()[: layer.stat().st_size // 2])
        del argv[i : i + 2]
    start = time.perf_counter()
    done = subprocess.run([str(BIN), *argv], capture_output=True, text=True, timeout=900, env=env)
    out = done.stdout + done.stderr
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    ok = done.returncode == code and "Traceback" not in out
    if code == 2:
        ok = ok and len(errors) == 1 and all(w in errors[0] for w in words)
    return {
        "exit": done.returncode,
        "line": errors[0] if errors else out.strip().splitlines()[-1:],
        "traceback": "Traceback" in out,
        "seconds": round(time.perf_counter() - start, 1),
        "ok": ok,
    }


def _moved_index(url: str, idx: Path) -> list[dict]:
    """The served index moved away (a 503 naming it, not a 500) and back (answers again); /health
    names it without the server's path (issue 42)."""
    rows = []
    health = httpx.get(f"{url}/health", timeout=60).json()
    rows.append({"case": "/health: the index by name", "kind": "http", "status": 200,
                 "ok": health.get("index") == idx.name, "line": str(health.get("index"))})  # fmt: skip
    idx.rename(idx.with_name("moved"))
    try:
        gone = httpx.post(f"{url}/answer", json={"question": "Who?"}, timeout=120)
    finally:
        idx.with_name("moved").rename(idx)
    back = httpx.post(f"{url}/answer", json={"question": "Who?"}, timeout=120)
    moved_ok = gone.status_code == 503 and idx.name in gone.text
    rows.append({"case": "/answer: the index moved away", "kind": "http", "status": gone.status_code,
                 "ok": moved_ok, "line": gone.text[:160]})  # fmt: skip
    rows.append({"case": "/answer: the index back", "kind": "http", "status": back.status_code,
                 "ok": back.status_code == 200, "line": ""})  # fmt: skip
    return rows


def _serve(idx: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(BIN), "serve", "--index", str(idx), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("sieveqa serve did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sieveqa-hostile-"))
    try:
        files = write_files(tmp)
        idx = tmp / "demo-index"
        subprocess.run(
            [str(BIN), "index", "corpus", "--input", "demo", "--out", str(idx)],
            check=True,
            capture_output=True,
        )
        rows = []
        for name, argv, code, words in cli_cases(files, idx, tmp):
            rows.append({"case": name, "kind": "cli", **_run_cli(argv, code, words)})
            print(
                ("ok  " if rows[-1]["ok"] else "MISS"), name, rows[-1]["exit"], rows[-1]["line"], flush=True
            )
        proc, url = _serve(idx)
        try:
            for name, method, path, kwargs, status in http_cases():
                got = httpx.request(method, url + path, timeout=120, **kwargs)
                ok = got.status_code == status and not (path == "/docs" and "cdn.jsdelivr" in got.text)
                rows.append({"case": name, "kind": "http", "status": got.status_code, "ok": ok,
                             "line": got.text[:160] if got.status_code >= 400 else ""})  # fmt: skip
                print(("ok  " if ok else "MISS"), name, got.status_code, flush=True)
            rows += _moved_index(url, idx)
            for row in rows[-3:]:
                print(("ok  " if row["ok"] else "MISS"), row["case"], row["status"], flush=True)
        finally:
            proc.terminate()
            proc.wait(60)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {
        "cases": len(rows),
        "ok": sum(r["ok"] for r in rows),
        "tracebacks": sum(bool(r.get("traceback")) for r in rows),
        "5xx": sum(r.get("status", 0) >= 500 for r in rows),
        "missed": [r["case"] for r in rows if not r["ok"]],
    }
    print(summary)
    finish(args.out, "hostile", {"summary": summary, "rows": rows})


if __name__ == "__main__":
    main()
