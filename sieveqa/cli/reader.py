"""``sieveqa calibrate``, ``sieveqa train-scheduler`` and ``sieveqa eval-reader``: the anytime reader
and the schedules that spend its layers (adaptive computation for ODQA)."""

from __future__ import annotations

import functools
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from sieveqa.cli._app import DeviceOpt, app, check_device, console, float_list
from sieveqa.cli._options import Setting, given_settings, settings_command

ReaderOpt = Annotated[
    str, typer.Option("--reader", "-r", help="the shipped 'reader' or a reader folder (train --arch reader)")
]
OpenDataOpt = Annotated[
    str, typer.Option("--dataset", "-d", help="open-domain data: squad-open-mini:dev1, jsonl:PATH, ...")
]
PassagesOpt = Annotated[
    int | None, typer.Option(min=1, help="read only each question's top N passages (default: all)")
]
ProgressOpt = Annotated[bool, typer.Option(help="show progress bars")]


def _prepared(
    reader: str, out: Path, device: str, names: list[str], passages: int | None, progress: bool
) -> Any:
    """Checks first, then the reader and the replay table of each named dataset: ``(model, {name:
    (examples, table)})``."""
    from sieveqa.data.registry import load_open_dataset
    from sieveqa.evaluation.odqa import cached_table, load_reader
    from sieveqa.io import check_output_dir

    check_device(device, "fp32")
    check_output_dir(out, "--out")
    model = load_reader(reader).configure(device=device)
    data = {name: load_open_dataset(name) for name in dict.fromkeys(names)}
    return model, {name: (ex, cached_table(model, ex, passages, progress)) for name, ex in data.items()}


def _schedule(**settings: Any) -> Any:
    from sieveqa.runtime.answer.schedulers import Schedule

    return Schedule(**settings)


@app.command()
def calibrate(
    out: Annotated[Path, typer.Option("--out", "-o", help="folder for the calibrated reader")],
    reader: ReaderOpt = "reader",
    dataset: OpenDataOpt = "squad-open-mini:dev1",
    check: Annotated[
        str | None, typer.Option(help="also report ECE on these questions (default: squad-open-mini:dev0)")
    ] = "squad-open-mini:dev0",
    passages: PassagesOpt = None,
    device: DeviceOpt = "auto",
    progress: ProgressOpt = True,
) -> None:
    """Fit one has-answer temperature per exit on held-out questions; report ECE before and after."""
    from sieveqa.data.registry import load_open_dataset
    from sieveqa.evaluation.odqa import cached_table, load_reader
    from sieveqa.io import check_output_dir
    from sieveqa.training.skyline import calibrate as fit
    from sieveqa.training.skyline import calibration_errors

    check_device(device, "fp32")
    check_output_dir(out, "--out")
    model = load_reader(reader).configure(device=device)
    sets = {dataset: load_open_dataset(dataset)} | ({check: load_open_dataset(check)} if check else {})
    tables = {name: cached_table(model, examples, passages, progress) for name, examples in sets.items()}
    temps = fit(tables[dataset])
    for name, table in tables.items():
        before, after = calibration_errors(table), calibration_errors(table, temps)
        for layer, b, a in zip(model.exits, before, after, strict=True):
            console.print(f"{name}  layer {layer}: ECE {b:.4f} -> {a:.4f}")
    model.config.temperatures = temps
    extra = {
        "calibration": {"dataset": dataset, "temperatures": temps},
        "training": model.meta.get("training"),
    }
    model.save_pretrained(out, extra=extra)
    console.print(f"temperatures {temps}; calibrated reader: {out}")


