"""``sieveqa index``: build, extend and inspect answer stores (HAS)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sieveqa.cli._app import DeviceOpt, app

if TYPE_CHECKING:
    from sieveqa.runtime.answer_store import AnswerStore

index_app = typer.Typer(
    help="Answer stores: answers encoded once by a HAS (or BERT-attention/-pooling) model.",
    no_args_is_help=True,
)
app.add_typer(index_app, name="index")

AnswersOpt = Annotated[
    str,
    typer.Option(
        "--answers",
        "-a",
        help="JSONL of {id, text} answers, or a dataset name whose candidates become the answers",
    ),
]
BatchOpt = Annotated[int, typer.Option(help="answers per forward pass")]


@index_app.command("build")
def build(
    model: Annotated[str, typer.Option("--model", "-m", help="the HAS model folder that encodes answers")],
    answers: AnswersOpt,
    out: Annotated[Path, typer.Option("--out", "-o", help="store folder to create")],
    batch_size: BatchOpt = 128,
    device: DeviceOpt = "auto",
) -> None:
    """Encode an answer collection once and store it (bits for HAS, floats for the baselines).

    All or nothing: a build that is killed leaves no store, and the same command starts it over.
    """
    from sieveqa.data.answers import load_answers
    from sieveqa.io import check_output_dir
    from sieveqa.runtime.answer_store import AnswerStore
    from sieveqa.runtime.store_ranker import store_model

    check_output_dir(out, "--out")
    collection = load_answers(answers)
    hashing = store_model(model).configure(device=device, batch_size=batch_size)
    _print_info(AnswerStore.build(hashing, collection, out, progress=True, model_ref=model))


@index_app.command("add")
def add(
    store_path: Annotated[Path, typer.Option("--store", "-s", help="an existing store folder")],
    answers: AnswersOpt,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="default: the model recorded in the store")
    ] = None,
    batch_size: BatchOpt = 128,
    device: DeviceOpt = "auto",
) -> None:
    """Append answers as a new segment (the stored ones are not rewritten)."""
    from sieveqa.data.answers import load_answers
    from sieveqa.runtime.answer_store import AnswerStore
    from sieveqa.runtime.store_ranker import store_model

    store = AnswerStore.open(store_path)
    collection = load_answers(answers)
    hashing = store_model(model or store.model_ref).configure(device=device, batch_size=batch_size)
    _print_info(store.append(hashing, collection, progress=True))


@index_app.command("info")
def info(
    store_path: Annotated[Path, typer.Argument(help="a store folder")],
    verify: Annotated[bool, typer.Option(help="check every file's sha256")] = True,
) -> None:
    """Show what a store holds and what it takes on disk and in memory."""
    from sieveqa.runtime.answer_store import AnswerStore

    _print_info(AnswerStore.open(store_path, verify=verify))


def _print_info(store: AnswerStore) -> None:
    sig = store.manifest["model"]
    typer.echo(
        f"{store.path}: {len(store)} answers in {len(store.segments)} segment(s), kind {store.kind}, "
        f"width {sig['dim']}; model {store.manifest.get('model_ref')} (backbone {sig['backbone']}, "
        f"composition {sig['composition']}, hashing {sig['hashing']}, beta {sig['beta']})"
    )
    typer.echo(
        f"representations: {store.disk_bytes() / 2**20:.2f} MiB on disk, "
        f"{store.ram_bytes() / 2**20:.2f} MiB in RAM"
    )
