"""``sieveqa batch``: rank a large JSONL or Parquet file in resumable shards, in this process or on Ray."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sieveqa.cli._app import BackendOpt, BatchOpt, DeviceOpt, PrecisionOpt, app, check_device, console
from sieveqa.errors import ConfigError, require_extra

if TYPE_CHECKING:
    from sieveqa.models.base import Ranker
    from sieveqa.runtime.batch.sharded import Shard, ShardPlan


@app.command()
def batch(
    input_path: Annotated[
        Path,
        typer.Option("--input", "-i", help="JSONL (as rank reads) or Parquet (qid, question, candidates)"),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="folder of ranked shards; rerun to resume")],
    model: Annotated[str, typer.Option("--model", "-m", help="a shipped model name or a folder")] = "default",
    shard_size: Annotated[int, typer.Option(help="questions per shard (the unit of resuming)")] = 1000,
    ray: Annotated[
        bool, typer.Option("--ray", help="rank on Ray: an actor pool, one model per actor")
    ] = False,
    actors: Annotated[int | None, typer.Option(help="--ray: actors (default: CPUs / --threads)")] = None,
    threads: Annotated[int, typer.Option(help="--ray: CPU threads per actor")] = 1,
    address: Annotated[
        str | None,
        typer.Option(help="--ray: a running cluster ('auto', or ray://HOST:10001); default: start one here"),
    ] = None,
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = "auto",
    backend: BackendOpt = "torch",
    batch_size: BatchOpt = None,
) -> None:
    """Rank every question of a large file into OUT/shard-NNNNN.jsonl (the rank --output format).

    Each shard is written whole or not at all; run the same command again after a stop and only the
    missing shards are ranked. With --ray the shards go to a Ray Data actor pool (on a cluster, every
    node must see --input and --out at the same paths).
    """
    from sieveqa.device import resolve_device, resolve_precision
    from sieveqa.io import check_output_dir
    from sieveqa.runtime.batch.sharded import ShardPlan, model_digest

    check_device(device, precision, backend)
    check_output_dir(out, "--out")
    if threads < 1 or (actors is not None and actors < 1):
        raise ConfigError("--actors and --threads must be >= 1")
    if not ray and (actors is not None or address is not None):
        raise ConfigError("--actors and --address are for --ray")
    if ray:
        require_extra("ray", "ray", "sieveqa batch --ray")
    loaded = None  # the ranker auto loaded to learn its choice: a local run ranks with it
    if backend == "auto":  # resolved here, so the run records (and every shard uses) what auto chose
        loaded, backend, precision = _auto_backend(model, device, precision)
    if backend in ("onnx", "openvino"):
        from sieveqa.exported import backend_precision

        concrete = backend_precision(backend, precision, resolve_device("cpu"))
    else:  # torch's rules
        concrete = resolve_precision(precision, resolve_device(device))
    plan = ShardPlan.make(input_path, shard_size, model, model_digest(model), concrete, backend)
    with plan.claim(out) as pending:
        options = {"device": device, "precision": precision, "batch_size": batch_size, "backend": backend}
        _run(plan, pending, out, model, ray, actors, threads, address, options, loaded)


def _auto_backend(model: str, device: str, precision: str) -> tuple[Ranker, str, str]:
    """The ranker ``--backend auto`` loads for ``model`` here, and the backend and precision it
    landed on (they depend on the exports present and the measured choices of this CPU kind)."""
    from sieveqa.runtime.policy import load_ranker

    ranker = load_ranker(model, device=device, precision=precision, backend="auto")
    for part in (ranker, getattr(ranker, "model", None), *getattr(ranker, "members", ())):
        if hasattr(part, "backend") and hasattr(part, "precision"):
            return ranker, part.backend, part.precision
    return ranker, "torch", precision


def _run(
    plan: ShardPlan,
    pending: list[Shard],
    out: Path,
    model: str,
    ray: bool,
    actors: int | None,
    threads: int,
    address: str | None,
    options: dict[str, Any],
    loaded: Ranker | None = None,
) -> None:
    """Rank the pending shards of ``plan`` into ``out``, with a progress bar (locally with ``loaded``
    when the model is loaded already)."""
    console.print(
        f"{plan.rows} questions in {len(plan.shards)} shards; {len(plan.shards) - len(pending)} already "
        f"done in {out}, {len(pending)} to rank"
    )
    if not pending:
        return
    started = time.perf_counter()
    from rich.progress import Progress

    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("ranking shards", total=len(pending))

        def on_done(_: object) -> None:
            bar.advance(task)

        if ray:
            from sieveqa.runtime.batch.ray_pool import run_ray

            pool = actors or max(1, (os.cpu_count() or 1) // threads)
            done = run_ray(model, plan, out, pending, pool, threads, address, on_done, **options)
        else:
            from sieveqa.runtime.batch.sharded import run_local
            from sieveqa.runtime.policy import load_ranker

            ranker = loaded if loaded is not None else load_ranker(model, **options)
            done = run_local(ranker, plan, out, pending, on_done)
    seconds = time.perf_counter() - started
    pairs = sum(d.pairs for d in done)
    console.print(
        f"ranked {sum(d.questions for d in done)} questions ({pairs} pairs) in {seconds:.1f} s: "
        f"{pairs / seconds:.0f} pairs/s; shards in {out}"
    )
