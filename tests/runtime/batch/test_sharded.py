"""Sharded batch ranking: the cut, each shard whole or absent, resuming, and what a run refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sieveqa.errors import ConfigError, DataFormatError
from sieveqa.runtime.batch.sharded import ShardPlan, rank_shard, read_shard, run_local
from tests.fakes import KeywordRanker


def _rows(n: int) -> list[dict]:
    return [
        {
            "qid": f"q{i}",
            "question": f"question {i}",
            "candidates": [{"id": "a", "text": "no"}, {"id": "b", "text": f"the answer {i}"}],
        }
        for i in range(n)
    ]


@pytest.fixture
def jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    lines = [json.dumps(r) for r in _rows(7)]
    path.write_text("\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\n")  # a blank line inside
    return path


@pytest.fixture
def parquet(tmp_path: Path) -> Path:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(_rows(7)), path, row_group_size=2)
    return path


def test_a_file_is_cut_into_shards_that_read_back_its_rows(jsonl: Path) -> None:
    plan = ShardPlan.make(jsonl, 3, "m")
    assert plan.rows == 7 and [(s.start, s.stop) for s in plan.shards] == [(0, 3), (3, 6), (6, 7)]
    assert [e.qid for e in read_shard(plan.source, plan.kind, plan.shards[1])] == ["q3", "q4", "q5"]
    assert [e.qid for e in read_shard(plan.source, plan.kind, plan.shards[2])] == ["q6"]


def test_parquet_shards_cross_row_groups(parquet: Path) -> None:
    plan = ShardPlan.make(parquet, 3, "m")
    assert plan.kind == "parquet" and plan.rows == 7
    got = [read_shard(plan.source, plan.kind, s) for s in plan.shards]
    assert [[e.qid for e in shard] for shard in got] == [["q0", "q1", "q2"], ["q3", "q4", "q5"], ["q6"]]
    assert got[1][0].candidates[1].text == "the answer 3"


def test_a_run_ranks_every_shard_once_and_resumes(jsonl: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    plan = ShardPlan.make(jsonl, 3, "m")
    first = plan.open(out)
    run_local(KeywordRanker(), plan, out, first[:2])  # "killed" after two shards
    assert sorted(p.name for p in out.glob("shard-*")) == ["shard-00000.jsonl", "shard-00001.jsonl"]
    pending = ShardPlan.make(jsonl, 3, "m").open(out)
    assert [s.index for s in pending] == [2]
    done = run_local(KeywordRanker(), plan, out, pending)
    assert [(d.index, d.questions, d.pairs) for d in done] == [(2, 1, 2)]
    rows = [json.loads(line) for p in sorted(out.glob("shard-*")) for line in p.read_text().splitlines()]
    assert [r["qid"] for r in rows] == [f"q{i}" for i in range(7)]
    assert all(r["candidates"][0]["id"] == "b" and r["candidates"][0]["rank"] == 1 for r in rows)


def test_a_shard_that_fails_leaves_no_file(jsonl: Path, tmp_path: Path) -> None:
    class Failing(KeywordRanker):
        def run(self, examples, progress=False):
            raise RuntimeError("killed")

    plan = ShardPlan.make(jsonl, 3, "m")
    with pytest.raises(RuntimeError):
        rank_shard(Failing(), plan.source, plan.kind, plan.shards[0], tmp_path / "out")
    assert not list((tmp_path / "out").glob("shard-*"))


def test_a_run_folder_refuses_another_setup(jsonl: Path, tmp_path: Path) -> None:
    ShardPlan.make(jsonl, 3, "m").open(tmp_path / "out")
    with pytest.raises(ConfigError, match="another --model, --shard-size"):
        ShardPlan.make(jsonl, 2, "other").open(tmp_path / "out")


@pytest.mark.parametrize(
    ("content", "name", "says"),
    [
        (
            '{"qid": "a", "question": "q", "candidates": []}\nnot json\n',
            "x.jsonl",
            r"x.jsonl:2: invalid JSON",
        ),
        ('{"qid": "a", "question": "q", "candidates": 3}\n', "x.jsonl", r"x.jsonl:1: field 'candidates'"),
        ('{"qid": "a", "question": "q", "candidates": []}\n' * 2, "x.jsonl", r"x.jsonl:2: duplicate qid 'a'"),
        ("", "x.jsonl.gz", "decompress it or use Parquet"),
        ("PAR1", "x.parquet", "x.parquet: not a Parquet file"),
    ],
)
def test_bad_inputs_are_named_before_any_ranking(tmp_path: Path, content: str, name: str, says: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataFormatError, match=says):
        ShardPlan.make(path, 10, "m")


def test_parquet_without_the_columns_is_refused(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"question": "q"}]), tmp_path / "x.parquet")
    with pytest.raises(DataFormatError, match="no column qid, candidates"):
        ShardPlan.make(tmp_path / "x.parquet", 10, "m")


def test_a_file_that_lost_rows_since_planning_is_an_error_not_a_hang(jsonl: Path) -> None:
    plan = ShardPlan.make(jsonl, 3, "m")
    lines = jsonl.read_text().splitlines()
    jsonl.write_text("\n".join(lines[:5]) + "\n")  # 4 questions left of 7
    with pytest.raises(DataFormatError, match=r"ends at row 4, but the run planned 6 rows"):
        read_shard(jsonl, "jsonl", plan.shards[1])


def test_parquet_is_read_once_for_all_its_shards(parquet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    from sieveqa.runtime.batch import sharded

    sharded._parquet_table.cache_clear()
    reads = []
    real = pq.read_table
    monkeypatch.setattr(pq, "read_table", lambda *a, **k: reads.append(a) or real(*a, **k))
    plan = ShardPlan.make(parquet, 3, "m")
    qids = [e.qid for s in plan.shards for e in read_shard(parquet, "parquet", s)]
    assert qids == [f"q{i}" for i in range(7)] and len(reads) == 1


def test_two_runs_into_one_folder_are_refused(jsonl: Path, tmp_path: Path) -> None:
    from sieveqa.errors import BusyError

    plan = ShardPlan.make(jsonl, 3, "m")
    with plan.claim(tmp_path / "out") as pending:
        assert len(pending) == 3
        with pytest.raises(BusyError, match="another sieveqa process is writing this batch run"):
            _second_claim(plan, tmp_path / "out")


def _second_claim(plan: ShardPlan, out: Path) -> None:
    """Another process's claim (the lock is re-entrant within one thread, so take it from another)."""
    import threading

    errors: list[BaseException] = []

    def claim() -> None:
        try:
            with plan.claim(out):
                pass
        except BaseException as err:  # handed back to the test
            errors.append(err)

    thread = threading.Thread(target=claim)
    thread.start()
    thread.join(5)
    if errors:
        raise errors[0]


