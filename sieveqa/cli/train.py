"""``sieveqa train`` and ``sieveqa retrofit``: their options come from the config dataclasses.

``train`` has one flag per field of ``TrainConfig``, of every registered technique's model config,
and of every recipe's options; a flag that does not apply to the chosen ``--arch`` is refused. A
``--config FILE.json`` may hold any of those keys (plus ``train``, ``dev``, ``init``, ``arch``);
flags typed on the command line win over the file.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from sieveqa import registry
from sieveqa.cli._app import DeviceOpt, app, check_device
from sieveqa.cli._options import (
    Setting,
    given_settings,
    merge,
    read_settings,
    settings_command,
    settings_of,
    was_given,
)
from sieveqa.errors import ConfigError

log = logging.getLogger(__name__)

_RUN_KEYS = ("train", "dev", "init", "arch")


@functools.cache
def train_settings() -> dict[str, Setting]:
    """TrainConfig's fields, every technique's model-config fields and every recipe's options.

    The backbone is ``--init``; fields an ``--arch`` implies (HAS's composition and hashing) are no
    options of their own.
    """
    from sieveqa.training.config import TrainConfig

    implied = {"backbone"}
    for t in registry.techniques():
        cls = t.config_class()
        defaults = dataclasses.asdict(cls())
        for arch in t.archs:
            implied |= {k for k, v in dataclasses.asdict(cls.for_arch(arch)).items() if v != defaults[k]}
    model = [
        s
        for t in registry.techniques()
        for arch in t.archs
        for s in settings_of(t.config_class(), arch, exclude=implied, panel="Model (per --arch)")
    ]
    recipe = [
        s
        for t in registry.techniques()
        for arch in t.archs
        for s in settings_of(t.options_class(), arch, panel="Model (per --arch)")
    ]
    merged = merge([*model, *recipe])
    every = frozenset(registry.archs())
    for name, s in merged.items():
        if s.owners != every:
            merged[name] = dataclasses.replace(s, help=f"{s.help}; for {', '.join(sorted(s.owners))}")
    return merge([*settings_of(TrainConfig, "train", panel="Training"), *merged.values()])


def _run_value(key: str, value: Any, where: str) -> str:
    """A ``train``/``dev``/``init``/``arch`` value of a --config file: a string (or, for the
    datasets, a list of names)."""
    if key in ("train", "dev") and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    if not isinstance(value, str):
        raise ConfigError(f"{where}: key {key!r}: expected a string, got {value!r}")
    return value


def _split(values: dict[str, Any], arch: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Training, model and recipe settings for ``arch``; a setting of another arch is refused."""
    from sieveqa.training.config import TrainConfig

    technique = registry.for_arch(arch)
    groups = (TrainConfig, technique.config_class(), technique.options_class())
    parts: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] = ({}, {}, {})
    known = train_settings()
    for name, value in values.items():
        for part, cls in zip(parts, groups, strict=True):
            if name in {f.name for f in dataclasses.fields(cls)}:
                part[name] = value
                break
        else:
            owners = ", ".join(sorted(known[name].owners))
            raise ConfigError(f"{known[name].flag} applies to --arch {owners}, not to {arch!r}")
    return parts


