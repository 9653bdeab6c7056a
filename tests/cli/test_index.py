"""HAS from the command line: train, build a store, append, inspect, rank against it, refuse mismatches."""

import json
from pathlib import Path

import pytest

from sieveqa.data.jsonl import read_jsonl
from tests.cli.conftest import one_error_line


def _train(sieveqa, example_jsonl: Path, out: Path, arch: str = "has", *flags: str) -> Path:
    data = f"jsonl:{example_jsonl}"
    args = ["train", "--arch", arch, "--train", data, "--dev", data, "--init", "tiny", "--out", out]
    result = sieveqa(*args, "--epochs", "1", "--batch-size", "8", "--no-progress", *flags)
    assert result.exit_code == 0, result.output
    return out / "best"


@pytest.fixture(scope="module")
def has_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sieveqa.models.zoo import RESOURCES
    from tests.cli.conftest import Runner

    return _train(Runner(), RESOURCES / "example.jsonl", tmp_path_factory.mktemp("has") / "run")


def _build(sieveqa, model: Path, example_jsonl: Path, store: Path):
    return sieveqa("index", "build", "-m", model, "-a", f"jsonl:{example_jsonl}", "-o", store)


@pytest.mark.slow
def test_build_info_add_and_rank_against_a_store(
    sieveqa, has_model: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    result = _build(sieveqa, has_model, example_jsonl, store)
    assert result.exit_code == 0, result.output
    examples = read_jsonl(example_jsonl)
    n = len({c.id for ex in examples for c in ex.candidates})
    assert f"{n} answers in 1 segment(s)" in result.output
    assert "HAS bit matrices" in result.output and "beta 5.0" in result.output
    assert "pooled vectors in FAISS (flat, fp16) + BM25 over the texts" in result.output

    extra = tmp_path / "more.jsonl"
    extra.write_text(json.dumps({"id": "new-1", "text": "The tower is 330 metres tall."}) + "\n")
    result = sieveqa("index", "add", "--store", store, "--answers", extra)
    assert result.exit_code == 0, result.output
    assert f"{n + 1} answers in 2 segment(s)" in result.output
    result = sieveqa("index", "info", store)
    assert result.exit_code == 0 and "MiB in all" in result.output

    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert f"{empty}: no questions" in one_error_line(sieveqa("rank", "--store", store, "--input", empty))

    queries = tmp_path / "q.jsonl"
    ex = examples[0]
    queries.write_text(
        json.dumps({"qid": "x", "question": ex.question.text, "candidates": [c.id for c in ex.candidates]})
        + "\n"
        + json.dumps({"question": "how tall is it"})
        + "\n"
    )
    out = tmp_path / "ranked.jsonl"
    result = sieveqa("rank", "--store", store, "--input", queries, "--output", out, "--top", "2")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["qid"] for r in rows] == ["x", "2"]
    assert sorted(r["id"] for r in rows[0]["candidates"]) == sorted(c.id for c in ex.candidates)
    assert len(rows[1]["candidates"]) == 2  # the whole store searched, top 2 kept
    scores = [r["score"] for r in rows[0]["candidates"]]
    assert scores == sorted(scores, reverse=True)
    texts = {c.id: c.text for e in examples for c in e.candidates} | {
        "new-1": "The tower is 330 metres tall."
    }
    assert all(hit["text"] == texts[hit["id"]] for row in rows for hit in row["candidates"])
    # rank --output's shape: question fields, then candidates best first with score and rank.
    assert all(set(row) == {"qid", "question", "candidates"} for row in rows)
    assert all(set(hit) == {"id", "text", "score", "rank"} for row in rows for hit in row["candidates"])
    assert [hit["rank"] for hit in rows[1]["candidates"]] == [1, 2]
    for stage in ("bm25", "rrf", "mix", "none"):
        result = sieveqa("rank", "--store", store, "--input", queries, "--first-stage", stage, "--k", "5")
        assert result.exit_code == 0, result.output
    line = one_error_line(sieveqa("rank", "--store", store, "--input", queries, "--first-stage", "dense"))
    assert "--first-stage must be one of vector, bm25, rrf, mix, none, got 'dense'" in line


