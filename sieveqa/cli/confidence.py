"""``sieveqa calibrate-confidence``: fit a method's confidence and where it abstains, on dev questions
some of which the documents do not answer; report the abstention curve on others."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from sieveqa.cli._app import BackendOpt, BatchOpt, DeviceOpt, PrecisionOpt, app, check_device, console
from sieveqa.cli._options import given_settings, settings_command, was_given
from sieveqa.cli.answer import MethodOpt, method_settings
from sieveqa.errors import ConfigError

SetsOpt = Annotated[
    str,
    typer.Option(
        help="open-domain datasets, comma-separated: a question is unanswerable when it is 'impossible' "
        "(squad2-open) or its dataset's name ends in -unindexed (its article is not indexed)"
    ),
]


def _names(value: str, flag: str, what: str = "dataset") -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names:
        raise ConfigError(f"{flag}: no {what} named")
    return names


def _scored(method: Any, names: list[str], passages: int | None, progress: bool) -> list[Any]:
    from sieveqa.data.registry import load_open_dataset
    from sieveqa.evaluation.abstention import answerable_in, score_questions

    out = []
    for name in names:
        out += score_questions(method, load_open_dataset(name), answerable_in(name), passages, progress)
    return out


def _held_out(scored: list[Any], folds: int, fit: Any) -> dict[str, Any]:
    """Each question's confidence from a fit on the other folds (seeded): an estimate of the metrics
    on questions the fit never saw."""
    from sieveqa.evaluation.open_answers import open_metrics

    order = list(range(len(scored)))
    random.Random(0).shuffle(order)
    values = [0.0] * len(scored)
    thresholds = [0.0] * len(scored)
    for k in range(folds):
        test = set(order[k::folds])
        confidence = fit([s for i, s in enumerate(scored) if i not in test])
        for i in test:
            s = scored[i]
            values[i] = confidence(s.score, s.signals) if s.score > float("-inf") else float("-inf")
            thresholds[i] = confidence.min_confidence
    # Each fold answers at its own threshold: compare each value with it (shifted to a common 0); the
    # AUROCs pool the held-out confidences themselves.
    shifted = [v - t for v, t in zip(values, thresholds, strict=True)]
    pooled = open_metrics(scored, values, 0.0)
    return {"folds": folds, **open_metrics(scored, shifted, 0.0)} | {
        k: pooled[k] for k in ("auroc", "auroc_right")
    }


@app.command("calibrate-confidence", cls=settings_command(method_settings))
def calibrate_confidence(
    ctx: typer.Context,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="the confidence file to add the method to (with --index: its confidence.json)"
        ),
    ] = None,
    method: MethodOpt = "peasi",
    dev: SetsOpt = "squad2-open:dev",
    check: Annotated[
        str | None, typer.Option(help="datasets to report the abstention curve on (as --dev)")
    ] = None,
    passages: Annotated[int | None, typer.Option(min=1, help="passages read per question")] = 20,
    threshold_rule: Annotated[
        str,
        typer.Option(
            help="where --min-confidence goes: 'overall' (the best SQuAD 2.0 overall score on dev: "
            "right answers plus right abstentions) or the share of right answers to keep (0.9)"
        ),
    ] = "overall",
    signals: Annotated[
        str | None,
        typer.Option(
            help="the answers' signals the fit reads beside the score (default: all the method has)"
        ),
    ] = None,
    folds: Annotated[
        int, typer.Option(min=0, help="also report dev fitted on K-1 folds, measured on the one left out")
    ] = 0,
    index: Annotated[
        Path | None,
        typer.Option(
            help="your corpus index: fit where it abstains on --questions over it; saved beside it "
            "(confidence.json), where answer and serve read it"
        ),
    ] = None,
    questions: Annotated[
        Path | None,
        typer.Option(
            help="your questions over --index (.jsonl, .csv, .tsv): a question and, where the documents "
            "answer it, an answer string a right answer holds (blank or absent: they do not)"
        ),
    ] = None,
    questions_split: Annotated[
        str | None, typer.Option(help="only the --questions whose 'split' field is this (dev)")
    ] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="write the report as JSON here")] = None,
    progress: Annotated[bool, typer.Option(help="show progress bars")] = True,
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = "auto",
    backend: BackendOpt = "torch",
    batch_size: BatchOpt = None,
) -> None:
    """Fit the method's calibrated confidence (a logistic regression on its best answer's score and
    signals) and its default --min-confidence on dev questions, some of which nothing answers.

    With --index and --questions, fit where it abstains on your own documents: the cut (and, from
    200 questions up, the calibration itself) is saved beside the index. With --dev as
    well, the fit reads both, and the cut weighs your questions as much as the dev sets'.
    """
    from sieveqa import registry
    from sieveqa.evaluation.abstention import (
        abstention_curve,
        confidence_of,
        fit_confidence,
        parse_rule,
        score_asked,
    )
    from sieveqa.evaluation.open_answers import open_metrics
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.io import atomic_write_json, check_output_file
    from sieveqa.runtime.answer.answerer import load_answerer
    from sieveqa.runtime.answer.confidence import LOCAL_CONFIDENCE, load_confidence, save_confidence

    check_device(device, precision, backend)
    if (index is None) != (questions is None):
        raise ConfigError("--index and --questions go together: your questions over your index")
    mixing = index is not None and was_given(ctx, "dev")
    if out is None:
        if index is None or mixing:
            raise ConfigError("--out: name the confidence file to write")
        out = index / LOCAL_CONFIDENCE
    check_output_file(out, "--out")
    rule = parse_rule(threshold_rule)
    if out.exists():
        load_confidence(out)  # a file that is not a confidence file is refused before any work
    if json_out is not None:
        check_output_file(json_out, "--json")
    if folds == 1:
        raise ConfigError("--folds must be 0 (off) or at least 2")
    own = _own_questions(questions, questions_split) if questions is not None else None
    sets = {"dev": _names(dev, "--dev")} if index is None or mixing else {}
    sets |= {"check": _names(check, "--check")} if check else {}
    given = given_settings(ctx)
    wanted = None if signals is None else _names(signals, "--signals", "signal")
    judge_signal = registry.answer_method(method).method_class().judge_signal
    if wanted is not None and judge_signal not in wanted:
        given.setdefault("judge", "none")  # a default judge the fit would not read: not loaded, not recorded
    answerer = load_answerer(
        method, None if index is None else str(index), device=device, precision=precision,
        batch_size=batch_size, backend=backend, fitting=True, local_confidence=False, **given,
    )  # fmt: skip
    names = list(answerer.method.signals) if wanted is None else wanted
    unknown = sorted(set(names) - set(answerer.method.signals))
    if unknown:
        have = ", ".join(answerer.method.signals) or "none"
        raise ConfigError(f"--signals: --method {method} gives no {', '.join(unknown)} (it has: {have})")
    scored = {part: _scored(answerer.method, sets[part], passages, progress) for part in sets}
    if own is not None:
        scored["yours"] = score_asked(answerer, own, progress)
    fitted_on: dict[str, Any] = {"rule": threshold_rule, "signals": names}
    if "dev" in sets:
        fitted_on |= {"dev": dev, "passages": passages}
    if own is not None:
        fitted_on |= {"questions": str(questions), "split": questions_split, "count": len(own)}
    models = answerer.method.model_names

    def fit(rows: list[Any], groups: list[str] | None = None) -> Any:
        return fit_confidence(rows, rule, models, fitted_on, names, groups)

    if own is None:
        confidence = fit(scored["dev"])
    elif mixing:
        rows = scored["dev"] + scored["yours"]
        confidence = fit(rows, ["dev"] * len(scored["dev"]) + ["yours"] * len(scored["yours"]))
    else:
        confidence = _fit_yours(scored["yours"], answerer.confidence, fit, fitted_on)
    save_confidence(out, method, confidence)
    report: dict[str, Any] = {"method": method, "models": models, "fitted_on": fitted_on}
    report |= {"scale": confidence.scale, "bias": confidence.bias, "signals": confidence.signals}
    report["min_confidence"] = confidence.min_confidence
    for part, rows in scored.items():
        values = [confidence_of(confidence, s) for s in rows]
        report[part] = {"datasets": sets.get(part, [str(questions)]), **abstention_curve(rows, confidence)}
        report[part]["metrics"] = open_metrics(rows, values, confidence.min_confidence)
        m = report[part]["metrics"]
        console.print(
            f"{part}: at min-confidence {confidence.min_confidence:.3f}, {m['answered']:.1f}% of answerable "
            f"questions answered ({m['right_answered']:.1f}% right), {m['unanswerable_abstain']:.1f}% of "
            f"unanswerable ones abstain; overall {m['overall']:.1f} (always abstaining "
            f"{m['always_abstain']:.1f}), AUROC {m['auroc']}"
        )
    if own is not None and not mixing and answerer.confidence is not None:
        report["yours_held_out"] = _cut_held_out(scored["yours"], confidence)
        report["yours_at_shipped_cut"] = _overall(scored["yours"], answerer.confidence)
        console.print(
            f"yours: overall {report['yours_at_shipped_cut']:.1f} at the shipped cut "
            f"({answerer.confidence.min_confidence:.3f}); each question left out of the fit in turn: "
            f"{report['yours_held_out']:.1f}"
        )
    if folds and "dev" in scored:
        report["dev_held_out"] = _held_out(scored["dev"], folds, fit)
        h = report["dev_held_out"]
        console.print(f"dev, {folds} folds held out: overall {h['overall']:.1f}, AUROC {h['auroc']}")
    if json_out is not None:
        report["provenance"] = run_info("sieveqa " + " ".join(sys.argv[1:]))
        atomic_write_json(json_out, report)
    console.print(f"{method}: confidence written to {out}")


#: Fewest questions a cut is fitted on, and fewest of each kind (answerable, not) among them.
MIN_QUESTIONS, MIN_EACH = 10, 3
#: Questions below which the cut is rough (a warning), and from which the calibration is refitted too
#: (fewer: the shipped calibration's weights are kept and only the cut moves).
ROUGH_QUESTIONS, REFIT_QUESTIONS = 40, 200


def _own_questions(path: Path, split: str | None) -> list[Any]:
    """The user's questions (checked before any model loads): enough, and of both kinds."""
    from sieveqa.data.questions import read_questions

    asked = read_questions(path)
    if split is not None:
        asked = [q for q in asked if q.fields.get("split") == split]
        if not asked:
            raise ConfigError(f"--questions-split {split}: no question of {path} has 'split': {split!r}")
    can = sum(bool(q.answers) for q in asked)
    if len(asked) < MIN_QUESTIONS or min(can, len(asked) - can) < MIN_EACH:
        raise ConfigError(
            f"--questions {path}: {len(asked)} questions, {can} with an answer string and "
            f"{len(asked) - can} without; a cut needs at least {MIN_QUESTIONS} questions, {MIN_EACH} or more "
            "of each kind (an answer string the right answer holds; none where the documents do not say)"
        )
    if len(asked) < ROUGH_QUESTIONS:
        console.print(
            f"[yellow]warning:[/yellow] a cut fitted on {len(asked)} questions is rough; "
            f"{ROUGH_QUESTIONS} or more make it steadier"
        )
    return asked


