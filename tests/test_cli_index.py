"""HAS from the command line: train, build a store, append, inspect, rank against it, refuse mismatches."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sieveqa.cli import app
from sieveqa.cli_index import load_answers
from sieveqa.data.jsonl import read_jsonl
from sieveqa.errors import DataFormatError, StoreError

runner = CliRunner()


def _train(example_jsonl: Path, out: Path, arch: str = "has", *flags: str) -> Path:
    data = f"jsonl:{example_jsonl}"
    args = ["train", "--arch", arch, "--train", data, "--dev", data, "--init", "tiny", "--out", str(out)]
    result = runner.invoke(app, [*args, "--epochs", "1", "--batch-size", "8", *flags])
    assert result.exit_code == 0, result.output
    return out / "best"


def _build(model: Path, example_jsonl: Path, store: Path) -> tuple[Path, str]:
    args = ["index", "build", "-m", str(model), "-a", f"jsonl:{example_jsonl}", "-o", str(store)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return store, result.output


@pytest.fixture(scope="module")
def has_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sieveqa.models.zoo import RESOURCES

    return _train(RESOURCES / "example.jsonl", tmp_path_factory.mktemp("has") / "run")


def test_build_info_add_and_rank_against_a_store(
    has_model: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    store, output = _build(has_model, example_jsonl, tmp_path / "store")
    examples = read_jsonl(example_jsonl)
    n = len({c.id for ex in examples for c in ex.candidates})
    assert f"{n} answers in 1 segment(s), kind bits" in output

    extra = tmp_path / "more.jsonl"
    extra.write_text(json.dumps({"id": "new-1", "text": "The tower is 330 metres tall."}) + "\n")
    result = runner.invoke(app, ["index", "add", "--store", str(store), "--answers", str(extra)])
    assert result.exit_code == 0, result.output
    assert f"{n + 1} answers in 2 segment(s)" in result.output
    result = runner.invoke(app, ["index", "info", str(store)])
    assert result.exit_code == 0 and "MiB on disk" in result.output

    queries = tmp_path / "q.jsonl"
    ex = examples[0]
    queries.write_text(
        json.dumps({"qid": "x", "question": ex.question.text, "candidates": [c.id for c in ex.candidates]})
        + "\n"
        + json.dumps({"question": "how tall is it"})
        + "\n"
    )
    out = tmp_path / "ranked.jsonl"
    result = runner.invoke(
        app, ["rank", "--store", str(store), "--input", str(queries), "--output", str(out), "--top", "2"]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["qid"] for r in rows] == ["x", "2"]
    assert sorted(r["id"] for r in rows[0]["ranked"]) == sorted(c.id for c in ex.candidates)
    assert len(rows[1]["ranked"]) == 2  # the whole store searched, top 2 kept
    scores = [r["score"] for r in rows[0]["ranked"]]
    assert scores == sorted(scores, reverse=True)


def test_a_store_refuses_a_model_with_another_beta(
    has_model: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    store, _ = _build(has_model, example_jsonl, tmp_path / "store")
    other = _train(example_jsonl, tmp_path / "b10", "has", "--beta", "10")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"question": "how tall"}) + "\n")
    result = runner.invoke(
        app, ["rank", "--store", str(store), "--model", str(other), "--input", str(queries)]
    )
    assert isinstance(result.exception, StoreError)
    assert "beta 5.0 (store) != 10.0 (model)" in str(result.exception)


def test_a_cross_encoder_cannot_build_a_store(
    saved_tiny_model: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    result = runner.invoke(
        app,
        [
            "index",
            "build",
            "-m",
            str(saved_tiny_model),
            "-a",
            f"jsonl:{example_jsonl}",
            "-o",
            str(tmp_path / "s"),
        ],
    )
    assert result.exit_code == 2
    assert "answer stores need a HAS" in result.output


def test_load_answers_reads_files_and_datasets_and_names_bad_lines(
    example_jsonl: Path, tmp_path: Path
) -> None:
    good = tmp_path / "a.jsonl"
    good.write_text('{"id": "a", "text": "x"}\n\n{"id": 7, "text": "y"}\n')
    assert load_answers(str(good)) == [("a", "x"), ("7", "y")]
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\n{"id": "", "text": "y"}\n')
    with pytest.raises(DataFormatError, match=r"b.jsonl:2: field 'id' must be a non-empty string"):
        load_answers(str(bad))
    with pytest.raises(DataFormatError, match="no such file"):
        load_answers(str(tmp_path / "missing.jsonl"))
    from_dataset = load_answers(f"jsonl:{example_jsonl}")
    assert len(from_dataset) == len({c.id for ex in read_jsonl(example_jsonl) for c in ex.candidates})


@pytest.fixture
def saved_tiny_model(tiny_model, tmp_path: Path) -> Path:
    return tiny_model.save_pretrained(tmp_path / "tiny-model")
