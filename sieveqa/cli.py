"""The ``sieveqa`` command line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sieveqa.errors import SieveQAError

if TYPE_CHECKING:
    from sieveqa.models.cross_encoder import CrossEncoder

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
    max_length: Annotated[int, typer.Option(help="tokens per (question, candidate) pair")] = 128,
    seed: Annotated[int, typer.Option(help="random seed")] = 42,
    config: Annotated[
        Path | None, typer.Option(help="JSON file of training settings (flags override)")
    ] = None,
    resume: Annotated[
        bool, typer.Option(help="continue from OUT/checkpoint if a run was interrupted")
    ] = True,
) -> None:
    """Train a cross-encoder ranker.

    For TANDA run it twice: transfer on a large set, then adapt on the target (--init OUT/best).
    """
    from sieveqa.models.cross_encoder import CrossEncoderConfig
    from sieveqa.training.config import TrainConfig
    from sieveqa.training.recipes import train_cross_encoder

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
    state = train_cross_encoder(
        train_sets,
        out,
        init=init,
        dev=dev or None,
        config=cfg,
        model_config=CrossEncoderConfig(max_length=max_length),
        resume=resume,
    )
    typer.echo(f"best {cfg.metric}={state.best_metric:.4f} at step {state.best_step}; model: {out / 'best'}")


PrecisionOpt = Annotated[
    str, typer.Option(help="fp32, bf16 (CPU autocast) or int8 (dynamic quantization); see docs/RESULTS.md")
]
BatchOpt = Annotated[int, typer.Option(help="pairs per forward pass at inference")]


def _load_ranker(model: str, precision: str, batch_size: int) -> CrossEncoder:
    from sieveqa.models.cross_encoder import CrossEncoder
    from sieveqa.models.precision import PRECISIONS

    if precision not in PRECISIONS:
        raise typer.BadParameter(f"must be one of {', '.join(PRECISIONS)}", param_hint="--precision")
    ranker = CrossEncoder.from_pretrained(model)
    ranker.precision = precision
    ranker.batch_size = batch_size
    return ranker


@app.command("eval")
def evaluate(
    dataset: DatasetOpt = "wikiqa:test",
    model: ModelOpt = "default",
    json_out: Annotated[Path | None, typer.Option("--json", help="write the metrics as JSON here")] = None,
    precision: PrecisionOpt = "fp32",
    batch_size: BatchOpt = 64,
    per_question: Annotated[bool, typer.Option(help="include per-question metrics in the JSON")] = False,
) -> None:
    """Score every candidate of a labelled dataset and report MAP, MRR, P@1, nDCG@10 and throughput."""
    from rich.console import Console
    from rich.table import Table

    from sieveqa.data.registry import load_dataset
    from sieveqa.evaluation.metrics import evaluate_scores
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.io import atomic_write_json

    examples = load_dataset(dataset)
    ranker = _load_ranker(model, precision, batch_size)
    report = evaluate_scores(examples, ranker.score(examples, progress=True))
    stats = ranker.last_stats
    result = {
        "model": model,
        "dataset": dataset,
        "precision": precision,
        **report.as_dict(),
        "n_questions": report.n_questions,
        "n_pairs": stats.pairs,
        "seconds": round(stats.seconds, 3),
        "pairs_per_second": round(stats.pairs_per_second, 2),
        "layer_units": stats.layer_units,
        "flops": stats.flops,
    }
    result["run"] = run_info("sieveqa " + " ".join(sys.argv[1:]))
    if per_question:
        result["per_question"] = report.per_question
    table = Table(title=f"{model} on {dataset} ({report.n_questions} questions)")
    for key in ("map", "mrr", "p@1", "ndcg@10", "pairs_per_second", "layer_units"):
        table.add_column(key)
    table.add_row(
        *(str(result[k]) for k in ("map", "mrr", "p@1", "ndcg@10", "pairs_per_second", "layer_units"))
    )
    Console().print(table)
    if json_out:
        atomic_write_json(json_out, result)


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
) -> None:
    """Rank the candidates of each question in a JSONL file; print the top answers with scores."""
    from rich.console import Console

    from sieveqa.data.jsonl import example_dict, read_jsonl, write_jsonl

    examples = read_jsonl(input_path)
    ranker = _load_ranker(model, precision, batch_size)
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


def main() -> None:
    """Entry point: run the app, turning sieveqa's own errors into one clear line and exit code 2."""
    try:
        app()
    except SieveQAError as err:
        typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
        raise SystemExit(2) from err


if __name__ == "__main__":
    main()
