"""Batch ranking on a local Ray (two CPUs, two actors): the same shards as one process writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from sieveqa.runtime.batch.sharded import ShardPlan, run_local
from sieveqa.runtime.policy import load_ranker

pytestmark = pytest.mark.slow  # starting Ray takes ~8 s


def test_ray_writes_what_one_process_writes_and_resumes(
    saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    pytest.importorskip("ray")  # here, not at collection: importing Ray costs every worker ~0.5 s
    from sieveqa.runtime.batch.ray_pool import run_ray

    model = str(saved_tiny)
    plan = ShardPlan.make(example_jsonl, 1, model)
    run_local(load_ranker(model), plan, tmp_path / "local", plan.open(tmp_path / "local"))
    out = tmp_path / "ray"
    pending = plan.open(out)
    (out / pending[1].name).write_text("done before\n")  # a shard a killed run finished
    pending = plan.open(out)
    seen = []
    done = run_ray(model, plan, out, pending, actors=2, threads=1, on_done=seen.append)
    assert sorted(d.index for d in done) == [0, 2] and len(seen) == 2
    assert (out / "shard-00001.jsonl").read_text() == "done before\n"
    for name in ("shard-00000.jsonl", "shard-00002.jsonl"):
        assert (out / name).read_text() == (tmp_path / "local" / name).read_text()
