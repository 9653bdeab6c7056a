"""The ``sieveqa`` command line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sieveqa.errors import SieveQAError

if TYPE_CHECKING:
    from sieveqa.models.base import Ranker

app = typer.Typer(
    help="sieveqa: answer sentence selection with as little transformer compute as the answer needs.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


@app.callback()
def _root() -> None:
    """sieveqa: answer sentence selection with as little transformer compute as the answer needs."""


DatasetOpt = Annotated[
    str,
    typer.Option(
        "--dataset",
        "-d",
        help="dataset name: wikiqa:test, wikiqa:test-raw, trecqa:test-clean, squad-as2:test, jsonl:PATH",
    ),
]
ModelOpt = Annotated[
    str, typer.Option("--model", "-m", help="a trained model folder, or 'default' (shipped)")
]


def _given_on_command_line(ctx: typer.Context, name: str) -> bool:
    # Typer vendors click, so compare the source by name rather than by a click enum import.
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _int_list(text: str | None, hint: str) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise typer.BadParameter(
            f"expected comma-separated integers, got {text!r}", param_hint=hint
        ) from None


@app.command()
def train(
    ctx: typer.Context,
    train_sets: Annotated[str, typer.Option("--train", help="comma-separated dataset names to train on")],
    out: Annotated[Path, typer.Option("--out", "-o", help="output folder (best model lands in OUT/best)")],
    init: Annotated[
        str, typer.Option(help="backbone name (minilm-l6, tiny, ...) or a sieveqa model folder")
    ] = ("minilm-l6"),
    dev: Annotated[str, typer.Option(help="dev dataset(s) that pick the best checkpoint; '' for none")] = (
        "wikiqa:dev"
    ),
    epochs: Annotated[float, typer.Option(help="passes over the training pairs")] = 1.0,
    batch_size: Annotated[int, typer.Option(help="pairs per forward pass")] = 32,
    grad_accum: Annotated[int, typer.Option(help="forward passes per optimizer step")] = 1,
    lr: Annotated[float, typer.Option(help="peak learning rate (AdamW, linear warm-up then decay)")] = 3e-5,
    warmup_ratio: Annotated[float, typer.Option(help="share of steps spent warming up")] = 0.1,
    max_negatives: Annotated[int | None, typer.Option(help="sample at most N negatives per question")] = None,
    max_pairs: Annotated[
        int | None, typer.Option(help="cap on training pairs (whole questions sampled)")
    ] = None,
    eval_every: Annotated[int, typer.Option(help="also evaluate on dev every N steps (0: each epoch)")] = 0,
    max_length: Annotated[
        int, typer.Option(help="tokens per (question, candidate) pair (has/bert-*: per answer)")
    ] = 128,
    arch: Annotated[
        str,
        typer.Option(
            help="cross-encoder; cascade (classifiers after several layers); has, bert-attention or "
            "bert-pooling (questions and answers encoded apart, answers storable)"
        ),
    ] = ("cross-encoder"),
    num_layers: Annotated[
        int | None, typer.Option(help="use only the backbone's first N layers (a shallower model)")
    ] = None,
    exits: Annotated[
        str | None,
        typer.Option(help="cascade: layers with a classifier, e.g. 2,3,4,5,6 (default: paper's rule)"),
    ] = None,
    exit_sampling: Annotated[
        str, typer.Option(help="cascade: 'random' (one exit per batch, the paper) or 'all' (mean of exits)")
    ] = "random",
    pooling: Annotated[
        str | None, typer.Option(help="head input: cls or mean (default: cls; cascade exits: mean)")
    ] = None,
    beta: Annotated[float, typer.Option(help="has: β of the tanh(βV) hashing layer")] = 5.0,
    delta: Annotated[float, typer.Option(help="has: δ, weight of the binary constraint")] = 1e-6,
    attention_hidden: Annotated[int, typer.Option(help="has/bert-attention: attention size M")] = 128,
    negatives_per_positive: Annotated[
        int, typer.Option(help="has/bert-*: triplets per positive answer (negatives drawn at random)")
    ] = 4,
    seed: Annotated[int, typer.Option(help="random seed")] = 42,
    config: Annotated[
        Path | None, typer.Option(help="JSON file of training settings (flags override)")
    ] = None,
    resume: Annotated[
        bool, typer.Option(help="continue from OUT/checkpoint if a run was interrupted")
    ] = True,
) -> None:
    """Train a cross-encoder, cascade, or HAS ranker (or HAS's BERT baselines).

    For TANDA run it twice: transfer on a large set, then adapt on the target (--init OUT/best).
    """
    from sieveqa.models.cascade import CascadeConfig
    from sieveqa.models.cross_encoder import CrossEncoderConfig
    from sieveqa.models.hashing import VARIANTS, HashingConfig
    from sieveqa.training.config import TrainConfig
    from sieveqa.training.recipes import train_hashing, train_ranker

    if arch not in ("cross-encoder", "cascade", *VARIANTS):
        raise typer.BadParameter(
            f"must be cross-encoder, cascade, {', '.join(VARIANTS)}", param_hint="--arch"
        )
    if arch != "cascade" and exits:
        raise typer.BadParameter("only a cascade has exits", param_hint="--exits")
    if exit_sampling not in ("random", "all"):
        raise typer.BadParameter("must be random or all", param_hint="--exit-sampling")
    architecture_flags = [
        f"--{n.replace('_', '-')}"
        for n in ("exits", "num_layers", "pooling", "beta", "delta", "attention_hidden")
        if _given_on_command_line(ctx, n)
    ]
    if architecture_flags and (Path(init) / "config.json").is_file():
        raise typer.BadParameter(
            f"{', '.join(architecture_flags)} cannot change a saved model's architecture; "
            f"{init} brings its own",
            param_hint="--init",
        )
    model_config: CrossEncoderConfig | CascadeConfig | HashingConfig
    if arch in VARIANTS:
        try:
            model_config = HashingConfig.variant(
                arch,
                max_length=max_length,
                num_layers=num_layers,
                beta=beta,
                delta=delta,
                attention_hidden=attention_hidden,
                **({"pooling": pooling} if pooling else {}),
            )
        except ValueError as err:
            raise typer.BadParameter(str(err), param_hint="--arch") from None
    elif arch == "cascade":
        model_config = CascadeConfig(
            max_length=max_length, num_layers=num_layers, exits=_int_list(exits, "--exits")
        )
    else:
        model_config = CrossEncoderConfig(max_length=max_length, num_layers=num_layers)
    if pooling and not isinstance(model_config, HashingConfig):
        model_config.pooling = pooling

    settings = dict(
        epochs=epochs,
        batch_size=batch_size,
        grad_accum=grad_accum,
        lr=lr,
        warmup_ratio=warmup_ratio,
        max_negatives=max_negatives,
        max_pairs=max_pairs,
        eval_every=eval_every,
        seed=seed,
    )
    if config:
        # Only flags typed on the command line override the file; defaults do not.
        given = {k: v for k, v in settings.items() if _given_on_command_line(ctx, k)}
        cfg = TrainConfig.from_json(config, **given)
    else:
        cfg = TrainConfig(**settings)
    if isinstance(model_config, HashingConfig):
        state = train_hashing(
            train_sets, out, init, dev or None, cfg, model_config, negatives_per_positive, resume
        )
    else:
        state = train_ranker(
            train_sets,
            out,
            init=init,
            dev=dev or None,
            config=cfg,
            model_config=model_config,
            arch=arch,
            exit_sampling=exit_sampling,
            resume=resume,
        )
    typer.echo(f"best {cfg.metric}={state.best_metric:.4f} at step {state.best_step}; model: {out / 'best'}")


PrecisionOpt = Annotated[
    str, typer.Option(help="fp32, bf16 (CPU autocast) or int8 (dynamic quantization); see docs/RESULTS.md")
]
BatchOpt = Annotated[int, typer.Option(help="pairs per forward pass at inference")]
AlphaOpt = Annotated[
    str | None,
    typer.Option(
        "--alpha",
        help="cascade drop ratio: one value for every exit, or one per exit but the last "
        "(e.g. 0.5,0.3,0.3,0.2); default: the ratios saved with the model",
    ),
]
ThresholdOpt = Annotated[
    str | None,
    typer.Option(
        help="cascade: drop candidates scoring below these thresholds instead (one per exit but the last)"
    ),
]


def _float_list(text: str | None, hint: str) -> list[float] | None:
    if not text:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated numbers, got {text!r}", param_hint=hint) from None


def _load_ranker(
    model: str, precision: str, batch_size: int, alpha: str | None = None, threshold: str | None = None
) -> Ranker:
    from sieveqa.models.cascade import CascadeTransformer
    from sieveqa.models.precision import PRECISIONS
    from sieveqa.models.zoo import load_model
    from sieveqa.runtime.cascade import CascadeRanker

    if precision not in PRECISIONS:
        raise typer.BadParameter(f"must be one of {', '.join(PRECISIONS)}", param_hint="--precision")
    loaded = load_model(model)
    if isinstance(loaded, CascadeTransformer):
        if alpha and threshold:
            raise typer.BadParameter(
                "give --alpha or --threshold, not both", param_hint="--alpha/--threshold"
            )
        try:
            return CascadeRanker(
                loaded,
                drop_ratios=_float_list(alpha, "--alpha"),
                thresholds=_float_list(threshold, "--threshold"),
                batch_size=batch_size,
                precision=precision,  # type: ignore[arg-type]
            )
        except ValueError as err:
            raise typer.BadParameter(str(err), param_hint="--alpha/--threshold") from None
    if alpha or threshold:
        raise typer.BadParameter(
            f"{model} is a {loaded.kind}, not a cascade", param_hint="--alpha/--threshold"
        )
    loaded.precision = precision  # type: ignore[assignment]
    loaded.batch_size = batch_size
    return loaded


@app.command("eval")
def evaluate(
    dataset: DatasetOpt = "wikiqa:test",
    model: ModelOpt = "default",
    json_out: Annotated[Path | None, typer.Option("--json", help="write the metrics as JSON here")] = None,
    precision: PrecisionOpt = "fp32",
    batch_size: BatchOpt = 64,
    alpha: AlphaOpt = None,
    threshold: ThresholdOpt = None,
    per_question: Annotated[bool, typer.Option(help="include per-question metrics in the JSON")] = False,
) -> None:
    """Score every candidate of a labelled dataset and report MAP, MRR, P@1, nDCG@10 and throughput.

    A cascade also reports its relative cost (layer-units against the full model) and the metrics
    of the cascade stopped at each exit (at α = 0, each exit alone).
    """
    from rich.console import Console
    from rich.table import Table

    from sieveqa.data.registry import load_dataset
    from sieveqa.evaluation.cascade_search import evaluate_trace, per_exit_metrics
    from sieveqa.evaluation.metrics import evaluate_scores
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.io import atomic_write_json
    from sieveqa.models.pair_model import PairModel
    from sieveqa.runtime.cascade import CascadeRanker

    examples = load_dataset(dataset)
    ranker = _load_ranker(model, precision, batch_size, alpha, threshold)
    result: dict[str, Any] = {"model": model, "dataset": dataset, "precision": precision}
    columns = ["map", "mrr", "p@1", "ndcg@10", "pairs_per_second", "layer_units"]
    if isinstance(ranker, CascadeRanker):
        run = ranker.run(examples, progress=True)
        report = evaluate_trace(examples, run.trace)
        result.update(
            {
                "drop_ratios": ranker.drop_ratios,
                "thresholds": ranker.thresholds,
                "exits": ranker.model.exits,
                **report.as_dict(),
                "relative_cost": round(run.relative_cost, 4),
                "survivors": run.trace.survivors,
                "n_questions": report.n_questions,
                "n_pairs": run.n_pairs,
                "seconds": round(run.seconds, 3),
                "pairs_per_second": round(run.pairs_per_second, 2),
                "layer_units": run.layer_units,
                "flops": run.flops,
                "per_exit": per_exit_metrics(examples, run.trace, ranker.model.exits),
            }
        )
        columns.insert(4, "relative_cost")
    else:
        assert isinstance(ranker, PairModel)
        report = evaluate_scores(examples, ranker.score(examples, progress=True))
        stats = ranker.last_stats
        result.update(
            {
                **report.as_dict(),
                "n_questions": report.n_questions,
                "n_pairs": stats.pairs,
                "seconds": round(stats.seconds, 3),
                "pairs_per_second": round(stats.pairs_per_second, 2),
                "layer_units": stats.layer_units,
                "flops": stats.flops,
            }
        )
    result["run"] = run_info("sieveqa " + " ".join(sys.argv[1:]))
    if per_question:
        result["per_question"] = report.per_question
    table = Table(title=f"{model} on {dataset} ({report.n_questions} questions)")
    for key in columns:
        table.add_column(key)
    table.add_row(*(str(result[k]) for k in columns))
    Console().print(table)
    if json_out:
        atomic_write_json(json_out, result)


@app.command("tune-cascade")
def tune_cascade(
    model: Annotated[str, typer.Option("--model", "-m", help="a cascade model folder")],
    out: Annotated[Path, typer.Option("--out", "-o", help="folder for grid.json and pareto.png")],
    dataset: DatasetOpt = "squad-as2:dev",
    grid: Annotated[str, typer.Option(help="drop ratios tried at every exit but the last")] = (
        "0.1,0.2,0.3,0.4,0.5,0.6"
    ),
    metric: Annotated[str, typer.Option(help="metric the choice must preserve")] = "p@1",
    tolerance: Annotated[
        float, typer.Option(help="allowed loss of METRIC against no pruning (absolute, 0.01 = 1 point)")
    ] = 0.01,
    save: Annotated[bool, typer.Option(help="store the chosen ratios in the model's config.json")] = True,
    batch_size: BatchOpt = 64,
) -> None:
    """Grid-search per-exit drop ratios on a dev set (paper section 5.5) and keep the cheapest
    configuration within TOLERANCE of the unpruned METRIC; plot accuracy against relative cost.

    The model's unpruned scores are cached (~/.cache/sieveqa/scores), so another grid is quick.
    """
    from rich.console import Console

    from sieveqa.data.registry import load_dataset
    from sieveqa.evaluation.cascade_search import (
        choose,
        grid_search,
        pareto_front,
        plot_pareto,
    )
    from sieveqa.evaluation.metrics import METRICS
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.evaluation.score_cache import cached_scores
    from sieveqa.io import atomic_write_json
    from sieveqa.models._saving import update_meta
    from sieveqa.models.cascade import CascadeTransformer, check_drop_ratios
    from sieveqa.models.zoo import resolve_model

    if metric not in METRICS:
        raise typer.BadParameter(f"must be one of {', '.join(METRICS)}", param_hint="--metric")
    values = _float_list(grid, "--grid") or []
    try:
        check_drop_ratios(values, len(values) + 1)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--grid") from None
    cascade = CascadeTransformer.from_pretrained(model)
    cascade.batch_size = batch_size
    examples = load_dataset(dataset)
    scores = cached_scores(model, dataset, examples, progress=True, batch_size=batch_size)
    points = grid_search(examples, scores, cascade.exits, values, progress=True)
    n_configs = len(points)
    chosen = choose(points, metric, tolerance)
    full = next(p for p in points if not any(p.drop_ratios))
    title = f"{model} on {dataset}: {n_configs} drop-ratio configurations"
    plot_pareto(points, out / "pareto.png", chosen=chosen, title=title)
    report = {
        "model": model,
        "dataset": dataset,
        "exits": cascade.exits,
        "metric": metric,
        "tolerance": tolerance,
        "unpruned": full.as_dict(),
        "chosen": chosen.as_dict(),
        "pareto_front": [p.as_dict() for p in pareto_front(points, metric)],
        "grid": [p.as_dict() for p in points],
        "run": run_info("sieveqa " + " ".join(sys.argv[1:])),
    }
    atomic_write_json(out / "grid.json", report)
    console = Console()
    console.print(
        f"unpruned: {metric}={full.metrics[metric]:.4f}; chosen α={list(chosen.drop_ratios)}: "
        f"{metric}={chosen.metrics[metric]:.4f} at relative cost {chosen.relative_cost:.3f}"
    )
    console.print(f"wrote {out / 'grid.json'} and {out / 'pareto.png'}")
    if save:
        tuning = {"dataset": dataset, "metric": metric, "tolerance": tolerance, **chosen.as_dict()}
        update_meta(
            resolve_model(model),
            "cascade",
            {"config": {"drop_ratios": list(chosen.drop_ratios)}, "tuning": tuning},
        )
        console.print(f"saved drop ratios {list(chosen.drop_ratios)} with {model}")


@app.command()
def retrofit(
    out: Annotated[Path, typer.Option("--out", "-o", help="output folder (the cascade lands in OUT/best)")],
    model: ModelOpt = "default",
    train_sets: Annotated[
        str, typer.Option("--train", help="datasets whose pairs are used, labels ignored")
    ] = "squad-as2:train",
    exits: Annotated[
        str | None, typer.Option(help="layers to add exits after (default: paper's rule)")
    ] = None,
    dev: Annotated[str, typer.Option(help="dev dataset(s) that pick the best heads; '' for none")] = (
        "wikiqa:dev,trecqa:dev-clean"
    ),
    tune_body: Annotated[bool, typer.Option(help="also tune the body (to the original logits)")] = False,
    epochs: Annotated[float, typer.Option(help="passes over the pairs")] = 1.0,
    max_pairs: Annotated[int | None, typer.Option(help="cap on pairs (whole questions sampled)")] = 30000,
    max_negatives: Annotated[
        int | None, typer.Option(help="pairs per question beyond the correct ones (more questions, same cap)")
    ] = 20,
    lr: Annotated[float, typer.Option(help="peak learning rate")] = 1e-3,
    batch_size: Annotated[int, typer.Option(help="pairs per forward pass")] = 64,
    eval_every: Annotated[int, typer.Option(help="also evaluate every N steps (0: each epoch)")] = 0,
    seed: Annotated[int, typer.Option(help="random seed")] = 42,
    resume: Annotated[bool, typer.Option(help="continue an interrupted run")] = True,
) -> None:
    """Turn a trained cross-encoder into a cascade: new exits learn to reproduce its score.

    The body and head stay as they are (unless --tune-body), so at α = 0 nothing changes; then run
    tune-cascade to pick drop ratios.
    """
    from sieveqa.training.config import TrainConfig
    from sieveqa.training.recipes import retrofit_cascade

    cfg = TrainConfig(
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        max_pairs=max_pairs,
        max_negatives=max_negatives,
        eval_every=eval_every,
        seed=seed,
        metric="map@mean",
    )
    state = retrofit_cascade(
        model, train_sets, out, _int_list(exits, "--exits"), dev or None, cfg, tune_body, resume
    )
    typer.echo(f"best map@mean={state.best_metric:.4f} at step {state.best_step}; cascade: {out / 'best'}")


@app.command()
def rank(
    input_path: Annotated[Path, typer.Option("--input", "-i", help="JSONL of questions with candidates")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="ranked JSONL (adds score and rank)")
    ] = (None),
    model: ModelOpt = "default",
    top: Annotated[int, typer.Option(help="answers to print per question")] = 3,
    precision: PrecisionOpt = "fp32",
    batch_size: BatchOpt = 64,
    alpha: AlphaOpt = None,
    store: Annotated[
        Path | None,
        typer.Option(help="answer store (sieveqa index build): candidates are answer ids, or none for all"),
    ] = None,
) -> None:
    """Rank the candidates of each question in a JSONL file; print the top answers with scores.

    A cascade prunes with the drop ratios saved with it (tune-cascade), unless --alpha is given.
    With --store the questions are scored against stored answers by the model that built the store.
    """
    from rich.console import Console

    from sieveqa.data.jsonl import example_dict, read_jsonl, write_jsonl

    if store is not None:
        from sieveqa.cli_index import rank_with_store

        given = model if model != "default" else None
        return rank_with_store(input_path, store, given, top, output)

    examples = read_jsonl(input_path)
    ranker = _load_ranker(model, precision, batch_size, alpha)
    # A bar only where scoring takes long enough to watch (a few seconds on this CPU).
    ranked = ranker.rank(examples, progress=sum(len(e.candidates) for e in examples) > 500)
    console = Console()
    for ex, answers in zip(examples, ranked, strict=True):
        console.print(f"[bold]{ex.question.text}[/bold]  [dim]({ex.qid})[/dim]")
        for s in answers[:top]:
            console.print(f"  {s.rank}. [green]{s.score:+.3f}[/green]  {s.candidate.text}")
    if output:
        write_jsonl(output, (example_dict(ex, r) for ex, r in zip(examples, ranked, strict=True)))
        console.print(f"wrote {len(examples)} ranked questions to {output}")


@app.command()
def backbones(
    verify: Annotated[bool, typer.Option(help="load and check every installed backbone's weights")] = True,
) -> None:
    """List the offline backbones and whether each is installed (and verified)."""
    from rich.console import Console
    from rich.table import Table

    from sieveqa.backbones import REGISTRY, backbone_status

    table = Table(title="backbones")
    for col in ("name", "description", "status", "install"):
        table.add_column(col)
    rows = (
        backbone_status()
        if verify
        else [
            {"name": s.name, "description": s.description, "status": "not checked", "install": s.install_hint}
            for s in REGISTRY.values()
        ]
    )
    for row in rows:
        colour = "green" if row["status"].startswith("ok") else "yellow"
        table.add_row(
            row["name"], row["description"], f"[{colour}]{row['status']}[/{colour}]", row["install"]
        )
    Console().print(table)
    typer.echo("Any local Hugging Face folder also works wherever a backbone name is accepted.")


data_app = typer.Typer(help="Build derived benchmarks.", no_args_is_help=True)
app.add_typer(data_app, name="data")


@data_app.command("build")
def data_build(
    name: Annotated[str, typer.Argument(help="benchmark to build: squad-as2")],
    force: Annotated[bool, typer.Option(help="rebuild even if an identical build is cached")] = False,
    top_k: Annotated[int, typer.Option(help="BM25 paragraphs retrieved per question")] = 25,
) -> None:
    """Build a derived benchmark from the raw data (cached; rebuilding gives identical files)."""
    if name != "squad-as2":
        raise typer.BadParameter(f"unknown benchmark {name!r}; known: squad-as2", param_hint="NAME")
    from sieveqa.data.squad_as2 import build_squad_as2

    manifest = build_squad_as2(top_k=top_k, force=force)
    for fname, info in manifest["files"].items():
        typer.echo(
            f"{fname}: {info['questions']} questions, {info['mean_candidates']:.1f} candidates/question"
        )


from sieveqa.cli_index import index_app  # noqa: E402

app.add_typer(index_app, name="index")


def main() -> None:
    """Entry point: run the app, turning sieveqa's own errors into one clear line and exit code 2."""
    try:
        app()
    except SieveQAError as err:
        typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
        raise SystemExit(2) from err


if __name__ == "__main__":
    main()
