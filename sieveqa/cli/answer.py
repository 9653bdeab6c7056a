"""``sieveqa answer`` (questions over a corpus index) and ``sieveqa eval-answers`` (a method on a
labelled passage benchmark)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sieveqa import registry
from sieveqa.cli._app import BackendOpt, BatchOpt, DeviceOpt, PrecisionOpt, app, check_device, console
from sieveqa.cli._options import Setting, given_settings, merge, settings_command, settings_of, was_given
from sieveqa.cli._shown import answer_dict, fewer, show, show_profile
from sieveqa.errors import ConfigError

if TYPE_CHECKING:
    pass


def _probability(value: float | None) -> float | None:
    """A probability, NaN named as not a number (a range check called it a bound broken)."""
    if value is not None and not 0.0 <= value <= 1.0:
        why = "nan is not a number" if math.isnan(value) else f"{value:g} is not in [0, 1]"
        raise typer.BadParameter(f"{why}; give a probability in [0, 1]")
    return value


MinConfidenceOpt = Annotated[
    float | None,
    typer.Option(
        callback=_probability,
        help="below this calibrated confidence say 'no answer found' and show the best guess as such "
        "(default: the calibration's, chosen on dev; 0: always answer)",
    ),
]
ConfidenceOpt = Annotated[
    str | None,
    typer.Option(help="a confidence file (sieveqa calibrate-confidence; default: the shipped one)"),
]
MethodOpt = Annotated[
    str,
    typer.Option(
        help="; ".join(f"{spec.name}: {spec.summary}" for spec in registry.answer_methods())
        + " (the method options below say which methods take them)"
    ),
]


BudgetMsOpt = Annotated[
    float | None,
    typer.Option(
        min=1.0,
        help="answer within about N ms at p50: chooses --retrieve, --backend, --precision, the drop "
        "ratios and whether the judge and a second look run, from settings measured on dev on this kind "
        "of CPU (the best dev P@1 within N; one keeping the calibrated confidence first)",
    ),
]


def budget_line(choice: Any) -> str:
    s = choice.setting
    ratios = "" if s.drop_ratios is None else ", drop ratios " + ",".join(f"{r:g}" for r in s.drop_ratios)
    models = "".join(f", {k} {v}" for k, v in s.options)
    line = (
        f"--budget-ms {choice.budget_ms:g}: {s.retrieve} passages, {s.system}{ratios}{models} "
        f"(dev: P@1 {100 * s.p_at_1:.1f}, p50 {s.p50_ms:.0f} ms)"
    )
    return line + (f"; {choice.note}" if choice.note else "")


@functools.cache
def method_settings() -> dict[str, Setting]:
    """Every registered method's options as flags, each saying which methods take it (the options
    dataclasses are the one place they are declared)."""
    merged = merge(
        s
        for spec in registry.answer_methods()
        for s in settings_of(spec.options_class(), spec.name, panel="Method options")
    )
    order = [spec.name for spec in registry.answer_methods()]
    defaults = {
        spec.name: {f.name: f.default for f in dataclasses.fields(spec.options_class())}
        for spec in registry.answer_methods()
    }
    out = {}
    for name, s in merged.items():
        owners = sorted(s.owners, key=order.index)
        text = f"{', '.join(owners)}: {s.help}"
        if len({defaults[o][name] for o in owners}) > 1:  # each method's default where they differ
            text += " (default: " + ", ".join(f"{o} {defaults[o][name]}" for o in owners) + ")"
        out[name] = dataclasses.replace(s, help=text)
    return out


def _read_questions(path: Path) -> list[tuple[str, str]]:
    """``(id, question)`` of a question file (``sieveqa.data.questions``: JSONL, text, CSV or TSV)."""
    from sieveqa.data.questions import read_questions

    return [(asked.id, asked.question) for asked in read_questions(path)]


@app.command("answer", cls=settings_command(method_settings))
def answer(
    ctx: typer.Context,
    question: Annotated[str | None, typer.Argument(help="the question (or give --questions)")] = None,
    index: Annotated[
        Path, typer.Option("--index", "-i", help="a corpus index (sieveqa index corpus)")
    ] = Path("index"),
    method: MethodOpt = "peasi",
    top: Annotated[int, typer.Option(min=1, help="answers to show (peasi: from the N best passages)")] = 1,
    confidences: Annotated[
        str,
        typer.Option(
            help="which answers show a calibrated confidence: best (what abstention reads; one judge "
            "pass a question) or all (one judge pass per answer passage)"
        ),
    ] = "best",
    retrieve: Annotated[int, typer.Option(min=1, help="passages retrieved per question")] = 20,
    retriever: Annotated[
        str, typer.Option(help="bm25, dense or hybrid (the last two need a dense index)")
    ] = "bm25",
    questions: Annotated[
        Path | None,
        typer.Option(
            help="answer every question of a file: JSONL ({id?, question}), .txt (one a line), or "
            ".csv/.tsv with a 'question' column"
        ),
    ] = None,
    output: Annotated[
        Path | None, typer.Option(help="--questions: write one JSON answer per line here")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print JSON instead of text (--questions always gives JSON lines)")
    ] = False,
    profile: Annotated[
        bool,
        typer.Option(
            "--profile",
            help="say where each question's time went: retrieval, passage rerank, sentence selection, "
            "second look, judge, and inside each tokenizing, collating and the model (ms, GFLOPs)",
        ),
    ] = False,
    min_confidence: MinConfidenceOpt = None,
    confidence: ConfidenceOpt = None,
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = "auto",
    backend: BackendOpt = "torch",
    batch_size: BatchOpt = None,
    budget_ms: BudgetMsOpt = None,
) -> None:
    """Answer a question over your documents: retrieve passages, rerank them, pick the sentence
    (or, with a reader method, extract the answer span).

    Prints the answer highlighted in its passage, the document, the scores, how many transformer
    inferences it took and how long.
    """
    from sieveqa.io import atomic_open, check_output_file
    from sieveqa.profiling import Profile, profiled
    from sieveqa.runtime.answer.answerer import load_answerer
    from sieveqa.runtime.answer.questions import MAX_QUESTION_CHARS

    if (question is None) == (questions is None):
        raise ConfigError("give one question, or --questions FILE")
    if output is not None:
        if questions is None:
            raise ConfigError("--output goes with --questions")
        check_output_file(output, "--output", {"--questions": questions})
    check_device(device, precision, backend)
    asked = _read_questions(questions) if questions is not None else [(None, question.strip())]
    if any(not q for _, q in asked):
        raise ConfigError("the question is empty")
    for qid, q in asked:
        if len(q) > MAX_QUESTION_CHARS:  # before any model loads
            which = "the question" if qid is None else f"{questions}: question {qid}"
            raise ConfigError(f"{which}: {len(q)} characters, more than {MAX_QUESTION_CHARS}")
        try:
            q.encode("utf-8")
        except UnicodeEncodeError as err:  # a non-UTF-8 byte on the command line, kept as a surrogate
            raise ConfigError(f"the question is not UTF-8 text (at character {err.start + 1})") from None
    levers: dict[str, Any] = {"retrieve": retrieve, "backend": backend, "precision": precision}
    if budget_ms is not None:  # the budget chooses the levers not typed, among settings with those typed
        levers = {n: v for n, v in levers.items() if was_given(ctx, n)}
    answerer = load_answerer(
        method, str(index), retriever=retriever, top=top, device=device, batch_size=batch_size,
        confidence=confidence, min_confidence=min_confidence, budget_ms=budget_ms,
        confidences=confidences, **levers, **given_settings(ctx),
    )  # fmt: skip
    if answerer.budget is not None and not as_json:  # stderr: --questions writes JSON lines to stdout
        typer.echo(budget_line(answerer.budget), err=True)
    spent = Profile() if profile else None
    timing = functools.partial(profiled, spent) if spent is not None else contextlib.nullcontext
    if questions is None:
        with timing():
            result = answerer.answer(asked[0][1])
        if as_json:
            row = answer_dict(None, result, method)
            if answerer.budget is not None:
                row["budget"] = answerer.budget.as_dict()
            if spent is not None:
                row["profile"] = spent.as_dict()
            typer.echo(json.dumps(row, ensure_ascii=False, indent=2))
        else:
            show(result, method, answerer.min_confidence)
            if 0 < len(result.answers) < top:
                typer.echo(fewer(result, top, answerer), err=True)
            if spent is not None:
                show_profile(spent)
        return
    from tqdm.auto import tqdm

    rows = []
    for qid, text in tqdm(asked, desc=f"answering ({method})", unit="q"):
        with timing():
            row = answer_dict(qid, answerer.answer(text), method)
        if answerer.budget is not None:
            row["budget"] = answerer.budget.as_dict()
        if output is None:  # each as it comes: a reader that has enough (| head) stops the rest
            typer.echo(json.dumps(row, ensure_ascii=False))
            sys.stdout.flush()
        rows.append(row)
    if spent is not None:  # on stderr: the answers may be JSON lines on stdout
        show_profile(spent)
    if output is None:
        return
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    with atomic_open(output, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    typer.echo(f"wrote {len(rows)} answers to {output}", err=True)


@app.command("eval-answers", cls=settings_command(method_settings))
def eval_answers(
    ctx: typer.Context,
    dataset: Annotated[
        str,
        typer.Option(
            "--dataset",
            "-d",
            help="a passage benchmark with sentences (squad-passages:test-sentences, ...), or open-domain "
            "questions some of which nothing answers (squad2-open:dev)",
        ),
    ] = "squad-passages:test-sentences",
    method: MethodOpt = "peasi",
    top: Annotated[
        int, typer.Option(min=1, help="answers per question (peasi: from the N best passages)")
    ] = 1,
    limit: Annotated[int | None, typer.Option(min=1, help="only the first N questions")] = None,
    passages: Annotated[int, typer.Option(min=1, help="open-domain questions: passages read")] = 20,
    min_confidence: MinConfidenceOpt = None,
    confidence: ConfidenceOpt = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="write the report as JSON here")] = None,
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = "auto",
    backend: BackendOpt = "torch",
    batch_size: BatchOpt = None,
) -> None:
    """Answer a labelled benchmark's questions over their retrieved passages and report answer
    P@1 (MAP/MRR where the method ranks sentences), passage P@1/MAP/MRR and inferences and latency;
    on open-domain questions some of which nothing answers (squad2-open:dev), what was answered and
    how well, what abstained, SQuAD 2.0's overall score and the AUROC of the confidence."""
    from sieveqa.data.registry import is_open_dataset, load_dataset
    from sieveqa.evaluation.answers import evaluate_answers
    from sieveqa.evaluation.metrics import qrels_from_examples
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.io import atomic_write_json, check_output_file
    from sieveqa.runtime.answer.answerer import load_answerer

    check_device(device, precision, backend)
    if json_out is not None:
        check_output_file(json_out, "--json")
    is_open = is_open_dataset(dataset)
    if not is_open and not dataset.endswith("-sentences"):
        raise ConfigError(f"--dataset {dataset}: answers are sentences; use its -sentences form")
    if not is_open and (min_confidence is not None or confidence is not None):
        raise ConfigError("--min-confidence and --confidence are for open-domain datasets (squad2-open:dev)")
    # The models are checked first: a wrong --ranker is refused before a dataset is built or read.
    answerer = load_answerer(
        method, None, top=top, device=device, precision=precision, batch_size=batch_size,
        backend=backend, confidence=confidence, min_confidence=min_confidence, **given_settings(ctx),
    )  # fmt: skip
    if is_open:
        _eval_open(answerer, dataset, limit, passages, json_out)
        return
    examples = load_dataset(dataset)[:limit]
    qrels_from_examples(examples, dataset)
    report = evaluate_answers(answerer, examples, dataset)
    result = {
        "dataset": dataset,
        **report.as_dict(),
        **answerer.method.describe(),
    }
    result["provenance"] = run_info("sieveqa " + " ".join(sys.argv[1:]))
    line = ", ".join(f"{k} {v:.4f}" for k, v in report.metrics.items())
    console.print(f"{dataset} ({len(examples)} questions), {method}: answers {line}")
    if report.passage_metrics:
        console.print("passages " + ", ".join(f"{k} {v:.4f}" for k, v in report.passage_metrics.items()))
    c = report.cost
    console.print(
        f"{c['inferences_per_question']:.1f} inferences and {c['layer_units_per_question']:.0f} layer-units "
        f"per question; {c['seconds_per_question'] * 1000:.0f} ms mean, "
        f"p50 {c['p50_seconds'] * 1000:.0f} ms, p95 {c['p95_seconds'] * 1000:.0f} ms"
    )
    if json_out is not None:
        atomic_write_json(json_out, result)


