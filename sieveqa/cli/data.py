"""``sieveqa data build`` and ``sieveqa backbones``."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from sieveqa.cli._app import app, console
from sieveqa.errors import ConfigError

data_app = typer.Typer(help="Build derived benchmarks.", no_args_is_help=True)
app.add_typer(data_app, name="data")


@data_app.command("build")
def data_build(
    name: Annotated[str, typer.Argument(help="the benchmark to build: squad-as2, squad2-open, ...")],
    force: Annotated[bool, typer.Option(help="rebuild even if an identical build is cached")] = False,
    top_k: Annotated[
        int | None,
        typer.Option(
            help="BM25 paragraphs retrieved per (training) question (default: 25; 5 for squad-train-as2)"
        ),
    ] = None,
) -> None:
    """Build a derived benchmark from the raw data (cached; rebuilding gives identical files)."""
    from sieveqa.data.builders import BUILDERS

    if name not in BUILDERS:
        raise ConfigError(f"unknown benchmark {name!r}; known: {', '.join(BUILDERS)}")
    manifest = BUILDERS[name](top_k, force)
    for fname, info in manifest["files"].items():
        if "passages" in info:  # open-domain QA: passages per question, how many hold an answer
            per = info["passages"] / max(info["questions"], 1)
            what = f"{per:.1f} passages/question, {info['with_answer']} with an answer"
        elif "mean_candidates" in info:
            what = f"{info['mean_candidates']:.1f} candidates/question, {info['positives']} positives"
        else:  # a source file (squad-unanswerable's SQuAD 2.0 JSON)
            what = "in SQuAD 2.0's JSON layout"
        typer.echo(f"{fname}: {info['questions']} questions, {what}")


@app.command()
def backbones(
    verify: Annotated[bool, typer.Option(help="load and check every installed backbone's weights")] = True,
) -> None:
    """List the offline backbones and whether each is installed (and verified)."""
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
    console.print(table)
    typer.echo("Any local Hugging Face folder also works wherever a backbone name is accepted.")
