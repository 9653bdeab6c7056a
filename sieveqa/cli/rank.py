"""``sieveqa rank``: rank the candidates of questions in a JSONL file, or against an answer store."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sieveqa.cli._app import (
    AlphaOpt,
    BackendOpt,
    BatchOpt,
    DeviceOpt,
    PolicyOpt,
    PrecisionOpt,
    WarmUpOpt,
    app,
    check_device,
    console,
    float_list,
    warm_up_ranker,
)
from sieveqa.cli._options import Setting, given_settings, merge, settings_command, settings_of
from sieveqa.errors import ConfigError, DataFormatError, shorten

if TYPE_CHECKING:
    from sieveqa.runtime.store.ranker import SearchSettings

#: Characters of a question or answer shown on screen (files always get the whole text).
SHOWN = 300


@functools.cache
def search_settings() -> dict[str, Setting]:
    """The store search's settings (``SearchSettings``' fields) as ``rank`` flags."""
    from sieveqa.runtime.store.ranker import SearchSettings

    return merge(settings_of(SearchSettings, "rank", panel="Store search (with --store, no candidates)"))


@app.command(cls=settings_command(search_settings))
def rank(
    ctx: typer.Context,
    input_path: Annotated[Path, typer.Option("--input", "-i", help="JSONL of questions with candidates")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="ranked JSONL (adds score and rank)")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="a saved model folder or a shipped one (default: default; with --store: the store's)",
        ),
    ] = None,
    top: Annotated[
        int,
        typer.Option(
            min=1,
            help="answers printed per question; with --store and no candidates, also the answers kept "
            "and written to --output: metrics such as recall@10 or MAP computed from that file need "
            "--top at least their depth (10 for recall@10)",
        ),
    ] = 3,
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = "auto",
    backend: BackendOpt = "torch",
    batch_size: BatchOpt = None,
    alpha: AlphaOpt = None,
    policy: PolicyOpt = None,
    warm_up: WarmUpOpt = False,
    store: Annotated[
        Path | None,
        typer.Option(help="answer store (sieveqa index build): candidates are answer ids, or none for all"),
    ] = None,
) -> None:
    """Rank the candidates of each question in a JSONL file; print the top answers with scores.

    A cascade prunes with the policy saved with it (tune-cascade), unless --alpha or --policy is given.
    With --store the questions are scored against stored answers by the model that built the store.
    """
    from sieveqa.data.jsonl import example_dict, read_jsonl, write_jsonl
    from sieveqa.io import check_output_file
    from sieveqa.runtime.policy import load_ranker

    check_device(device, precision, backend)
    if output is not None:
        check_output_file(output, "--output")
    searching = given_settings(ctx)  # SearchSettings' fields, declared (with their help) there only
    if searching and store is None:
        flags = ", ".join(s.flag for name, s in search_settings().items() if name in searching)
        raise ConfigError(f"{flags}: for searching an answer store; add --store")
    if store is not None:
        if alpha or policy:
            raise ConfigError(
                "--alpha and --policy are for cascades; an answer store ranks with its HAS model"
            )
        from sieveqa.runtime.store.ranker import SearchSettings

        settings = SearchSettings(**searching)
        return _rank_with_store(
            input_path, store, model, top, output, device, precision, batch_size, settings, backend
        )
    examples = read_jsonl(input_path)
    if not examples:
        raise DataFormatError(f"{input_path}: no questions")
    ranker = load_ranker(
        model or "default",
        device=device,
        precision=precision,
        batch_size=batch_size,
        policy=policy,
        backend=backend,
        drop_ratios=float_list(alpha, "--alpha"),
    )
    if warm_up:
        warm_up_ranker(ranker)
    # A bar only where scoring takes long enough to watch (a few seconds on this CPU).
    ranked = ranker.rank_examples(examples, progress=sum(len(e.candidates) for e in examples) > 500)
    for ex, answers in zip(examples, ranked, strict=True):
        console.print(f"[bold]{shorten(ex.question.text, SHOWN)}[/bold]  [dim]({ex.qid})[/dim]", markup=True)
        for s in answers[:top]:
            console.print(f"  {s.rank}. [green]{s.score:+.3f}[/green]  {shorten(s.candidate.text, SHOWN)}")
    if output is not None:
        write_jsonl(output, (example_dict(ex, r) for ex, r in zip(examples, ranked, strict=True)))
        console.print(f"wrote {len(examples)} ranked questions to {output}")


def _rank_with_store(
    input_path: Path,
    store_path: Path,
    model: str | None,
    top: int,
    output: Path | None,
    device: str,
    precision: str,
    batch_size: int | None,
    settings: SearchSettings,
    backend: str,
) -> None:
    from sieveqa.data.answers import read_store_queries
    from sieveqa.data.jsonl import write_jsonl
    from sieveqa.runtime.store.ranker import StoreRanker

    queries = read_store_queries(input_path)
    ranker = StoreRanker.open(
        store_path,
        model,
        settings,
        device=device,
        precision=precision,
        batch_size=batch_size,
        backend=backend,
    )
    results = ranker.rank_queries(queries, top)
    for result in results:
        console.print(
            f"[bold]{shorten(result.query.question, SHOWN)}[/bold]  [dim]({result.query.qid})[/dim]"
        )
        for rank_, hit in enumerate(result.ranked[:top], start=1):
            text = shorten(hit.text, SHOWN)
            console.print(f"  {rank_}. [green]{hit.score:+.3f}[/green]  {text}  [dim]{hit.id}[/dim]")
    if output is not None:
        write_jsonl(output, (r.as_dict() for r in results))
        console.print(f"wrote {len(results)} ranked questions to {output}")