def _eval_open(answerer: Any, dataset: str, limit: int | None, passages: int, json_out: Path | None) -> None:
    from sieveqa.data.registry import load_open_dataset
    from sieveqa.evaluation.abstention import answerable_in
    from sieveqa.evaluation.open_answers import evaluate_open
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.io import atomic_write_json

    examples = load_open_dataset(dataset)[:limit]
    report = evaluate_open(answerer, examples, passages, answerable=answerable_in(dataset))
    m = answerer.method
    result = {"dataset": dataset, "method": m.name, **report, **m.describe(), "signals": list(m.signals)}
    result["provenance"] = run_info("sieveqa " + " ".join(sys.argv[1:]))
    threshold = "uncalibrated: always answers" if not report["calibrated"] else (
        f"min-confidence {report['min_confidence']:.3f}"
    )  # fmt: skip
    console.print(
        f"{dataset} ({report['answerable']} answerable, {report['unanswerable']} not), {m.name}, "
        f"{threshold}: "
        f"{report['answered']:.1f}% of answerable answered, {report['right_answered']:.1f}% of them right; "
        f"{report['unanswerable_abstain']:.1f}% of unanswerable abstain; overall {report['overall']:.1f} "
        f"(always abstaining {report['always_abstain']:.1f}); AUROC {report['auroc']}"
    )
    if json_out is not None:
        atomic_write_json(json_out, result)
