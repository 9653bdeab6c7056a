"""``sieveqa calibrate-confidence``: fit a method's confidence and where it abstains, on dev questions
asked with and without their article in the index; report the abstention curve on others."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from sieveqa.cli._app import BackendOpt, BatchOpt, DeviceOpt, PrecisionOpt, app, check_device, console
from sieveqa.cli._options import given_settings, settings_command
from sieveqa.cli.answer import MethodOpt, method_settings
from sieveqa.errors import ConfigError

PairOpt = Annotated[
    str,
    typer.Option(help="INDEXED,UNINDEXED: the questions with their article in the index, and without"),
]


def _pair(value: str, flag: str) -> tuple[str, str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    if len(names) != 2:
        raise ConfigError(f"{flag}: expected two datasets, INDEXED,UNINDEXED, got {value!r}")
    return names[0], names[1]


def _scored(answerer: Any, pair: tuple[str, str], passages: int | None, progress: bool) -> list[Any]:
    from sieveqa.data.registry import load_open_dataset
    from sieveqa.evaluation.abstention import score_questions

    indexed, unindexed = (load_open_dataset(name) for name in pair)
    return score_questions(answerer, indexed, True, passages, progress) + score_questions(
        answerer, unindexed, False, passages, progress
    )


@app.command("calibrate-confidence", cls=settings_command(method_settings))
def calibrate_confidence(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="the confidence file to add the method to")],
    method: MethodOpt = "peasi",
    dev: PairOpt = "squad-open-mini:dev0,squad-open-mini:dev0-unindexed",
    check: Annotated[
        str | None, typer.Option(help="INDEXED,UNINDEXED questions to report the abstention curve on")
    ] = None,
    passages: Annotated[int | None, typer.Option(min=1, help="passages read per question")] = 20,
    keep: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="share of right answers that must stay answered")
    ] = 0.9,
    json_out: Annotated[Path | None, typer.Option("--json", help="write the report as JSON here")] = None,
    progress: Annotated[bool, typer.Option(help="show progress bars")] = True,
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = "auto",
    backend: BackendOpt = "torch",
    batch_size: BatchOpt = None,
) -> None:
    """Fit the method's calibrated confidence (Platt scaling of its best answer's score) and its
    default --min-confidence on dev questions, half asked of an index without their article."""
    from sieveqa.evaluation.abstention import abstention_curve, fit_confidence
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.io import atomic_write_json, check_output_file
    from sieveqa.runtime.answer.answerer import load_answerer
    from sieveqa.runtime.answer.confidence import load_confidence, save_confidence

    check_device(device, precision, backend)
    check_output_file(out, "--out")
    if out.exists():
        load_confidence(out)  # a file that is not a confidence file is refused before any work
    if json_out is not None:
        check_output_file(json_out, "--json")
    pairs = {"dev": _pair(dev, "--dev")} | ({"check": _pair(check, "--check")} if check else {})
    answerer = load_answerer(
        method,
        None,
        device=device,
        precision=precision,
        batch_size=batch_size,
        backend=backend,
        **given_settings(ctx),
    )
    scored = {name: _scored(answerer, pair, passages, progress) for name, pair in pairs.items()}
    fitted_on = {"dev": dev, "passages": passages, "keep": keep}
    confidence = fit_confidence(scored["dev"], keep, answerer.method.model_names, fitted_on)
    save_confidence(out, method, confidence)
    report: dict[str, Any] = {"method": method, "models": answerer.method.model_names, "fitted_on": fitted_on}
    report |= {
        "scale": confidence.scale,
        "bias": confidence.bias,
        "min_confidence": confidence.min_confidence,
    }
    for name, rows in scored.items():
        report[name] = {"dataset": dev if name == "dev" else check} | abstention_curve(rows, confidence)
        at = report[name]["at_min_confidence"]
        console.print(
            f"{name}: at min-confidence {confidence.min_confidence:.3f}, {at['answered']:.1f}% of indexed "
            f"questions answered ({at['accuracy_answered']:.1f}% right), {at['right_kept']:.1f}% of right "
            f"answers kept, {at['unindexed_abstain']:.1f}% of unindexed questions abstain"
        )
    if json_out is not None:
        report["provenance"] = run_info("sieveqa " + " ".join(sys.argv[1:]))
        atomic_write_json(json_out, report)
    console.print(f"{method}: confidence written to {out}")
