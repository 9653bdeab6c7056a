"""Hostile inputs, tried as a user would: the cases of issues 30 and 42 over the real CLI (one process
per command, the shipped models) and a real `sieveqa serve`. Each case says what must happen: exit 0, or
exit 2 with one `error:` line naming the option, file, line or field; over HTTP, no 5xx and the
status expected. Writes every case's outcome and a summary (tracebacks, 5xx, misses).

    python bench/hostile.py --out bench/results/hostile.json
"""

from __future__ import annotations

import argparse
import gzip
import json
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

BIN = Path(sys.executable).parent / "sieveqa"
EXAMPLE = Path(__file__).resolve().parents[1] / "sieveqa" / "resources" / "example.jsonl"
LONG_Q = "What protein carries oxygen in octopus blood " + "and why " * 200 + "?"


def _files(tmp: Path) -> dict[str, Path]:
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines() if line.strip()]
    f = {}

    def put(name: str, text: str | bytes) -> None:
        f[name] = tmp / name
        (f[name].write_bytes if isinstance(text, bytes) else f[name].write_text)(text)

    put("ok.jsonl", EXAMPLE.read_text())
    put("empty.jsonl", "")
    put("badjson.jsonl", json.dumps(rows[0]) + "\nnot json\n")
    put("surrogate.jsonl", json.dumps(rows[0]).replace("Eiffel", "Eiffel \\ud800") + "\n")
    put("dupqid.jsonl", json.dumps(rows[0]) + "\n" + json.dumps(rows[0]) + "\n")
    put(
        "nolabel.jsonl",
        "".join(
            json.dumps({**r, "candidates": [{**c, "label": 0} for c in r["candidates"]]}) + "\n" for r in rows
        ),
    )
    put("teachers-list.json.gz", gzip.compress(b"[1, 2, 3]"))
    put("teachers-cut.json.gz", gzip.compress(json.dumps({"a": [0.1] * 500}).encode())[:60])
    put("nonutf8.txt", b"What is \xff\xfe this?\n")
    put("docs-surrogate.jsonl", '{"id": "a", "text": "Bees \\ud800 make honey."}\n')
    put("docs-sentences.jsonl", '{"id": "a", "text": "Bees make honey.", "sentences": ["Wasps do not."]}\n')
    put("docs-wall.jsonl", json.dumps({"id": "wall", "text": " ".join(f"w{i}" for i in range(60000))}) + "\n")
    put("answers-dup.jsonl", '{"id": "a1", "text": "Bees make honey."}\n{"id": "a1", "text": "Again."}\n')
    put("store-empty-q.jsonl", '{"question": ""}\n')
    # Issue 42: pysbd's placeholders, a 5 MB wall, a BOM, a cache that cannot be written.
    put(
        "docs-placeholders.jsonl",
        json.dumps({"id": "g", "text": "Gauss: the flux ∯ E dA equals Q. Springs ♨ are warm."}) + "\n",
    )
    put(
        "docs-wall5mb.jsonl",
        json.dumps({"id": "wall5", "text": " ".join(f"w{i}" for i in range(700_000))}) + "\n",
    )
    put("bom.txt", "\ufeffWhat protein carries oxygen in octopus blood?\n".encode())
    put("not-a-folder", "a file where the cache folder should be")
    return f


