"""``sieveqa index``: build, extend and inspect answer stores; rank questions against one (HAS)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sieveqa.data.jsonl import iter_json_lines
from sieveqa.errors import DataFormatError, StoreError

if TYPE_CHECKING:
    from sieveqa.models.hashing import HashingModel

index_app = typer.Typer(
    help="Answer stores: answers encoded once by a HAS (or BERT-attention/-pooling) model.",
    no_args_is_help=True,
)

AnswersOpt = Annotated[
    str,
    typer.Option(
        "--answers",
        "-a",
        help="JSONL of {id, text} answers, or a dataset name whose candidates become the answers",
    ),
]


def load_answers(source: str) -> list[tuple[str, str]]:
    """``(id, text)`` answers from a JSONL file of ``{"id", "text"}`` objects, or every distinct
    candidate (by id) of a dataset such as ``wikiqa:test``."""
    from sieveqa.data.registry import LOADERS, load_dataset

    if source.partition(":")[0] not in LOADERS:
        if not Path(source).is_file():
            raise DataFormatError(f"{source}: no such file (nor a dataset name such as wikiqa:test)")
        answers = []
        for where, obj in iter_json_lines(source):
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                raise DataFormatError(f"{where}: expected an object with a string 'text'")
            answer_id = obj.get("id")
            if not isinstance(answer_id, str | int) or isinstance(answer_id, bool) or answer_id == "":
                raise DataFormatError(f"{where}: field 'id' must be a non-empty string, got {answer_id!r}")
            answers.append((str(answer_id), obj["text"]))
        return answers
    seen: dict[str, str] = {}
    for ex in load_dataset(source):
        for cand in ex.candidates:
            seen.setdefault(cand.id, cand.text)
    return list(seen.items())


def _hashing_model(name: str) -> HashingModel:
    from sieveqa.models.hashing import HashingModel
    from sieveqa.models.zoo import load_model

    model = load_model(name)
    if not isinstance(model, HashingModel):
        raise typer.BadParameter(
            f"{name} is a {model.kind} model; answer stores need a HAS, bert-attention or bert-pooling "
            "model (sieveqa train --arch has)",
            param_hint="--model",
        )
    return model


@index_app.command("build")
def build(
    model: Annotated[str, typer.Option("--model", "-m", help="the HAS model folder that encodes answers")],
    answers: AnswersOpt,
    out: Annotated[Path, typer.Option("--out", "-o", help="store folder to create")],
    batch_size: Annotated[int, typer.Option(help="answers per forward pass")] = 128,
) -> None:
    """Encode an answer collection once and store it (bits for HAS, floats for the baselines)."""
    from sieveqa.runtime.answer_store import AnswerStore

    hashing = _hashing_model(model)
    hashing.batch_size = batch_size
    store = AnswerStore.build(hashing, load_answers(answers), out, progress=True, model_ref=model)
    _print_info(store)


@index_app.command("add")
def add(
    store_path: Annotated[Path, typer.Option("--store", "-s", help="an existing store folder")],
    answers: AnswersOpt,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="default: the model recorded in the store")
    ] = None,
    batch_size: Annotated[int, typer.Option(help="answers per forward pass")] = 128,
) -> None:
    """Append answers as a new segment (the stored ones are not rewritten)."""
    from sieveqa.runtime.answer_store import AnswerStore

    store = AnswerStore.open(store_path)
    hashing = _hashing_model(model or store.model_ref)
    hashing.batch_size = batch_size
    _print_info(store.append(hashing, load_answers(answers), progress=True))


@index_app.command("info")
def info(
    store_path: Annotated[Path, typer.Argument(help="a store folder")],
    verify: Annotated[bool, typer.Option(help="check every file's sha256")] = True,
) -> None:
    """Show what a store holds and what it takes on disk and in memory."""
    from sieveqa.runtime.answer_store import AnswerStore

    _print_info(AnswerStore.open(store_path, verify=verify))


def _print_info(store: Any) -> None:
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


def read_store_queries(path: Path) -> list[dict[str, Any]]:
    """Questions for ``rank --store``: JSONL of ``{"question", "qid"?, "candidates"?}`` where the
    candidates are stored answer ids (or objects with an ``id``); none means the whole store."""
    queries = []
    for where, obj in iter_json_lines(path):
        if not isinstance(obj, dict) or not isinstance(obj.get("question"), str):
            raise DataFormatError(f"{where}: expected an object with a string 'question'")
        raw = obj.get("candidates")
        if raw is not None and not isinstance(raw, list):
            raise DataFormatError(f"{where}: 'candidates' must be a list of answer ids")
        ids = None if raw is None else [str(c["id"] if isinstance(c, dict) else c) for c in raw]
        qid = obj.get("qid", where.rsplit(":", 1)[-1])
        queries.append({"qid": str(qid), "question": obj["question"], "ids": ids})
    return queries


def rank_with_store(
    input_path: Path, store_path: Path, model: str | None, top: int, output: Path | None
) -> None:
    """``sieveqa rank --store``: score each question against its candidate ids (or the whole store)."""
    from rich.console import Console

    from sieveqa.io import atomic_open
    from sieveqa.runtime.answer_store import AnswerStore, StoreRanker

    queries = read_store_queries(input_path)
    store = AnswerStore.open(store_path)
    ranker = StoreRanker(_hashing_model(model or store.model_ref), store)
    console = Console()
    results = []
    for query in queries:
        if query["ids"] is None:
            ranked = ranker.search(query["question"], top=max(top, 1))
        else:
            scores = ranker.score_ids(query["question"], query["ids"]).tolist()
            ranked = sorted(zip(query["ids"], scores, strict=True), key=lambda x: -x[1])
        console.print(f"[bold]{query['question']}[/bold]  [dim]({query['qid']})[/dim]")
        for rank, (answer_id, score) in enumerate(ranked[:top], start=1):
            console.print(
                f"  {rank}. [green]{score:+.3f}[/green]  {store.text(answer_id)}  [dim]{answer_id}[/dim]"
            )
        results.append(
            {
                "qid": query["qid"],
                "question": query["question"],
                "ranked": [{"id": i, "score": s, "rank": r} for r, (i, s) in enumerate(ranked, start=1)],
            }
        )
    if output:
        with atomic_open(output, "w", encoding="utf-8") as handle:
            for row in results:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        console.print(f"wrote {len(results)} ranked questions to {output}")


__all__ = ["StoreError", "index_app", "load_answers", "rank_with_store"]