def _fit_yours(rows: list[Any], shipped: Any, fit: Any, fitted_on: dict[str, Any]) -> Any:
    """The calibration refitted on the user's questions when there are enough, else the shipped one
    with its cut moved to where the user's questions score best."""
    from dataclasses import replace

    from sieveqa.evaluation.abstention import fit_cut

    right = sum(s.right for s in rows)
    if right == 0:
        raise ConfigError("--questions: no question was answered right, so no cut keeps a right answer")
    if len(rows) >= REFIT_QUESTIONS and min(right, len(rows) - right) >= REFIT_QUESTIONS // 5:
        console.print(f"{len(rows)} questions: the calibration is refitted on them, and the cut")
        return fit(rows)
    if shipped is None:
        raise ConfigError(
            f"the shipped calibration does not cover these models: give {REFIT_QUESTIONS} questions or more "
            "to fit one, or fit it on --dev"
        )
    console.print(f"{len(rows)} questions: the shipped calibration is kept, the cut fitted on them")
    return replace(
        shipped, min_confidence=fit_cut(rows, shipped), fitted_on={**shipped.fitted_on, "cut": fitted_on}
    )


def _overall(rows: list[Any], confidence: Any) -> float:
    """SQuAD 2.0's overall score (%) of ``rows`` answered at ``confidence``'s cut."""
    from sieveqa.evaluation.abstention import confidence_of
    from sieveqa.evaluation.open_answers import open_metrics

    values = [confidence_of(confidence, s) for s in rows]
    return float(open_metrics(rows, values, confidence.min_confidence)["overall"])


def _cut_held_out(rows: list[Any], confidence: Any) -> float:
    """The overall score (%) with each question answered at the cut fitted on all the others."""
    from sieveqa.evaluation.abstention import confidence_of, fit_cut

    good = 0
    for i, s in enumerate(rows):
        cut = fit_cut(rows[:i] + rows[i + 1 :], confidence)
        value = confidence_of(confidence, s)
        good += (s.right and value >= cut) or (not s.answerable and value < cut)
    return round(100 * good / len(rows), 2)
