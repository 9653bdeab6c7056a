"""The command line, end to end on a tiny saved model."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sieveqa.cli import app
from sieveqa.data.jsonl import read_jsonl

runner = CliRunner()


@pytest.fixture
def saved_tiny(tiny_model, tmp_path: Path) -> Path:
    return tiny_model.save_pretrained(tmp_path / "tiny-model")


def test_rank_prints_and_writes_ranked_jsonl(saved_tiny: Path, example_jsonl: Path, tmp_path: Path) -> None:
    out = tmp_path / "ranked.jsonl"
    result = runner.invoke(
        app,
        [
            "rank",
            "--model",
            str(saved_tiny),
            "--input",
            str(example_jsonl),
            "--output",
            str(out),
            "--top",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "How tall is the Eiffel Tower?" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["qid"] for r in rows] == [e.qid for e in read_jsonl(example_jsonl)]
    for row in rows:
        ranks = [c["rank"] for c in row["candidates"]]
        scores = [c["score"] for c in row["candidates"]]
        assert ranks == list(range(1, len(ranks) + 1))
        assert scores == sorted(scores, reverse=True)


def test_eval_writes_the_promised_json(saved_tiny: Path, example_jsonl: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    result = runner.invoke(
        app, ["eval", "--model", str(saved_tiny), "--dataset", f"jsonl:{example_jsonl}", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads(out.read_text())
    for key in ("map", "mrr", "p@1", "ndcg@10", "n_questions", "pairs_per_second", "layer_units"):
        assert key in metrics
    assert metrics["n_questions"] == 3
    assert metrics["layer_units"] == 4 * 16  # 16 pairs, 4 layers each
    assert 0.0 <= metrics["map"] <= 1.0


def test_bad_dataset_name_is_a_clear_error(saved_tiny: Path) -> None:
    result = runner.invoke(app, ["eval", "--model", str(saved_tiny), "--dataset", "wikiqa:validation"])
    assert result.exit_code != 0
    assert "wikiqa has no split 'validation'" in str(result.exception)


def test_bad_precision_rejected(saved_tiny: Path, example_jsonl: Path) -> None:
    result = runner.invoke(
        app, ["rank", "--model", str(saved_tiny), "--input", str(example_jsonl), "--precision", "fp8"]
    )
    assert result.exit_code == 2
    assert "fp8" in result.output or "precision" in result.output


def test_train_then_rank_with_tiny_backbone(example_jsonl: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = [
        "train",
        "--train",
        f"jsonl:{example_jsonl}",
        "--init",
        "tiny",
        "--dev",
        f"jsonl:{example_jsonl}",
        "--out",
        str(out),
        "--epochs",
        "1",
        "--batch-size",
        "8",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (out / "best" / "model.safetensors").is_file()
    result = runner.invoke(app, ["rank", "--model", str(out / "best"), "--input", str(example_jsonl)])
    assert result.exit_code == 0, result.output


def test_help_explains_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("train", "eval", "rank", "backbones", "data"):
        assert command in result.output


def test_backbones_lists_registered_names() -> None:
    result = runner.invoke(app, ["backbones", "--no-verify"])
    assert result.exit_code == 0, result.output
    for name in ("minilm-l6", "minilm-l3", "mpnet-12", "tiny"):
        assert name in result.output


def test_data_build_unknown_benchmark() -> None:
    result = runner.invoke(app, ["data", "build", "asnq"])
    assert result.exit_code == 2
    assert "unknown benchmark 'asnq'" in result.output


def _train_with_config(example_jsonl: Path, tmp_path: Path, settings: dict, *flags: str):
    config = tmp_path / "train.json"
    config.write_text(json.dumps(settings))
    data = f"jsonl:{example_jsonl}"
    args = [
        "train",
        "--train",
        data,
        "--init",
        "tiny",
        "--dev",
        "",
        "--out",
        str(tmp_path / "r"),
        "--config",
        str(config),
    ]
    return runner.invoke(app, [*args, *flags])


def test_train_reads_a_json_config(example_jsonl: Path, tmp_path: Path) -> None:
    result = _train_with_config(example_jsonl, tmp_path, {"epochs": 1, "batch_size": 4, "bogus": 1})
    assert result.exit_code != 0
    assert "unknown TrainConfig field(s) ['bogus']" in str(result.exception)


def test_json_config_values_win_over_flag_defaults(example_jsonl: Path, tmp_path: Path) -> None:
    result = _train_with_config(example_jsonl, tmp_path, {"epochs": 2, "batch_size": 4}, "--batch-size", "8")
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "r" / "checkpoint" / "trainer_state.json").read_text())["config"]
    assert (saved["epochs"], saved["batch_size"]) == (2, 8)


@pytest.fixture
def saved_cascade(tiny_cascade, tmp_path: Path) -> Path:
    return tiny_cascade.save_pretrained(tmp_path / "tiny-cascade")


def test_eval_of_a_cascade_reports_cost_and_every_exit(
    saved_cascade: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    out = tmp_path / "c.json"
    args = ["eval", "-m", str(saved_cascade), "-d", f"jsonl:{example_jsonl}", "--json", str(out)]
    result = runner.invoke(app, [*args, "--alpha", "0.5"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(out.read_text())
    assert metrics["drop_ratios"] == [0.5, 0.5, 0.5] and metrics["exits"] == [1, 2, 3, 4]
    # 16 candidates in 3 questions (6, 5, 5): ⌊k/2⌋ dropped per question at each exit,
    # so 6 → 3 → 2 → 1 and 5 → 3 → 2 → 1.
    assert metrics["survivors"] == [16, 9, 6, 3]
    assert metrics["layer_units"] == 16 + 9 + 6 + 3
    assert metrics["relative_cost"] == pytest.approx(34 / 64, abs=1e-4)
    assert set(metrics["per_exit"]) == {"L1", "L2", "L3", "L4"}
    # Stopped at the last exit, the cascade is the cascade.
    assert metrics["per_exit"]["L4"]["map"] == metrics["map"]
    result = runner.invoke(app, [*args, "--alpha", "0.5,0.2"])
    assert result.exit_code == 2 and "need 3 drop ratios" in result.output


def test_alpha_on_a_cross_encoder_is_refused(saved_tiny: Path, example_jsonl: Path) -> None:
    result = runner.invoke(
        app, ["eval", "-m", str(saved_tiny), "-d", f"jsonl:{example_jsonl}", "--alpha", "0.3"]
    )
    assert result.exit_code == 2 and "not a cascade" in result.output


def test_tune_cascade_saves_the_choice_and_rank_uses_it(
    saved_cascade: Path, example_jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))  # the score cache lands here
    out = tmp_path / "tuning"
    args = ["tune-cascade", "-m", str(saved_cascade), "-o", str(out), "-d", f"jsonl:{example_jsonl}"]
    result = runner.invoke(app, [*args, "--grid", "0.2,0.5", "--tolerance", "1.0"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "grid.json").read_text())
    assert len(report["grid"]) == 1 + 2**3
    # Any loss is tolerated, so the cheapest configuration wins: 0.5 at every exit.
    assert report["chosen"]["drop_ratios"] == [0.5, 0.5, 0.5]
    assert (out / "pareto.png").read_bytes()[:4] == b"\x89PNG"
    saved = json.loads((saved_cascade / "config.json").read_text())
    assert saved["config"]["drop_ratios"] == [0.5, 0.5, 0.5] and saved["tuning"]["metric"] == "p@1"
    ranked = tmp_path / "r.jsonl"
    result = runner.invoke(
        app, ["rank", "-m", str(saved_cascade), "-i", str(example_jsonl), "-o", str(ranked)]
    )
    assert result.exit_code == 0, result.output
    # The ranking is the one the saved ratios give, not the unpruned one.
    from sieveqa.data.jsonl import read_jsonl
    from sieveqa.models.base import flatten_pairs
    from sieveqa.models.cascade import CascadeTransformer
    from sieveqa.runtime.cascade import groups_of, simulate

    examples = read_jsonl(example_jsonl)
    model = CascadeTransformer.from_pretrained(saved_cascade)
    expected = simulate(model.exit_scores(*flatten_pairs(examples)), groups_of(examples), [0.5] * 3).orders()
    rows = [json.loads(line) for line in ranked.read_text().splitlines()]
    for ex, row, order in zip(examples, rows, expected, strict=True):
        assert [c["id"] for c in row["candidates"]] == [ex.candidates[i].id for i in order]