@app.command(cls=settings_command(train_settings))
def train(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="output folder (best model lands in OUT/best)")],
    train_sets: Annotated[
        str | None, typer.Option("--train", help="comma-separated dataset names to train on")
    ] = None,
    init: Annotated[
        str | None,
        typer.Option(
            help="backbone name (minilm-l6, tiny, ...) or a sieveqa model folder (default: minilm-l6)"
        ),
    ] = None,
    dev: Annotated[
        str | None,
        typer.Option(help="dev dataset(s) that pick the best checkpoint; '' for none (default: wikiqa:dev)"),
    ] = None,
    arch: Annotated[
        str | None,
        typer.Option(help=f"what to train: {', '.join(registry.archs())} (default: cross-encoder)"),
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="JSON file of settings: any option below, by its field name")
    ] = None,
    resume: Annotated[
        bool, typer.Option(help="continue from OUT/checkpoint if a run was interrupted")
    ] = True,
    kd_trials: Annotated[
        int,
        typer.Option(help="mhs: choose --alpha/--tau on dev in N trials (Optuna; OUT/study.sqlite resumes)"),
    ] = 0,
) -> None:
    """Train a cross-encoder, cascade, or HAS ranker (or HAS's BERT baselines).

    For TANDA run it twice: transfer on a large set, then adapt on the target (--init OUT/best).
    """
    from sieveqa.io import read_json_object
    from sieveqa.training.config import TrainConfig
    from sieveqa.training.run import train_model

    known = train_settings()
    values = read_settings(read_json_object(config), known, str(config), _RUN_KEYS) if config else {}
    values |= given_settings(ctx)
    given = {"train": train_sets, "dev": dev, "init": init, "arch": arch}
    from_file = {k: _run_value(k, values.pop(k), str(config)) for k in _RUN_KEYS if k in values}
    run = {k: v if v is not None else from_file.get(k) for k, v in given.items()}
    if not run["train"]:
        raise ConfigError("--train is required (or a 'train' key in --config)")
    chosen = run["arch"] or "cross-encoder"
    train_values, model_values, options = _split(values, chosen)
    if run["dev"] is None:
        run["dev"] = _default_dev(run["train"])
    if kd_trials:
        if train_values.get("stop_after"):
            raise ConfigError("--stop-after pauses one run; it cannot go with --kd-trials")
        _search_kd(chosen, run, out, options, kd_trials, TrainConfig(**train_values), model_values)
        return
    state = train_model(
        chosen,
        run["train"],
        out,
        init=run["init"] or "minilm-l6",
        dev=run["dev"],
        config=TrainConfig(**train_values),
        settings=model_values,
        options=options,
        resume=resume,
    )
    if state.paused:
        typer.echo(f"paused at step {state.step}; the same command with a later or no --stop-after continues")
        return
    metric = train_values.get("metric") or registry.for_arch(chosen).recipe_class().default_metric
    typer.echo(f"{state.outcome(metric)}; model: {out / 'best'}")


DEFAULT_DEV = "wikiqa:dev"


def _default_dev(train: str | list[str]) -> str:
    """The dev set when none is given: WikiQA dev, said when the training data is the user's own (the
    best checkpoint of a model of their domain was chosen on Wikipedia questions without a word), and
    refused in one line where it is not installed (the error named a file the user never asked for)."""
    from sieveqa.data.registry import dataset_file, load_dataset
    from sieveqa.errors import SieveQAError

    names = train if isinstance(train, list) else [n.strip() for n in train.split(",")]
    if any(dataset_file(n) is not None or n.startswith("beir:") for n in names):
        log.warning(
            "--dev not given: the best checkpoint is chosen on %s, not on your data; give --dev with "
            "held-out questions of your own (or --dev '' to keep the last step)", DEFAULT_DEV
        )  # fmt: skip
    try:
        load_dataset(DEFAULT_DEV)
    except SieveQAError as err:  # not installed (or not readable)
        raise ConfigError(
            f"--dev defaults to {DEFAULT_DEV}, which is not available here ({err}); give --dev with "
            "held-out questions of your own, or --dev '' for none"
        ) from None
    return DEFAULT_DEV


