"""Helpers every benchmark script shares: metric formatting, markdown tables, provenance-stamped JSON."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sieveqa.evaluation.provenance import run_info
from sieveqa.io import atomic_write_json


def labelled(specs: Sequence[str], flag: str) -> dict[str, str]:
    """``LABEL=PATH`` options in the order given; a spec without ``=`` stops the bench with its flag."""
    out = {}
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep:
            raise SystemExit(f"{flag} needs LABEL=PATH, got {spec!r}")
        out[label] = path
    return out


def pct(metrics: dict[str, float], names: Sequence[str]) -> dict[str, float]:
    """The named metrics ×100, one decimal."""
    return {m: round(100 * metrics[m], 1) for m in names}


def markdown(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> str:
    """A markdown table of ``rows`` with columns ``keys``."""
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r.get(k, "")) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def finish(out: Path, bench: str, payload: dict[str, Any]) -> None:
    """Write ``payload`` with the command line, date, machine and versions, atomically."""
    command = "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]])
    atomic_write_json(out, {"bench": bench, **run_info(command), **payload})
    print(f"wrote {out}")


@contextlib.contextmanager
def served(
    *args: str,
    port: int = 8765,
    timeout: float = 120.0,
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
    program: Sequence[str] = (),
) -> Iterator[str]:
    """Run ``sieveqa serve ARGS --port PORT`` (or ``PROGRAM ARGS --port PORT``) in a subprocess until
    the block ends; yield its URL (``on_start`` gets the process, for its pid)."""
    import httpx

    command = list(program) or [str(Path(sys.executable).parent / "sieveqa"), "serve"]
    server = subprocess.Popen([*command, *args, "--port", str(port)])
    if on_start is not None:
        on_start(server)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.TransportError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the server did not start (exit code {server.poll()})") from None
                time.sleep(0.2)
        yield url
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)


def top_passages(reranker: str, dataset: str, passages: int = 20) -> tuple[list[str], list[str], list[bool]]:
    """For each question of the open set ``dataset``: the question, the passage ``reranker`` puts first
    among its first ``passages`` retrieved ones, and whether the question is answerable."""
    from tqdm.auto import tqdm

    from sieveqa.data.registry import load_open_dataset
    from sieveqa.models.zoo import load_model

    model = load_model(reranker).configure(precision="auto")
    questions, texts, answerable = [], [], []
    for ex in tqdm(load_open_dataset(dataset), desc="reranking", unit="q"):
        candidates = [p.text for p in ex.passages[:passages]]
        scores = model.score_pairs([ex.question] * len(candidates), candidates)
        texts.append(candidates[max(range(len(candidates)), key=scores.__getitem__)])
        questions.append(ex.question)
        answerable.append(not ex.impossible)
    return questions, texts, answerable