def _cli_cases(f: dict[str, Path], idx: Path, tmp: Path) -> list[tuple[str, list[str], int, list[str]]]:
    """(name, argv, exit code, words the error line must hold)."""
    q = "What protein carries oxygen in octopus blood?"
    mhs = ["train", "--arch", "mhs", "--init", "default", "--train", f"jsonl:{f['ok.jsonl']}"]
    return [
        ("answer: a 1,600-character question", ["answer", LONG_Q, "--index", idx], 0, []),
        (
            "answer skyline --budget inf",
            ["answer", q, "--index", idx, "--method", "skyline", "--budget", "inf"],
            2,
            ["--budget"],
        ),
        (
            "answer skyline --budget 1e400",
            ["answer", q, "--index", idx, "--method", "skyline", "--budget", "1e400"],
            2,
            ["--budget"],
        ),
        (
            "eval-reader --budget inf",
            ["eval-reader", "--method", "skyline", "--budget", "inf"],
            2,
            ["--budget"],
        ),
        (
            "train-scheduler --budget inf",
            ["train-scheduler", "--budget", "inf", "--out", tmp / "s0"],
            2,
            ["--budget"],
        ),
        ("rank: lone surrogate", ["rank", "--input", f["surrogate.jsonl"]], 2, ["surrogate.jsonl", "1"]),
        (
            "batch: lone surrogate",
            ["batch", "-i", f["surrogate.jsonl"], "-o", tmp / "b0"],
            2,
            ["surrogate.jsonl"],
        ),
        (
            "index corpus: lone surrogate",
            ["index", "corpus", "--input", f["docs-surrogate.jsonl"], "--out", tmp / "i0"],
            2,
            ["docs-surrogate.jsonl"],
        ),
        (
            "answer --questions: lone surrogate",
            ["answer", "--questions", f["surrogate.jsonl"], "--index", idx],
            2,
            ["surrogate.jsonl"],
        ),
        (
            "answer --questions: not UTF-8",
            ["answer", "--questions", f["nonutf8.txt"], "--index", idx],
            2,
            ["nonutf8.txt"],
        ),
        *(
            (
                f"train --teachers: {what}",
                [*mhs, "--teachers", ",".join([str(f[name])] * 3), "--out", tmp / f"out-{name}"],
                2,
                [name],
            )
            for what, name in (
                ("gzip of a list", "teachers-list.json.gz"),
                ("cut gzip", "teachers-cut.json.gz"),
            )
        ),
        ("calibrate --passages 0", ["calibrate", "--passages", "0", "--out", tmp / "c0"], 2, ["--passages"]),
        (
            "calibrate on an empty file",
            ["calibrate", "--dataset", f"jsonl:{f['empty.jsonl']}", "--out", tmp / "c1"],
            2,
            ["empty.jsonl"],
        ),
        (
            "train-scheduler: empty --train",
            ["train-scheduler", "--train", f"jsonl:{f['empty.jsonl']}", "--out", tmp / "s1"],
            2,
            ["empty.jsonl"],
        ),
        ("eval-reader --limit 0", ["eval-reader", "--limit", "0"], 2, ["--limit"]),
        (
            "eval-reader: empty dataset",
            ["eval-reader", "--dataset", f"jsonl:{f['empty.jsonl']}"],
            2,
            ["empty.jsonl"],
        ),
        (
            "answer --retriever foo",
            ["answer", q, "--index", idx, "--retriever", "foo"],
            2,
            ["--retriever", "foo"],
        ),
        (
            "train-scheduler --epochs 0",
            ["train-scheduler", "--epochs", "0", "--out", tmp / "s2"],
            2,
            ["--epochs"],
        ),
        ("train-scheduler --lr -1", ["train-scheduler", "--lr", "-1", "--out", tmp / "s3"], 2, ["--lr"]),
        (
            "train-scheduler --passages 0",
            ["train-scheduler", "--passages", "0", "--out", tmp / "s4"],
            2,
            ["--passages"],
        ),
        ("index info: not an index", ["index", "info", tmp], 2, ["index corpus", "index build"]),
        ("eval-answers --top 0", ["eval-answers", "--top", "0"], 2, ["--top"]),
        (
            "answer tower --threshold 2",
            ["answer", q, "--index", idx, "--method", "tower", "--threshold", "2"],
            2,
            ["--threshold"],
        ),
        ("rank --top -1", ["rank", "--input", f["ok.jsonl"], "--top", "-1"], 2, ["--top"]),
        ("eval-answers --limit -1", ["eval-answers", "--limit", "-1"], 2, ["--limit"]),
        ("eval-answers --limit 0", ["eval-answers", "--limit", "0"], 2, ["--limit"]),
        ("eval-reader --passages -1", ["eval-reader", "--passages", "-1"], 2, ["--passages"]),
        (
            "train --dev ''",
            [
                "train",
                "--train",
                f"jsonl:{f['ok.jsonl']}",
                "--init",
                "default",
                "--dev",
                "",
                "--out",
                tmp / "t2",
                "--batch-size",
                "16",
            ],
            0,
            [],
        ),
        ("rank: repeated qid", ["rank", "--input", f["dupqid.jsonl"]], 2, ["dupqid.jsonl", "2"]),
        ("rank: bad JSON", ["rank", "--input", f["badjson.jsonl"]], 2, ["badjson.jsonl", "2"]),
        ("rank: empty file", ["rank", "--input", f["empty.jsonl"]], 2, ["empty.jsonl"]),
        (
            "index build: repeated answer id",
            ["index", "build", "--model", "has", "--answers", f["answers-dup.jsonl"], "--out", tmp / "st0"],
            2,
            ["answers-dup.jsonl", "2"],
        ),
        (
            "tune-ensemble: no correct label",
            [
                "tune-ensemble",
                "--members",
                "default,default-cascade",
                "-o",
                tmp / "e0",
                "--dataset",
                f"jsonl:{f['nolabel.jsonl']}",
            ],
            2,
            ["label"],
        ),
        (
            "index corpus: document's wrong sentences",
            ["index", "corpus", "--input", f["docs-sentences.jsonl"], "--out", tmp / "i1"],
            2,
            ["docs-sentences.jsonl"],
        ),
        (
            "index corpus: 400 KB without a sentence break",
            ["index", "corpus", "--input", f["docs-wall.jsonl"], "--out", tmp / "wall"],
            0,
            [],
        ),
        ("answer over it", ["answer", "w12345 w12346?", "--index", tmp / "wall"], 0, []),
        # Issue 42.
        (
            "index corpus: 5 MB without a sentence break",
            ["index", "corpus", "--input", f["docs-wall5mb.jsonl"], "--out", tmp / "wall5"],
            0,
            [],
        ),
        (
            "index corpus: pysbd's placeholder characters",
            ["index", "corpus", "--input", f["docs-placeholders.jsonl"], "--out", tmp / "ph"],
            0,
            [],
        ),
        (
            "answer over it: the sentence is there",
            ["answer", "What does the flux equal?", "--index", tmp / "ph"],
            0,
            [],
        ),
        ("answer --questions: a BOM", ["answer", "--questions", f["bom.txt"], "--index", idx], 0, []),
        (
            "answer --budget-ms with --retrieve no setting has",
            ["answer", q, "--index", idx, "--budget-ms", "150", "--retrieve", "3"],
            2,
            ["--retrieve 3", "--budget-ms"],
        ),
        ("serve --budget-ms without --index", ["serve", "--budget-ms", "100"], 2, ["--budget-ms", "--index"]),
        (
            "export to a cache that cannot be written",
            ["export", "default", "--env", f"SIEVEQA_CACHE={f['not-a-folder']}/cache"],
            2,
            ["SIEVEQA_CACHE"],
        ),
        (
            "rank --backend onnx: export in a fresh cache",
            ["rank", "--input", f["ok.jsonl"], "--backend", "onnx", "--env", f"SIEVEQA_CACHE={tmp}/c1"],
            0,
            [],
        ),
        (
            "rank --backend onnx: its layer00.onnx truncated",
            [
                "rank",
                "--input",
                f["ok.jsonl"],
                "--backend",
                "onnx",
                "--env",
                f"SIEVEQA_CACHE={tmp}/c1",
                "--damage",
                f"{tmp}/c1",
            ],
            0,
            [],
        ),
    ]


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