@app.command("train-scheduler")
def train_scheduler(
    out: Annotated[Path, typer.Option("--out", "-o", help="output folder (the policy lands in OUT/best)")],
    reader: ReaderOpt = "reader",
    train: Annotated[str, typer.Option("--train", help="questions to learn from")] = "squad-open-mini:dev1",
    dev: Annotated[str, typer.Option(help="questions that pick the best epoch")] = "squad-open-mini:dev0",
    budget: Annotated[
        str, typer.Option(help="layers per passage an episode spends; several (0.5,1,2): drawn per episode")
    ] = "0.5,1,2",
    m: Annotated[int, typer.Option(help="towers kept for the answer when validating")] = 3,
    epochs: Annotated[int, typer.Option(help="passes over the training questions")] = 16,
    lr: Annotated[float, typer.Option(help="SGD learning rate")] = 1e-3,
    baseline: Annotated[bool, typer.Option(help="subtract the mean return per step")] = True,
    seed: Annotated[int, typer.Option(help="seed of the sampled episodes")] = 13,
    reward: Annotated[
        str,
        typer.Option(
            help="passage: each step earns 1 on a passage holding an answer (the paper); "
            "answer: the episode earns the EM of its answer"
        ),
    ] = "passage",
    passages: PassagesOpt = None,
    device: DeviceOpt = "auto",
    progress: ProgressOpt = True,
) -> None:
    """Train SkylineBuilder's policy with REINFORCE on a calibrated reader's replayed towers."""
    from sieveqa.evaluation.odqa import answer_reward, replay, score_outcomes
    from sieveqa.training.skyline import PolicyOptions, train_policy

    budgets = float_list(budget, "--budget") or [0.0]
    schedules = [_schedule(method="learned", budget=b, m=m) for b in budgets]
    options = PolicyOptions(
        budgets=budgets, epochs=epochs, lr=lr, baseline=baseline, seed=seed, reward=reward
    )
    model, tables = _prepared(reader, out, device, [train, dev], passages, progress)
    temps = model.config.temperatures or [1.0] * len(model.exits)
    train_table = tables[train][1]
    dev_examples, dev_table = tables[dev]

    def validate(policy: Any) -> float:
        ems = [score_outcomes(dev_examples, replay(dev_table, s, temps, policy)[0])["em"] for s in schedules]
        return sum(ems) / len(ems)

    rewarded = answer_reward(tables[train][0], schedules[0]) if options.reward == "answer" else None
    result = train_policy(train_table, temps, options, validate, out, progress, rewarded)
    console.print(
        f"best dev EM {result['best_dev_em']:.2f} (mean over budgets {budget}); scheduler: {out / 'best'}"
    )


@app.command("tune-reader")
def tune_reader(
    out: Annotated[Path, typer.Option("--out", "-o", help="folder for the reader with its chosen settings")],
    reader: ReaderOpt = "reader",
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="dev questions")] = "squad-open-mini:dev0",
    scheduler: Annotated[
        str | None,
        typer.Option(help="a learned scheduler to ship with the reader (its default where dev says so)"),
    ] = None,
    passages: PassagesOpt = None,
    device: DeviceOpt = "auto",
    progress: ProgressOpt = True,
) -> None:
    """Choose the reader methods' settings on dev (replayed) and save them beside a copy of the
    reader (policy.json; the scheduler in scheduler/, skyline's default where it beats calibrated
    probabilities on dev)."""
    from sieveqa.evaluation.odqa import load_policy
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.io import atomic_write_json
    from sieveqa.runtime.answer.reader_policy import SCHEDULER_FOLDER
    from sieveqa.training.reader_tuning import tune_reader as choose

    policy = load_policy(scheduler, "learned") if scheduler is not None else None
    model, tables = _prepared(reader, out, device, [dataset], passages, progress)
    examples, table = tables[dataset]
    chosen, report = choose(examples, table, model.config.temperatures, policy)
    tuning = {"dataset": dataset, "reader": reader, "scheduler": scheduler}
    model.save_pretrained(
        out, extra={"training": model.meta.get("training"), "calibration": model.meta.get("calibration")},
        policy=chosen.to_dict(tuning),
    )  # fmt: skip
    if policy is not None:  # it ships either way; chosen.learned says whether skyline uses it by default
        policy.save_pretrained(out / SCHEDULER_FOLDER)
    atomic_write_json(out / "tuning.json", {"settings": tuning, "report": report, "provenance": run_info()})
    full = report["full"]
    console.print(f"full reader: EM {full['em']:.2f} F1 {full['f1']:.2f} (has-weight {chosen.has_weight})")
    for kind in ("tower", "skyline", "learned"):
        if kind in report:
            r = report[kind]
            console.print(f"{kind:>8}: m {r['m']}, mean EM {r['mean_em']:.2f}, pick {r['pick']}")
    console.print(f"skyline uses the learned scheduler by default: {chosen.learned}; reader: {out}")