@pytest.mark.slow
def test_info_shows_what_applies_to_the_stores_kind(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    pooling = _train(sieveqa, example_jsonl, tmp_path / "pool", "bert-pooling")
    store = tmp_path / "store"
    result = sieveqa(
        "index", "build", "-m", pooling, "-a", f"jsonl:{example_jsonl}", "-o", store, "--no-bm25"
    )
    assert result.exit_code == 0, result.output
    result = sieveqa("index", "info", store)
    assert "one float32 vector per answer (BERT-pooling)" in result.output
    assert "model pool/best (" in result.output and "pooling max" in result.output
    assert "beta" not in result.output and "token rows" not in result.output and "BM25" not in result.output


@pytest.mark.slow
def test_a_moved_model_is_named_and_can_be_given(
    sieveqa, has_model: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    import shutil

    model = Path(shutil.copytree(has_model, tmp_path / "my-has"))
    store = tmp_path / "stores" / "s"
    assert _build(sieveqa, model, example_jsonl, store).exit_code == 0
    moved = Path(shutil.move(model, tmp_path / "moved-has"))
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"question": "how tall is it"}) + "\n")
    line = one_error_line(sieveqa("rank", "--store", store, "--input", queries))
    assert "its model 'my-has'" in line and "is no longer at" in line and "pass --model FOLDER" in line
    assert sieveqa("rank", "--store", store, "--input", queries, "--model", moved).exit_code == 0


@pytest.mark.slow
def test_a_store_refuses_a_model_with_another_beta(
    sieveqa, has_model: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    assert _build(sieveqa, has_model, example_jsonl, store).exit_code == 0
    other = _train(sieveqa, example_jsonl, tmp_path / "b10", "has", "--beta", "10")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"question": "how tall"}) + "\n")
    line = one_error_line(sieveqa("rank", "--store", store, "--model", other, "--input", queries))
    assert "beta 5.0 (store) != 10.0 (model)" in line


def test_a_cross_encoder_cannot_build_a_store(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    line = one_error_line(_build(sieveqa, saved_tiny, example_jsonl, tmp_path / "s"))
    assert "answer stores need one" in line


@pytest.mark.slow
def test_a_killed_build_resumes_with_the_same_command(
    sieveqa, has_model: Path, example_jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sieveqa.runtime.store import build as store_build

    store = tmp_path / "store"
    real, calls = store_build.add_segment, []

    def killed(*args, **kwargs):
        if calls:
            raise KeyboardInterrupt  # the process dies after its first segment
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(store_build, "add_segment", killed)
    build = ["index", "build", "-m", has_model, "-a", f"jsonl:{example_jsonl}", "-o", store]
    assert sieveqa(*build, "--segment-size", "5").exit_code == 130
    assert "its build stopped after 5 of" in one_error_line(sieveqa("index", "info", store))
    monkeypatch.setattr(store_build, "add_segment", real)
    line = one_error_line(sieveqa(*build, "--segment-size", "6"))
    assert "holds a build stopped after 5 of" in line and "of other options (--segment-size 5 -> 6)" in line
    result = sieveqa(*build, "--segment-size", "5")
    assert result.exit_code == 0, result.output
    assert "first-stage-00000" in {p.name for p in store.iterdir()}


def test_store_search_flags_without_a_store_are_refused(sieveqa, example_jsonl: Path) -> None:
    line = one_error_line(sieveqa("rank", "--input", example_jsonl, "--k", "5", "--first-stage", "bm25"))
    assert line == "error: --first-stage, --k: for searching an answer store; add --store"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--vector-index", "hnsw"],
            "error: --vector-index must be one of auto, flat, ivf, none, got 'hnsw'",
        ),
        (["--segment-size", "0"], "error: --segment-size must be at least 1, got 0"),
    ],
)
def test_bad_build_options_are_one_line(
    sieveqa, has_model: Path, example_jsonl: Path, tmp_path: Path, flags: list[str], message: str
) -> None:
    result = sieveqa(
        "index", "build", "-m", has_model, "-a", f"jsonl:{example_jsonl}", "-o", tmp_path / "s", *flags
    )
    assert one_error_line(result) == message
    assert not (tmp_path / "s").exists()  # refused before any work


def test_info_on_a_folder_that_is_no_index_says_what_it_reads(sieveqa, tmp_path: Path) -> None:
    # Issue 30: it said "not an answer store ... use index build", though info reads corpus indexes too.
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "passages.tmp").write_text("")
    line = one_error_line(sieveqa("index", "info", tmp_path / "half"))
    assert "neither a corpus index (sieveqa index corpus) nor an answer store (sieveqa index build)" in line
    assert "no manifest.json" in line
    assert "no such folder" in one_error_line(sieveqa("index", "info", tmp_path / "nothing"))