def _http_cases() -> list[tuple[str, str, str, dict, int]]:
    """(name, method, path, httpx keyword arguments, status expected)."""
    rerank = {"query": "How tall is the Eiffel Tower?", "documents": ["It is 330 metres tall.", "Paris."]}
    body = json.dumps(rerank)
    return [
        ("/answer: a 1,600-character question", "POST", "/answer", {"json": {"question": LONG_Q}}, 200),
        (
            "/rerank: JSON as text/plain",
            "POST",
            "/rerank",
            {"content": body, "headers": {"content-type": "text/plain"}},
            200,
        ),
        (
            "/rerank: JSON without a content type",
            "POST",
            "/rerank",
            {"content": body, "headers": {"content-type": ""}},
            200,
        ),
        ("/rerank: a form", "POST", "/rerank", {"data": {"query": "x"}}, 400),
        (
            "/rerank: lone surrogate",
            "POST",
            "/rerank",
            {"content": body.replace("Paris", "\\ud800"), "headers": {"content-type": "application/json"}},
            422,
        ),
        ("/answer: empty question", "POST", "/answer", {"json": {"question": ""}}, 400),
        (
            "/answer: min_confidence 2",
            "POST",
            "/answer",
            {"json": {"question": "Who?", "min_confidence": 2}},
            422,
        ),
        (
            "/rerank: 5 MB body",
            "POST",
            "/rerank",
            {"content": "x" * 5_000_000, "headers": {"content-type": "application/json"}},
            413,
        ),
        ("HEAD /health", "HEAD", "/health", {}, 200),
        ("HEAD /", "HEAD", "/", {}, 200),
        ("/docs offline", "GET", "/docs", {}, 200),
        (
            "/answer: budget_ms NaN",
            "POST",
            "/answer",
            {
                "content": '{"question": "q", "budget_ms": NaN}',
                "headers": {"content-type": "application/json"},
            },
            422,
        ),
    ]


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
        files = _files(tmp)
        idx = tmp / "demo-index"
        subprocess.run(
            [str(BIN), "index", "corpus", "--input", "demo", "--out", str(idx)],
            check=True,
            capture_output=True,
        )
        rows = []
        for name, argv, code, words in _cli_cases(files, idx, tmp):
            rows.append({"case": name, "kind": "cli", **_run_cli(argv, code, words)})
            print(
                ("ok  " if rows[-1]["ok"] else "MISS"), name, rows[-1]["exit"], rows[-1]["line"], flush=True
            )
        proc, url = _serve(idx)
        try:
            for name, method, path, kwargs, status in _http_cases():
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