def test_a_retrained_model_under_the_same_name_is_a_new_run(
    jsonl: Path, tmp_path: Path, saved_tiny: Path
) -> None:
    from sieveqa.runtime.batch.sharded import model_digest

    before = model_digest(saved_tiny)
    ShardPlan.make(jsonl, 3, str(saved_tiny), before).open(tmp_path / "out")
    (saved_tiny / "policy.json").write_text('{"drop_ratios": [0.5]}')  # re-tuned
    after = model_digest(saved_tiny)
    assert after != before
    with pytest.raises(ConfigError, match=r"another --model \(its files changed\)"):
        ShardPlan.make(jsonl, 3, str(saved_tiny), after).open(tmp_path / "out")


def test_an_ensembles_digest_covers_its_members(tmp_path: Path, saved_tiny: Path) -> None:
    """Members live beside the ensemble folder, not in it: a retrained member must change the run."""
    import shutil

    from sieveqa.runtime.batch.sharded import model_digest
    from sieveqa.runtime.ensemble import EnsembleSpec

    other = shutil.copytree(saved_tiny, tmp_path / "other")
    EnsembleSpec((str(saved_tiny), str(other)), (0.5, 0.5)).save(tmp_path / "ens")
    before = model_digest(tmp_path / "ens")
    (other / "policy.json").write_text("{}")  # a member changed, the ensemble folder did not
    assert model_digest(tmp_path / "ens") != before