def _search_kd(
    arch: str,
    run: dict[str, Any],
    out: Path,
    options: dict[str, Any],
    trials: int,
    config: Any,
    settings: dict[str, Any],
) -> None:
    from sieveqa.training.kd_search import search_kd

    if arch != "mhs" or not options.get("teachers") or not run["dev"]:
        raise ConfigError("--kd-trials searches the KD loss of --arch mhs: it needs --teachers and --dev")
    if {"alpha", "tau"} & set(options):
        raise ConfigError("--kd-trials chooses --alpha and --tau itself; leave them out")
    result = search_kd(
        arch, run["train"], run["dev"], run["init"] or "minilm-l6", out, options["teachers"], trials, config,
        settings,
    )  # fmt: skip
    from sieveqa.evaluation.provenance import run_info
    from sieveqa.io import atomic_write_json

    for t in result["trials"]:
        typer.echo(f"trial {t['number']}: alpha {t['alpha']}, tau {t['tau']}: {t['metric']:.4f}")
    atomic_write_json(out / "search.json", {**result, "run": run_info("sieveqa " + " ".join(sys.argv[1:]))})
    typer.echo(f"best {result['best']} ({result['best_metric']:.4f}); models: {out}/trial-N/best")


def _retrofit_defaults() -> Any:
    """A retrofit fits small heads: far higher learning rate and bigger batches than fine-tuning."""
    from sieveqa.training.config import TrainConfig

    return TrainConfig(lr=1e-3, batch_size=64, max_pairs=30000, max_negatives=20, metric="map@mean")


@functools.cache
def retrofit_settings() -> dict[str, Setting]:
    from sieveqa.training.config import TrainConfig

    # A retrofit trains exits over a body it keeps (or tunes whole): no low-rank body to train.
    return merge(
        settings_of(TrainConfig, "retrofit", _retrofit_defaults(), exclude=("low_rank",), panel="Training")
    )


@app.command(cls=settings_command(retrofit_settings))
def retrofit(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-o", help="output folder (the cascade lands in OUT/best)")],
    model: Annotated[str, typer.Option("--model", "-m", help="the cross-encoder to give exits")] = "default",
    train_sets: Annotated[
        str, typer.Option("--train", help="datasets whose pairs are used, labels ignored")
    ] = "squad-as2:train",
    pairs: Annotated[
        Path | None,
        typer.Option(
            help='unlabelled pairs instead of --train: JSONL of {"query", "text"} lines (your traffic, '
            "any text) or of questions with candidates"
        ),
    ] = None,
    exits: Annotated[
        str | None, typer.Option(help="layers to add exits after, e.g. 2,3,4,5,6 (default: paper's rule)")
    ] = None,
    dev: Annotated[str, typer.Option(help="dev dataset(s) that pick the best heads; '' for none")] = (
        "wikiqa:dev,trecqa:dev-clean"
    ),
    tune_body: Annotated[bool, typer.Option(help="also tune the body (to the original logits)")] = False,
    config: Annotated[Path | None, typer.Option(help="JSON file of settings, by field name")] = None,
    resume: Annotated[bool, typer.Option(help="continue an interrupted run")] = True,
) -> None:
    """Turn a trained cross-encoder into a cascade: new exits learn to reproduce its score.

    Any cross-encoder: a shipped one, a sieveqa folder or a Hugging Face folder (BERT, ELECTRA,
    RoBERTa, XLM-RoBERTa). No labels are read: --pairs takes your own unlabelled (query, text) pairs.
    The body and head stay as they are (unless --tune-body), so at α = 0 nothing changes; the cascade
    stores only the new heads and reads the body from --model. Then run tune-cascade to pick drop ratios.
    """
    from sieveqa.io import read_json_object
    from sieveqa.training.cascade import retrofit_cascade

    known = retrofit_settings()
    values = read_settings(read_json_object(config), known, str(config)) if config else {}
    values |= given_settings(ctx)
    cfg = dataclasses.replace(_retrofit_defaults(), **values)
    layers = train_settings()["exits"].coerce(exits, "--exits") if exits else None
    sources: str | list[str] = train_sets
    if pairs is not None:
        if was_given(ctx, "train_sets"):  # one or the other: --train was ignored without a word
            raise ConfigError("give --pairs or --train, not both (--pairs trains on your pairs alone)")
        if not pairs.is_file():
            raise ConfigError(f"--pairs {pairs}: no such file")
        sources = [f"pairs:{pairs}"]  # a list: a path holding a comma is one dataset, not two
    state = retrofit_cascade(model, sources, out, layers, dev or None, cfg, tune_body, resume)
    if state.paused:  # it said "cascade: OUT/best", which a paused run has not written
        typer.echo(f"paused at step {state.step}; the same command with a later or no --stop-after continues")
        return
    typer.echo(f"{state.outcome(cfg.metric)}; cascade: {out / 'best'}")


