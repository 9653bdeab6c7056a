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
    FusionOpt,
    LongTextsOpt,
    PolicyOpt,
    PrecisionOpt,
    WarmUpOpt,
    app,
    check_device,
    console,
    float_list,
    warm_up_ranker,
)
from sieveqa.cli._options import Setting, given_settings, merge, settings_command, settings_of, was_given
from sieveqa.errors import ConfigError, DataFormatError, shorten

if TYPE_CHECKING:
    from sieveqa.models.base import RankResult
    from sieveqa.runtime.store.settings import SearchSettings

#: Characters of a question or answer shown on screen (files always get the whole text).
SHOWN = 300

#: What ``--input`` reads, said whenever it is given something else.
INPUT_IS = (
    "--input reads a JSONL file of questions, each with its candidates "
    "(docs/guides/rerank.md#the-jsonl-format)"
)

#: ``--scores``: each scale, and the line printed above the answers in it.
SCALES = {
    "logit": "scores: logits, the model's raw scores (higher is better; --scores prob for probabilities)",
    "prob": "scores: probabilities, the sigmoid of the model's logits (--scores logit for the logits)",
}
CASCADE_LINE = (
    "a cascade ranks the answers that reached a later exit first, each scored by the last exit it reached"
)
#: Fewer candidates a question than this, and a cascade's saved drop ratios (tuned on ~140) drop too many.
SHORT_LIST = 20
SHORT_LIST_WARNING = (
    "warning: the cascade's drop ratios were tuned on lists of about 140 candidates; these questions "
    "have {mean:.0f} on average, where it drops answers a full read keeps (WikiQA test, 10 a question: "
    "MAP 0.74 against 0.84): give --alpha 0, or rank short lists with the default model"
)
#: The scale of scores fused with the first stage's (``--fusion``), whatever ``--scores`` asked.
FUSED_LINE = "scores: the model's fused with the first stage's retrieval_score ({fusion}; higher is better)"
#: The scale of a model whose scores are not logits (HAS: similarities of hashed answers to the question).
SIMILARITY_LINE = (
    "scores: similarities, the model's own scale (it gives no logits to turn into probabilities)"
)


@functools.cache
def search_settings() -> dict[str, Setting]:
    """The store search's settings (``SearchSettings``' fields) as ``rank`` flags."""
    from sieveqa.runtime.store.settings import SearchSettings

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
    long_texts: LongTextsOpt = "windows",
    store: Annotated[
        Path | None,
        typer.Option(help="answer store (sieveqa index build): candidates are answer ids, or none for all"),
    ] = None,
    scores: Annotated[
        str,
        typer.Option(
            "--scores",
            help="the scale of the scores printed and written (--output: each question's score_scale): "
            "logit, the model's raw score, or prob, its sigmoid (what Python's predict and the service "
            "give); a cascade's are those of the last exit each answer reached. Answer stores score by "
            "similarity, neither",
        ),
    ] = "logit",
    fusion: FusionOpt = None,
) -> None:
    """Rank the candidates of each question in a JSONL file; print the top answers with scores.

    A cascade prunes with the policy saved with it (tune-cascade), unless --alpha or --policy is given.
    With --store the questions are scored against stored answers by the model that built the store.
    For a folder of documents, index it (sieveqa index corpus) and ask it (sieveqa answer).
    """
    from sieveqa.data.jsonl import example_dict, read_jsonl, write_jsonl
    from sieveqa.io import check_output_file
    from sieveqa.runtime.answer.fusion import Fusion, carries_scores, with_fusion
    from sieveqa.runtime.policy import check_long_texts, load_ranker, read_long_texts

    Fusion.parse(fusion)  # a bad --fusion fails before anything loads
    check_long_texts(long_texts)
    if scores not in SCALES:
        raise ConfigError(f"--scores must be one of {', '.join(SCALES)}, got {scores!r}")
    check_device(device, precision, backend)  # the settings first: they are checked without a file
    _check_input(input_path, store is not None)
    if output is not None:
        check_output_file(output, "--output", {"--input": input_path})
    searching = given_settings(ctx)  # SearchSettings' fields, declared (with their help) there only
    if searching and store is None:
        flags = ", ".join(s.flag for name, s in search_settings().items() if name in searching)
        raise ConfigError(f"{flags}: for searching an answer store; add --store")
    if store is not None:
        if alpha or policy:
            raise ConfigError(
                "--alpha and --policy are for cascades; an answer store ranks with its HAS model"
            )
        if was_given(ctx, "scores"):
            raise ConfigError(
                "--scores: an answer store's model scores by similarity, not logits or probabilities"
            )
        if was_given(ctx, "long_texts"):
            raise ConfigError("--long-texts: an answer store's model read its answers when it was built")
        from sieveqa.runtime.store.settings import SearchSettings

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
    read_long_texts(ranker, long_texts)
    if warm_up:
        warm_up_ranker(ranker)
    fused = Fusion.parse(fusion if fusion is not None else "auto")
    if any(fused.applies(carries_scores(ex)) for ex in examples):
        ranker = with_fusion(ranker, fused)
    # A bar only where scoring takes long enough to watch (a few seconds on this CPU).
    result = ranker.run(examples, progress=sum(len(e.candidates) for e in examples) > 500)
    from sieveqa.models.base import FUSED, on_scale

    scale, ranked = on_scale(examples, result, scores)
    line = FUSED_LINE.format(fusion=getattr(result, "fusion", "")) if scale == FUSED else SCALES.get(scale)
    console.print(f"[dim]{line or SIMILARITY_LINE}[/dim]")
    if _cascade(result):
        console.print(f"[dim]{CASCADE_LINE}[/dim]")
        mean = sum(len(ex.candidates) for ex in examples) / max(len(examples), 1)
        if mean < SHORT_LIST and alpha is None and policy is None:
            typer.echo(SHORT_LIST_WARNING.format(mean=mean), err=True)
    shown = "{:.3f}" if scale == "prob" else "{:+.3f}"
    for ex, answers in zip(examples, ranked, strict=True):
        console.print(f"[bold]{shorten(ex.question.text, SHOWN)}[/bold]  [dim]({ex.qid})[/dim]", markup=True)
        for s in answers[:top]:
            text = shorten(s.candidate.text, SHOWN)
            console.print(f"  {s.rank}. [green]{shown.format(s.score)}[/green]  {text}")
    if output is not None:
        rows = ({**example_dict(ex, r), "score_scale": scale} for ex, r in zip(examples, ranked, strict=True))
        write_jsonl(output, rows)
        console.print(f"wrote {len(examples)} ranked questions to {output}")


def _check_input(path: Path, store: bool) -> None:
    """Refuse, before any model loads, an --input that is a folder or missing, saying what it reads
    (with --store it may also be a dataset name)."""
    if path.is_dir():
        raise ConfigError(
            f"--input {path}: is a folder; {INPUT_IS}. To ask questions over a folder of documents, "
            f"index it (sieveqa index corpus --input {path} --out index) and ask "
            "(sieveqa answer QUESTION --index index)"
        )
    if not store and not path.exists():
        raise DataFormatError(f"--input {path}: no such file; {INPUT_IS}")


def _cascade(result: RankResult) -> bool:
    """Whether ``result`` is a cascade's: its ``scores`` only sort (the exit reached plus a
    probability), its own scores are the logits of the last exit each candidate reached."""
    from sieveqa.runtime.cascade import CascadeResult

    return isinstance(result, CascadeResult)


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
    console.print(f"[dim]{SIMILARITY_LINE}[/dim]")
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
