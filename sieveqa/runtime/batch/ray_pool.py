"""Batch ranking on Ray: the shards of a ``ShardPlan`` go through Ray Data ``map_batches`` to an actor
pool, each actor holding one model; each actor writes its shards itself, atomically, so the driver
only collects what each took and a killed job resumes from the shards on disk.

Every node must see the input and the output folder at the same paths (a shared file system). Ray
starts in this process with ``num_cpus`` unless ``address`` names a running cluster (``"auto"``: the
one ``ray start`` made here).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sieveqa.device import thread_env
from sieveqa.runtime.batch.sharded import Shard, ShardDone, ShardPlan, rank_shard, shard_dict

_FIELDS = ("index", "start", "stop", "offset")
_REPORTED = ("index", "questions", "pairs", "seconds")


class _ShardActor:
    """One model per actor; ranks the shards it is handed and reports what each took."""

    def __init__(self, model: str, plan: tuple[str, str], out: str, threads: int, options: dict) -> None:
        import torch

        from sieveqa.runtime.policy import load_ranker

        torch.set_num_threads(threads)
        self.ranker = load_ranker(model, **options)
        self.source, self.kind = plan
        self.out = out

    def __call__(self, batch: dict[str, Any]) -> dict[str, list]:
        shards = [Shard(*(int(batch[k][i]) for k in _FIELDS)) for i in range(len(batch["index"]))]
        done = [rank_shard(self.ranker, self.source, self.kind, s, self.out) for s in shards]
        return {key: [getattr(d, key) for d in done] for key in _REPORTED}


def run_ray(
    model: str,
    plan: ShardPlan,
    out: str | Path,
    shards: list[Shard],
    actors: int,
    threads: int,
    address: str | None = None,
    on_done: Callable[[ShardDone], None] | None = None,
    **options: Any,
) -> list[ShardDone]:
    """Rank ``shards`` with ``actors`` Ray actors of ``threads`` CPUs each; ``options`` go to
    ``load_ranker`` (device, precision, batch_size, backend)."""
    import ray
    import ray.data

    started_here = not ray.is_initialized()
    if started_here:
        init: dict[str, Any] = {"address": address} if address else {"num_cpus": actors * threads}
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False, **init)
    try:
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        items = ray.data.from_items([shard_dict(s) for s in shards], override_num_blocks=len(shards))
        ranked = items.map_batches(
            _ShardActor,
            batch_size=1,
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_cpus=threads,
            num_gpus=1 if options.get("device") == "cuda" else 0,  # Ray hides GPUs from actors without one
            runtime_env={"env_vars": thread_env(threads)},  # nanotoken's pool too, not every core
            fn_constructor_kwargs={
                "model": model,
                "plan": (str(Path(plan.source).resolve()), plan.kind),
                "out": str(Path(out).resolve()),
                "threads": threads,
                "options": options,
            },
        )
        done = []
        for row in ranked.iter_rows():
            done.append(
                ShardDone(*(t(row[k]) for t, k in zip((int, int, int, float), _REPORTED, strict=True)))
            )
            if on_done is not None:
                on_done(done[-1])
        return done
    finally:
        if started_here:
            ray.shutdown()