@app.command("teacher-scores")
def teacher_scores_command(
    teacher: Annotated[
        str,
        typer.Option(
            help="the teacher: a shipped model name or a model folder; embedder:BACKBONE (a bi-encoder's "
            "cosine), bm25, reader:NAME (a span reader's has-answer logit)"
        ),
    ],
    train_sets: Annotated[str, typer.Option("--train", help="the student's --train datasets")],
    out: Annotated[Path, typer.Option("--out", "-o", help="the scores file to write (.json.gz)")],
    max_negatives: Annotated[int | None, typer.Option(help="as the student's --max-negatives")] = None,
    max_pairs: Annotated[int | None, typer.Option(help="as the student's --max-pairs")] = None,
    seed: Annotated[int | None, typer.Option(help="as the student's --seed (default: train's)")] = None,
    name: Annotated[str | None, typer.Option(help="the teacher's name recorded in the file")] = None,
    pool: Annotated[str, typer.Option(help="as the student's --pool (unlabelled pairs)")] = "",
    pool_pairs: Annotated[int | None, typer.Option(help="as the student's --pool-pairs")] = None,
    device: DeviceOpt = "auto",
    precision: Annotated[
        str,
        typer.Option(
            help="fp32 (exact soft targets), or bf16 where the CPU has it natively: ~3x faster, the "
            "logits rounded to about 3 significant digits"
        ),
    ] = "fp32",
    batch_size: Annotated[int, typer.Option(help="pairs per forward pass")] = 128,
) -> None:
    """Score a student's training pairs with a teacher once, into a file `train --teachers` reads.

    Give the sampling options the student will be trained with: the file is refused unless its pairs
    are the student's, in order. Scores computed on another machine (a GPU) travel as such a file.
    They are computed in fp32 unless --precision says otherwise (bf16 rounds the soft targets).
    A model's scores so far are kept beside the output (OUT.partial.json) while it scores: the same
    command, run again after a kill, goes on from there.
    """
    from sieveqa.io import check_output_file
    from sieveqa.training.config import TrainConfig
    from sieveqa.training.distill import DistillOptions, pooled, teacher_scores
    from sieveqa.training.pairs import PointwiseRecipe

    if precision not in ("fp32", "bf16"):
        raise ConfigError(f"--precision: fp32 or bf16 (scores rounded no further), got {precision!r}")
    check_device(device, precision)
    if not out.name.endswith(".json.gz"):
        raise ConfigError(f"--out {out}: a teacher-scores file ends in .json.gz")
    check_output_file(out, "--out")
    seed = TrainConfig().seed if seed is None else seed
    config = TrainConfig(max_negatives=max_negatives, max_pairs=max_pairs, seed=seed)
    options = DistillOptions(teachers=[teacher], pool=pool, pool_pairs=pool_pairs)
    recipe = PointwiseRecipe()
    pairs = recipe.sample(recipe.load(train_sets), config, train_sets)
    pairs, source = pooled(pairs, train_sets, config, options, recipe.load)
    partial = out.with_name(out.name.removesuffix(".json.gz") + ".partial.json")  # kept while it scores
    scores = teacher_scores(
        teacher,
        source,
        pairs,
        option="--teacher",
        partial=partial,
        device=device,
        batch_size=batch_size,
        precision=precision,
    )
    scores.teacher = name or scores.teacher
    scores.save(out)
    partial.unlink(missing_ok=True)  # only now: a failed save keeps what was scored
    typer.echo(f"{len(scores.scores)} pairs scored by {scores.teacher}: {out}")
