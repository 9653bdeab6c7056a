"""``sieveqa eval`` and ``sieveqa tune-cascade``."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from sieveqa.cli._app import (
    AlphaOpt,
    BackendOpt,
    BatchOpt,
    DatasetOpt,
    DeviceOpt,
    FusionOpt,
    LongTextsOpt,
    ModelOpt,
    PolicyOpt,
    PrecisionOpt,
    WarmUpOpt,
    app,
    check_device,
    console,
    float_list,
    warm_up_ranker,
)
from sieveqa.errors import ConfigError


def _command() -> str:
    return "sieveqa " + " ".join(sys.argv[1:])


def _is_reader(model: str) -> bool:
    """Whether ``model`` names a saved reader (a bad name is reported later, after the data checks)."""
    from sieveqa.errors import ModelFormatError
    from sieveqa.models._saving import model_kind
    from sieveqa.models.zoo import resolve_model

    try:
        return model_kind(resolve_model(model)) == "reader"
    except ModelFormatError:
        return False


@app.command("eval")
def evaluate(
    dataset: DatasetOpt = "wikiqa:test",
    model: ModelOpt = "default",
    json_out: Annotated[Path | None, typer.Option("--json", help="write the metrics as JSON here")] = None,
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = "auto",
    backend: BackendOpt = "torch",
    batch_size: BatchOpt = None,
    alpha: AlphaOpt = None,
    threshold: Annotated[
        str | None,
        typer.Option(
            help="cascade: drop candidates scoring below these thresholds instead (one per exit but the last)"
        ),
    ] = None,
    policy: PolicyOpt = None,
    per_question: Annotated[bool, typer.Option(help="include per-question metrics in the JSON")] = False,
    budget: Annotated[
        float | None, typer.Option(help="a reader: SkylineBuilder's layers per passage (else all layers)")
    ] = None,
    scheduler: Annotated[
        str | None, typer.Option(help="a reader: the learned scheduler (train-scheduler)")
    ] = None,
    fusion: FusionOpt = None,
    warm_up: WarmUpOpt = False,
    long_texts: LongTextsOpt = "windows",
    profile: Annotated[
        bool,
        typer.Option(
            "--profile",
            help="say where the time went: tokenizing, collating, the model (with GFLOPs), the rest",
        ),
    ] = False,
) -> None:
    """Score every candidate of a labelled dataset and report MAP, MRR, P@1, nDCG@10 and throughput.

    A cascade also reports its relative cost (layer-units against the full model) and the metrics
    of the cascade stopped at each exit (at α = 0, each exit alone). A reader (open-domain data, e.g.
    squad-open-mini:test) reports EM and F1 at a --budget of layers per passage; see eval-reader.
    """
    from sieveqa.runtime.answer.fusion import Fusion, carries_scores, with_fusion

    fused = Fusion.parse(fusion if fusion is not None else "auto")
    if _is_reader(model):
        from sieveqa.cli.reader import run_eval_reader

        if fusion is not None and fused.active:
            raise ConfigError(f"--fusion is for rankers; {model} is a reader")
        method = "learned" if scheduler else "skyline" if budget is not None else "standard"
        shared = {"budget": budget, "scheduler": scheduler}
        run_eval_reader(model, dataset, method, shared, json_out=json_out, device=device)
        return
    if budget is not None or scheduler is not None:
        raise ConfigError(f"--budget and --scheduler are for readers; {model} is a ranker")

    from sieveqa.data.registry import dataset_file, load_dataset
    from sieveqa.evaluation.metrics import qrels_from_examples
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.evaluation.report import PASSAGE_SUMMARY, SUMMARY, evaluate_ranker, over_first_stage
    from sieveqa.io import atomic_write_json, check_output_file
    from sieveqa.runtime.policy import check_long_texts, load_ranker, read_long_texts

    check_device(device, precision, backend)
    check_long_texts(long_texts)
    if json_out is not None:
        check_output_file(json_out, "--json", {"--dataset": dataset_file(dataset)})
    if alpha and threshold:
        raise ConfigError("give --alpha or --threshold, not both")
    examples = load_dataset(dataset)
    qrels = qrels_from_examples(examples, dataset)  # an unlabelled file fails here, before any scoring
    unanswered = sum(not any(label > 0 for label in judged.values()) for judged in qrels.values())
    if unanswered:
        typer.echo(
            f"note: {unanswered} of {len(qrels)} questions have no correct candidate; each counts 0 in every "
            "metric (the benchmarks' clean splits, wikiqa:test and trecqa:test-clean, leave such "
            "questions out)",
            err=True,
        )
    ranker = load_ranker(
        model,
        device=device,
        precision=precision,
        batch_size=batch_size,
        policy=policy,
        backend=backend,
        drop_ratios=float_list(alpha, "--alpha"),
        thresholds=float_list(threshold, "--threshold"),
    )
    read_long_texts(ranker, long_texts)
    if warm_up:
        warm_up_ranker(ranker)
    used = getattr(ranker, "model", ranker)
    if not any(fused.applies(carries_scores(ex)) for ex in examples):
        fused = Fusion()  # auto, and no first stage's scores in the data: the model alone
    ranker = with_fusion(ranker, fused)
    from sieveqa.profiling import Profile, profiled, render

    spent = Profile()
    with profiled(spent) if profile else contextlib.nullcontext():
        report, metrics = evaluate_ranker(ranker, examples, dataset, progress=True)
    result: dict[str, Any] = {
        "model": model,
        "dataset": dataset,
        "device": str(used.device),
        "precision": used.precision,
        "backend": getattr(used, "backend", "torch"),
        "fusion": str(fused),
        **metrics,
        "no_correct_candidate": unanswered,
        "run": run_info(_command()),
    }
    if per_question:
        result["per_question"] = report.per_question
    columns = [c for c in (PASSAGE_SUMMARY if over_first_stage(examples) else SUMMARY) if c in result]
    if "relative_cost" in result:
        columns.insert(4, "relative_cost")
    where = getattr(used, "backend", "torch")
    ran = used.precision if where == "torch" else f"{used.precision} on {where}"
    table = Table(title=f"{model} on {dataset} ({report.n_questions} questions, {ran})")
    for key in columns:
        table.add_column(key, overflow="fold")  # a narrow terminal folds a long name, never cuts it
    table.add_row(*(str(result[k]) for k in columns))
    console.print(table)
    if profile:
        result["profile"] = spent.as_dict()
        console.print(render(spent, "the dataset"))
    if json_out is not None:
        atomic_write_json(json_out, result)


@app.command("tune-cascade")
def tune_cascade(
    model: Annotated[str, typer.Option("--model", "-m", help="a cascade model folder (or default-cascade)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="folder for grid.json, pareto.png, policy.json")],
    dataset: DatasetOpt = "squad-as2:dev",
    grid: Annotated[str, typer.Option(help="drop ratios tried at every exit but the last")] = (
        "0.1,0.2,0.3,0.4,0.5,0.6"
    ),
    metric: Annotated[str, typer.Option(help="metric the choice must preserve")] = "p@1",
    tolerance: Annotated[
        float, typer.Option(help="allowed loss of METRIC against no pruning (absolute, 0.01 = 1 point)")
    ] = 0.01,
    save: Annotated[
        bool, typer.Option(help="also save the chosen policy beside the model (never into a shipped one)")
    ] = True,
    batch_size: Annotated[int, typer.Option(help="pairs per forward pass")] = 64,
    agreement: Annotated[
        int | None,
        typer.Option(
            help="tune without labels: a candidate counts as right when the unpruned model ranks it in "
            "its top K (the default, K = 1, when --dataset has no labels)"
        ),
    ] = None,
) -> None:
    """Grid-search per-exit drop ratios on a dev set (paper section 5.5) and keep the cheapest
    configuration within TOLERANCE of the unpruned METRIC; plot accuracy against relative cost.
    A dataset without labels (your own pairs) is tuned for agreement with the unpruned model.

    The chosen policy is written to OUT/policy.json (use it with --policy) and, for a model folder of
    your own, beside the model. Unpruned scores are cached (~/.cache/sieveqa/scores), so another grid
    is quick.
    """
    from sieveqa.data.registry import load_dataset
    from sieveqa.errors import require_extra
    from sieveqa.evaluation.cascade_search import (
        agreement_labels,
        check_agreement,
        choose,
        grid_search,
        pareto_front,
        plot_pareto,
    )
    from sieveqa.evaluation.metrics import METRICS, qrels_from_examples
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.evaluation.score_cache import cached_scores
    from sieveqa.io import atomic_write_json, check_output_dir, exclusive
    from sieveqa.models.cascade import CascadeTransformer
    from sieveqa.models.zoo import is_shipped, load_model
    from sieveqa.runtime.cascade import CascadePolicy
    from sieveqa.runtime.pruning import check_drop_ratios

    check_output_dir(out, "--out")
    if metric not in METRICS:
        raise ConfigError(f"--metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if tolerance < 0:
        raise ConfigError(f"--tolerance must be >= 0 (an allowed loss), got {tolerance}")
    values = float_list(grid, "--grid") or []
    check_drop_ratios(values, len(values) + 1)
    require_extra("matplotlib", "plot", "tune-cascade's Pareto plot")
    if agreement is not None:
        check_agreement(agreement)
    cascade = load_model(model, CascadeTransformer, want="a cascade")
    examples = load_dataset(dataset)
    most = max((len(ex.candidates) for ex in examples), default=0)
    if most == 0:  # tuned on nothing, every setting scored alike, and the saved policy overwritten
        raise ConfigError(f"--dataset {dataset}: no question with candidates in it, nothing to tune on")
    if agreement is not None and agreement >= most:
        raise ConfigError(
            f"--agreement {agreement}: no question has more than {most} candidates, so every one would "
            f"count as right and every setting score perfectly; give a K below {most}"
        )
    if agreement is None and not any(c.label is not None for ex in examples for c in ex.candidates):
        agreement = 1
    if agreement is None:
        qrels_from_examples(examples, dataset, to_tune=True)
    with exclusive(out, "tuning folder"):
        scores = cached_scores(model, dataset, examples, progress=True, batch_size=batch_size, loaded=cascade)
        if agreement is not None:
            examples = agreement_labels(examples, scores[:, -1], agreement)
        points = grid_search(examples, scores, cascade.exits, values, progress=True)
        chosen = choose(points, metric, tolerance)
        full = next(p for p in points if not any(p.drop_ratios))
        title = f"{model} on {dataset}: {len(points)} drop-ratio configurations"
        plot_pareto(points, out / "pareto.png", chosen=chosen, title=title)
        command = _command()
        report = {"model": model, "dataset": dataset, "exits": cascade.exits, "metric": metric}
        report["agreement"] = agreement  # None: the dataset's labels; K: the unpruned model's top K
        report |= {"tolerance": tolerance, "unpruned": full.as_dict(), "chosen": chosen.as_dict()}
        report["pareto_front"] = [p.as_dict() for p in pareto_front(points, metric)]
        report |= {"grid": [p.as_dict() for p in points], "run": run_info(command)}
        atomic_write_json(out / "grid.json", report)
        policy = CascadePolicy(drop_ratios=chosen.drop_ratios)
        tuning = {"dataset": dataset, "metric": metric, "tolerance": tolerance, "command": command}
        tuning |= {"agreement": agreement} if agreement is not None else {}
        policy.write(out / "policy.json", tuning | chosen.as_dict())
    console.print(
        f"unpruned: {metric}={full.metrics[metric]:.4f}; chosen α={list(chosen.drop_ratios)}: "
        f"{metric}={chosen.metrics[metric]:.4f} at relative cost {chosen.relative_cost:.3f}"
    )
    console.print(f"wrote {out / 'grid.json'}, {out / 'pareto.png'} and {out / 'policy.json'}")
    if save and cascade.path is not None and is_shipped(cascade.path):
        where = out / "policy.json"
        console.print(f"{model} ships inside the package, which is never written to: use --policy {where}")
    elif save:
        saved = policy.save_beside(cascade, tuning | chosen.as_dict())
        console.print(f"saved the policy beside the model: {saved}")


@app.command("tune-ensemble")
def tune_ensemble_command(
    members: Annotated[str, typer.Option(help="comma-separated models (names or folders) to ensemble")],
    out: Annotated[Path, typer.Option("--out", "-o", help="ensemble folder to write (loads like a model)")],
    dataset: Annotated[str, typer.Option(help="dev dataset(s) the weights are tuned on")] = (
        "wikiqa:dev,trecqa:dev-clean"
    ),
    metric: Annotated[str, typer.Option(help="dev metric to maximise")] = "map",
    trials: Annotated[
        int, typer.Option(help="Optuna trials (the first: equal weights, then each member alone)")
    ] = 200,
    seed: Annotated[int, typer.Option(help="seed of the TPE sampler")] = 0,
) -> None:
    """Tune the weights of a linear ensemble of rankers on dev (Optuna), as the MHS paper's ensembles.

    Each member scores the dev set once (cached); the ensemble folder then works with eval and rank
    (--model OUT) and costs all of its members together.
    """
    from sieveqa.data.registry import load_datasets
    from sieveqa.evaluation.ensemble_search import tune_ensemble
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.io import atomic_write_json, check_output_dir
    from sieveqa.runtime.ensemble import check_member

    names = [m.strip() for m in members.split(",") if m.strip()]
    for name in names:
        check_member(name)
    check_output_dir(out, "--out")
    if (out / "config.json").exists():
        raise ConfigError(f"--out {out} holds a model; give the ensemble a folder of its own")
    examples = load_datasets(dataset)
    result = tune_ensemble(names, dataset, examples, trials, metric, seed)
    result.spec.save(out)
    table = Table(title=f"ensemble tuned on {dataset} ({trials} trials)")
    for column in ("member", "weight", f"dev {metric}"):
        table.add_column(column)
    for name, weight in zip(names, result.spec.weights, strict=True):
        table.add_row(name, f"{weight:.3f}", f"{result.members[name]:.4f}")
    table.add_row("ensemble", "", f"{result.value:.4f}")
    console.print(table)
    report = {**result.spec.tuning, "alone": result.members, "run": run_info(_command())}
    atomic_write_json(out / "tuning.json", report)
    console.print(f"wrote {out}; use it as --model {out}")