#: The schedule settings ``eval-reader`` shares with the reader answering methods: declared once, in
#: their options dataclasses (``sieveqa.runtime.answer.reading``), so the defaults cannot drift.
SHARED_READER_SETTINGS = ("budget", "threshold", "m", "scheduler", "has_weight")


@functools.cache
def reader_settings() -> dict[str, Setting]:
    from sieveqa.cli.answer import method_settings

    return {name: method_settings()[name] for name in SHARED_READER_SETTINGS}


@app.command("eval-reader", cls=settings_command(reader_settings))
def eval_reader(
    ctx: typer.Context,
    reader: ReaderOpt = "reader",
    dataset: OpenDataOpt = "squad-open-mini:test",
    method: Annotated[
        str,
        typer.Option(help="standard, top-k, tower, skyline or learned (skyline with --scheduler)"),
    ] = "skyline",
    k: Annotated[int, typer.Option(help="top-k: passages read")] = 5,
    strategy: Annotated[
        str, typer.Option(help="last (finish kept towers) or any (answer where they stand)")
    ] = "last",
    init_priority: Annotated[float, typer.Option(help="skyline: priority of an unread tower")] = 0.0,
    group: Annotated[int, typer.Option(help="towers built per step")] = 1,
    live: Annotated[
        bool, typer.Option(help="run the encoder layer by layer and time it (else replay)")
    ] = False,
    passages: PassagesOpt = None,
    limit: Annotated[int | None, typer.Option(min=1, help="only the first N questions")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="write the report as JSON here")] = None,
    device: DeviceOpt = "auto",
    progress: ProgressOpt = True,
) -> None:
    """EM and F1 of a schedule over each question's retrieved passages, with the layers it spent
    (and, with --live, its measured latency)."""
    run_eval_reader(
        reader, dataset, method, given_settings(ctx), k, strategy, init_priority, group, live, passages,
        limit, json_out, device, progress,
    )  # fmt: skip


def run_eval_reader(
    reader: str,
    dataset: str,
    method: str,
    shared: dict[str, Any],
    k: int = 5,
    strategy: str = "last",
    init_priority: float = 0.0,
    group: int = 1,
    live: bool = False,
    passages: int | None = None,
    limit: int | None = None,
    json_out: Path | None = None,
    device: str = "auto",
    progress: bool = True,
) -> None:
    """``eval-reader``'s work; ``shared``: the settings given of ``SHARED_READER_SETTINGS`` (the
    others take the reader methods' defaults)."""
    from sieveqa.data.registry import load_open_dataset
    from sieveqa.evaluation.odqa import evaluate_schedule, load_policy, load_reader
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.io import atomic_write_json, check_output_file
    from sieveqa.runtime.answer.reader_policy import OWN_SCHEDULER, ReaderPolicy

    check_device(device, "fp32")
    if json_out is not None:
        check_output_file(json_out, "--json")
    model = load_reader(reader).configure(device=device)
    saved = ReaderPolicy.saved(model) or ReaderPolicy()
    given = {k: v for k, v in shared.items() if v is not None}
    asked = given.get("scheduler")
    if method == "learned" and asked is None and saved.scheduler is not None:
        asked = OWN_SCHEDULER  # --method learned reads the reader's own scheduler where it ships one
    scheduler = saved.resolve_scheduler(asked, model.path) if method == "learned" else None
    schedule = _schedule(
        method=method,
        budget=given.get("budget", saved.budget) if method in ("skyline", "learned") else None,
        threshold=given.get("threshold", saved.threshold),
        k=k,
        m=given.get("m", saved.keep(method)),
        strategy=strategy,
        init_priority=init_priority,
        group=group,
        has_weight=given.get("has_weight", saved.has_weight),
    )
    policy = load_policy(given.get("scheduler") if method != "learned" else scheduler, method)
    examples = load_open_dataset(dataset)[:limit]
    report = evaluate_schedule(model, examples, schedule, policy, live, passages, progress)
    for key, value in report.items():
        console.print(f"{key:>20}  {value:.4f}" if isinstance(value, float) else f"{key:>20}  {value}")
    if json_out is not None:
        settings = {
            "dataset": dataset,
            "reader": reader,
            "scheduler": scheduler,
            "live": live,
            **asdict(schedule),
        }
        atomic_write_json(json_out, {"settings": settings, "metrics": report, "provenance": run_info()})
