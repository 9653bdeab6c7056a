"""The hostile cases ``bench/hostile.py`` runs: the files they read, the CLI invocations (issues 30 and
42) with the exit code and the words each error line must hold, and the HTTP requests with the status
each must get."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "sieveqa" / "resources" / "example.jsonl"
LONG_Q = "What protein carries oxygen in octopus blood " + "and why " * 200 + "?"


def write_files(tmp: Path) -> dict[str, Path]:
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


def cli_cases(f: dict[str, Path], idx: Path, tmp: Path) -> list[tuple[str, list[str], int, list[str]]]:
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


def http_cases() -> list[tuple[str, str, str, dict, int]]:
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
