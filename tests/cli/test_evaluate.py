"""``sieveqa eval`` and ``sieveqa tune-cascade`` end to end on tiny saved models."""

import json
from pathlib import Path

import pytest

from sieveqa.data.jsonl import read_jsonl
from sieveqa.models.base import flatten_pairs
from sieveqa.models.cascade import CascadeTransformer
from sieveqa.runtime.trace import groups_of, simulate
from tests.cli.conftest import one_error_line


def test_eval_writes_the_promised_json(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    out = tmp_path / "m.json"
    result = sieveqa("eval", "--model", saved_tiny, "--dataset", f"jsonl:{example_jsonl}", "--json", out)
    assert result.exit_code == 0, result.output
    metrics = json.loads(out.read_text())
    for key in ("map", "mrr", "p@1", "ndcg@10", "n_questions", "pairs_per_second", "layer_units", "run"):
        assert key in metrics
    assert metrics["n_questions"] == 3 and metrics["n_pairs"] == 16
    assert metrics["layer_units"] == 4 * 16  # 16 pairs, 4 layers each
    assert metrics["precision"] in ("fp32", "bf16") and metrics["device"] in ("cpu", "cuda:0")
    assert 0.0 <= metrics["map"] <= 1.0
    assert metrics["fusion"] == "none"  # auto, and the file carries no retriever's scores


def test_eval_with_bm25_fusion_reports_it_and_ranks_by_it(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    from sieveqa.evaluation.metrics import evaluate_scores
    from sieveqa.runtime.answer.fusion import lexical_scores

    out = tmp_path / "m.json"
    args = ("eval", "--model", saved_tiny, "--dataset", f"jsonl:{example_jsonl}", "--json", out)
    result = sieveqa(*args, "--fusion", "interp:1")
    assert result.exit_code == 0, result.output
    metrics = json.loads(out.read_text())
    examples = read_jsonl(example_jsonl)
    bm25 = [lexical_scores(ex.question.text, [c.text for c in ex.candidates]) for ex in examples]
    # BM25's whole share: the model's scores no longer matter, BM25's order is what is measured.
    assert metrics["fusion"] == "interp:1"
    assert metrics["map"] == pytest.approx(evaluate_scores(examples, bm25).mean["map"], abs=1e-4)
    assert one_error_line(sieveqa(*args, "--fusion", "bm25")).startswith("error: --fusion must be none")


def test_questions_with_no_correct_candidate_are_counted_and_said(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    # they score 0 in every metric: said nowhere, a user's MAP fell with no reason given
    rows = [json.loads(line) for line in example_jsonl.read_text().splitlines()]
    for candidate in rows[0]["candidates"]:
        candidate["label"] = 0
    data, out = tmp_path / "some-unanswered.jsonl", tmp_path / "m.json"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = sieveqa("eval", "-m", saved_tiny, "-d", f"jsonl:{data}", "--json", out)
    assert result.exit_code == 0, result.output
    assert "note: 1 of 3 questions have no correct candidate; each counts 0 in every metric" in result.output
    assert json.loads(out.read_text())["no_correct_candidate"] == 1
    assert (
        "no correct candidate" not in sieveqa("eval", "-m", saved_tiny, "-d", f"jsonl:{example_jsonl}").output
    )


def test_a_json_report_over_the_dataset_file_is_refused(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    before = example_jsonl.read_bytes()
    for name in (f"jsonl:{example_jsonl}", f"jsonl:{example_jsonl}[:2]", str(example_jsonl)):
        line = one_error_line(sieveqa("eval", "-m", tmp_path / "nope", "-d", name, "--json", example_jsonl))
        assert line == f"error: --json {example_jsonl}: is the --dataset file; write elsewhere"
    assert example_jsonl.read_bytes() == before


def test_bad_dataset_name_is_one_line(sieveqa, saved_tiny: Path) -> None:
    line = one_error_line(sieveqa("eval", "--model", saved_tiny, "--dataset", "wikiqa:validation"))
    assert "wikiqa has no split 'validation'" in line


def test_eval_of_unlabelled_questions_fails_before_any_scoring(sieveqa, tmp_path: Path) -> None:
    data = tmp_path / "unlabelled.jsonl"
    data.write_text(
        json.dumps({"qid": "q1", "question": "who?", "candidates": [{"id": "c1", "text": "x"}]}) + "\n"
    )
    # The model folder does not exist: the labels are checked first, so theirs is the error reported.
    line = one_error_line(sieveqa("eval", "-m", tmp_path / "nope", "-d", f"jsonl:{data}"))
    assert line.startswith(f"error: jsonl:{data}: question 'q1', candidate 'c1' has no 'label'")


def test_eval_json_that_is_a_folder_is_refused_first(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path
) -> None:
    line = one_error_line(
        sieveqa("eval", "-m", saved_tiny, "-d", f"jsonl:{example_jsonl}", "--json", tmp_path)
    )
    assert line == f"error: --json {tmp_path}: is a folder; give the path of a file to write"


def test_eval_of_a_cascade_reports_cost_and_every_exit(
    sieveqa, saved_cascade: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    out = tmp_path / "c.json"
    args = ["eval", "-m", saved_cascade, "-d", f"jsonl:{example_jsonl}", "--json", out]
    result = sieveqa(*args, "--alpha", "0.5")
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
    assert "need 3 drop ratios" in one_error_line(sieveqa(*args, "--alpha", "0.5,0.2"))
    assert one_error_line(sieveqa(*args, "--alpha", "0.5", "--threshold", "1,2,3")).endswith("not both")


@pytest.mark.slow
def test_tune_cascade_writes_a_policy_that_rank_applies(
    sieveqa, saved_cascade: Path, example_jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))  # the score cache lands here
    out = tmp_path / "tuning"
    args = ["tune-cascade", "-m", saved_cascade, "-o", out, "-d", f"jsonl:{example_jsonl}"]
    result = sieveqa(*args, "--grid", "0.2,0.5", "--tolerance", "1.0")
    assert result.exit_code == 0, result.output
    report = json.loads((out / "grid.json").read_text())
    assert len(report["grid"]) == 1 + 2**3
    # Any loss is tolerated, so the cheapest configuration wins: 0.5 at every exit.
    assert report["chosen"]["drop_ratios"] == [0.5, 0.5, 0.5]
    assert (out / "pareto.png").read_bytes()[:4] == b"\x89PNG"
    for policy_file in (out / "policy.json", saved_cascade / "policy.json"):
        saved = json.loads(policy_file.read_text())
        assert saved["policy"] == "cascade" and saved["drop_ratios"] == [0.5, 0.5, 0.5]
        assert saved["tuning"]["metric"] == "p@1"
    ranked = tmp_path / "r.jsonl"
    result = sieveqa("rank", "-m", saved_cascade, "-i", example_jsonl, "-o", ranked, "--precision", "fp32")
    assert result.exit_code == 0, result.output
    # The ranking is the one the saved ratios give, not the unpruned one.
    examples = read_jsonl(example_jsonl)
    model = CascadeTransformer.from_pretrained(saved_cascade)
    expected = simulate(model.exit_scores(*flatten_pairs(examples)), groups_of(examples), [0.5] * 3).orders()
    rows = [json.loads(line) for line in ranked.read_text().splitlines()]
    for ex, row, order in zip(examples, rows, expected, strict=True):
        assert [c["id"] for c in row["candidates"]] == [ex.candidates[i].id for i in order]


@pytest.mark.slow
def test_tune_cascade_never_writes_into_the_installed_package(
    sieveqa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, saved_cascade: Path, example_jsonl: Path
) -> None:
    from sieveqa.models import zoo

    # A stand-in for default-cascade: the saved tiny cascade, seen as a shipped model.
    monkeypatch.setattr(zoo, "RESOURCES", saved_cascade.parent)
    monkeypatch.setitem(zoo.SHIPPED, "shipped-cascade", saved_cascade)
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "tuning"
    result = sieveqa(
        "tune-cascade",
        "-m",
        "shipped-cascade",
        "-o",
        out,
        "-d",
        f"jsonl:{example_jsonl}",
        "--grid",
        "0.5",
        "--tolerance",
        "1.0",
    )
    assert result.exit_code == 0, result.output
    assert (out / "policy.json").is_file() and not (saved_cascade / "policy.json").exists()
    assert f"use --policy {out / 'policy.json'}" in result.output
    with_policy = sieveqa(
        "eval",
        "-m",
        "shipped-cascade",
        "-d",
        f"jsonl:{example_jsonl}",
        "--policy",
        out / "policy.json",
        "--json",
        tmp_path / "e.json",
    )
    assert with_policy.exit_code == 0, with_policy.output
    assert json.loads((tmp_path / "e.json").read_text())["drop_ratios"] == [0.5, 0.5, 0.5]


@pytest.mark.slow
def test_tune_ensemble_writes_a_folder_eval_loads(
    sieveqa, saved_tiny: Path, saved_cascade: Path, example_jsonl: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    data, out = f"jsonl:{example_jsonl}", tmp_path / "ens"
    members = f"{saved_tiny},{saved_cascade}"
    result = sieveqa("tune-ensemble", "--members", members, "--dataset", data, "--trials", 5, "-o", out)
    assert result.exit_code == 0, result.output
    tuning = json.loads((out / "tuning.json").read_text())
    assert tuning["trials"] == 5 and tuning["value"] >= max(tuning["alone"].values())
    # Tuning scores in fp32; so must eval, or bf16 (auto on AVX512-BF16 CPUs) may flip near-ties.
    result = sieveqa(
        "eval", "--model", out, "--dataset", data, "--precision", "fp32", "--json", tmp_path / "m.json"
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["map"] == pytest.approx(tuning["value"], abs=1e-4)  # the JSON keeps 4 digits
    weighted = sum(w > 0 for w in json.loads((out / "ensemble.json").read_text())["weights"])
    assert (
        metrics["layer_units"] == weighted * 4 * 16
    )  # each weighted member reads every pair through 4 layers
    line = one_error_line(sieveqa("tune-ensemble", "--members", f"{saved_tiny},nope", "-o", tmp_path / "e2"))
    assert "model 'nope' is neither a shipped model" in line
    line = one_error_line(sieveqa("tune-ensemble", "--members", members, "-o", saved_tiny))
    assert "holds a model; give the ensemble a folder of its own" in line


def test_tuning_on_a_dev_set_without_a_correct_label_is_refused(
    sieveqa, saved_cascade: Path, saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    """tune-ensemble wrote an ensemble tuned on MAP 0.0, silently."""
    rows = [json.loads(line) for line in example_jsonl.read_text().splitlines() if line.strip()]
    for row in rows:
        for cand in row["candidates"]:
            cand["label"] = 0
    dev = tmp_path / "wrong.jsonl"
    dev.write_text("".join(json.dumps(r) + "\n" for r in rows))
    says = f"jsonl:{dev}: no question has a correct candidate (label 1)"
    line = one_error_line(
        sieveqa(
            "tune-ensemble",
            "--members",
            f"{saved_tiny},{saved_tiny}",
            "-o",
            tmp_path / "e",
            "--dataset",
            f"jsonl:{dev}",
        )
    )
    assert says in line and not (tmp_path / "e" / "ensemble.json").exists()
    line = one_error_line(
        sieveqa("tune-cascade", "-m", saved_cascade, "-o", tmp_path / "t", "-d", f"jsonl:{dev}")
    )
    assert says in line


@pytest.mark.slow
def test_tune_cascade_on_unlabelled_pairs_tunes_for_agreement(
    sieveqa, saved_cascade: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 45: the user's own pairs carry no labels: P@1 becomes agreement with the unpruned top 1."""
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    pairs = tmp_path / "traffic.jsonl"
    lines = [("tea?", "Tea is a drink."), ("tea?", "Bees make honey."), ("tea?", "Tea grows on bushes.")]
    lines += [("sea?", "The sea is salty."), ("sea?", "Glaciers carve valleys.")]
    pairs.write_text("".join(json.dumps({"query": q, "text": t}) + "\n" for q, t in lines))
    out = tmp_path / "tuning"
    result = sieveqa("tune-cascade", "-m", saved_cascade, "-o", out, "-d", f"pairs:{pairs}", "--grid", "0.5")
    assert result.exit_code == 0, result.output
    report = json.loads((out / "grid.json").read_text())
    assert report["agreement"] == 1 and report["unpruned"]["p@1"] == 1.0  # the full model agrees with itself
    # Within the default tolerance the cheapest point that keeps the full model's top answer wins.
    kept = [p for p in report["grid"] if p["p@1"] >= 1.0 - report["tolerance"] - 1e-9]
    assert report["chosen"]["relative_cost"] == min(p["relative_cost"] for p in kept)
    assert json.loads((out / "policy.json").read_text())["tuning"]["agreement"] == 1
    # Given labels, --agreement still tunes by the model's own top K, not by them.
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(
        json.dumps(
            {
                "qid": "q",
                "question": "tea?",
                "candidates": [
                    {"id": "a", "text": "Tea is a drink.", "label": 0},
                    {"id": "b", "text": "Bees make honey.", "label": 0},
                ],
            }
        )
        + "\n"
    )  # no correct answer: tuning by the labels would be refused
    result = sieveqa(
        "tune-cascade", "-m", saved_cascade, "-o", tmp_path / "t2", "-d", labelled, "--agreement", "1"
    )
    assert result.exit_code == 0, result.output


def test_tune_cascade_agreement_below_one_is_one_line(sieveqa, saved_cascade: Path, tmp_path: Path) -> None:
    line = one_error_line(
        sieveqa("tune-cascade", "-m", saved_cascade, "-o", tmp_path / "t", "--agreement", "0")
    )
    assert line == "error: --agreement must be >= 1 (the full model's top K), got 0"


@pytest.mark.slow
def test_warm_up_runs_every_bucketed_shape_before_eval_and_rank(
    sieveqa, saved_tiny: Path, example_jsonl: Path, monkeypatch
) -> None:
    """``--warm-up`` (for half precision on CUDA) pays for each batch shape before the job; exact
    shapes, the CPU's, have none to pay for."""
    from sieveqa.batching import Shapes
    from sieveqa.models.encoder_model import EncoderModel

    result = sieveqa("eval", "--model", saved_tiny, "--dataset", f"jsonl:{example_jsonl}", "--warm-up")
    assert result.exit_code == 0, result.output
    assert "warmed up at 0 batch shapes" in result.output
    monkeypatch.setattr(EncoderModel, "shapes", property(lambda self: Shapes(True, self.config.max_length)))
    for command in (["eval", "--dataset", f"jsonl:{example_jsonl}"], ["rank", "--input", example_jsonl]):
        result = sieveqa(*command, "--model", saved_tiny, "--batch-size", "8", "--warm-up")
        assert result.exit_code == 0, result.output
        assert "warmed up at 16 batch shapes" in result.output  # rows 1, 2, 4, 8 by 4 widths to 64


def test_tune_cascade_refuses_to_tune_on_nothing_or_on_an_agreement_everything_meets(
    sieveqa, saved_cascade: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    # Found by a hostile probe: an empty dataset exited 0 and overwrote the tuned policy.json with
    # drop ratios 0; --agreement K with K >= the candidates scored every setting perfect.
    policy = saved_cascade / "policy.json"
    before = policy.read_bytes() if policy.exists() else None
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    args = ["tune-cascade", "-m", saved_cascade, "-o", tmp_path / "t"]
    result = sieveqa(*args, "-d", f"jsonl:{empty}")
    assert result.exit_code == 2 and "nothing to tune on" in one_error_line(result)
    most = max(len(ex.candidates) for ex in read_jsonl(example_jsonl))
    result = sieveqa(*args, "-d", f"jsonl:{example_jsonl}", "--agreement", str(most))
    assert result.exit_code == 2 and f"give a K below {most}" in one_error_line(result)
    assert (policy.read_bytes() if policy.exists() else None) == before


def test_eval_on_a_beir_folder_reports_passage_metrics_beside_the_first_stage(
    sieveqa, saved_tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sieveqa.data.beir import beir_examples, read_beir
    from sieveqa.evaluation.metrics import evaluate_orders
    from tests.data.test_beir import write_beir

    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    folder = write_beir(tmp_path / "set", {"test": [("q1", "d1", 2), ("q1", "d4", 1), ("q2", "d2", 1)]})
    out = tmp_path / "m.json"
    result = sieveqa("eval", "--model", saved_tiny, "--dataset", f"beir:{folder}", "--json", out)
    assert result.exit_code == 0, result.output
    metrics = json.loads(out.read_text())
    examples = beir_examples(read_beir(folder))
    bm25 = evaluate_orders(examples, [range(len(ex.candidates)) for ex in examples]).as_dict()
    assert metrics["first_stage"] == bm25 and metrics["first_stage_ndcg@10"] == bm25["ndcg@10"]
    assert metrics["n_questions"] == 2 and metrics["recall@100"] == 1.0
    assert metrics["fusion"] == "auto"  # the set carries BM25's scores: fused with them by default


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("nowhere", "beir:{tmp}/nowhere: no such folder"),
        ("set:train", "qrels/train.tsv: no such file; its splits: test"),
        ("broken", "corpus.jsonl, line 1: invalid JSON"),
    ],
)
def test_a_bad_beir_folder_is_one_error_line(
    sieveqa, saved_tiny: Path, tmp_path: Path, monkeypatch, spec, says
) -> None:
    from tests.data.test_beir import write_beir

    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    write_beir(tmp_path / "set", {"test": [("q1", "d1", 1)]})
    write_beir(tmp_path / "broken", {"test": [("q1", "d1", 1)]})
    (tmp_path / "broken" / "corpus.jsonl").write_text("{oops\n")
    line = one_error_line(sieveqa("eval", "--model", saved_tiny, "--dataset", f"beir:{tmp_path / spec}"))
    assert says.format(tmp=tmp_path) in line


def test_eval_profile_says_where_the_time_went(sieveqa, saved_tiny, example_jsonl, tmp_path) -> None:
    out = tmp_path / "report.json"
    result = sieveqa(
        "eval", "--model", saved_tiny, "--dataset", f"jsonl:{example_jsonl}", "--profile", "--json", out
    )
    assert result.exit_code == 0, result.output
    assert "where the dataset's time went" in result.output
    stages = {row["stage"]: row for row in json.loads(out.read_text())["profile"]["stages"]}
    assert {"tokenize", "collate", "model", "unstaged"} <= set(stages)
    assert stages["model"]["ms"] > 0 and stages["model"]["gflops"] > 0 and stages["tokenize"]["ms"] > 0
