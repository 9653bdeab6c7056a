"""``sieveqa export``: a model's body as per-layer ONNX Runtime or OpenVINO graphs, fp32 or static int8
calibrated on a dev slice, for ``--backend onnx|openvino``; (``--format hf OUT``) a whole
cross-encoder as a Hugging Face folder that transformers and sentence-transformers load; or
(``--format low-rank OUT``) a model fine-tuned whole as low-rank changes over its installed base."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sieveqa.cli._app import app, console
from sieveqa.errors import ConfigError

if TYPE_CHECKING:
    from sieveqa.models.encoder_model import EncoderModel

#: Inputs longer than this are passages: calibrate them on passages, not sentences.
_SENTENCE_TOKENS = 128


@app.command()
def export(
    model: Annotated[
        str, typer.Argument(help="a shipped model (default, peasi-pr, reader, ...) or a folder")
    ],
    out: Annotated[
        Path | None, typer.Argument(help="with --format hf: the folder to write (new or empty)")
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="onnx (ONNX Runtime), openvino, hf (a Hugging Face folder, to OUT), or low-rank (a sieveqa "
            "model folder holding --rank factors of what training changed in each matrix, to OUT)",
        ),
    ] = "onnx",
    rank: Annotated[int, typer.Option(min=1, help="with --format low-rank: the factors' rank")] = 16,
    int8: Annotated[
        bool, typer.Option("--int8", help="static int8, activation ranges calibrated on --calibrate")
    ] = False,
    calibrate: Annotated[
        str | None,
        typer.Option(
            help="dataset whose (question, candidate) pairs calibrate int8 (default: wikiqa:dev for "
            f"sentence models, squad-passages:dev for models reading more than {_SENTENCE_TOKENS} tokens)"
        ),
    ] = None,
    rows: Annotated[int, typer.Option(min=8, help="calibration pairs, sampled from --calibrate")] = 256,
    seed: Annotated[int, typer.Option(help="seed of the calibration sample")] = 0,
) -> None:
    """Export MODEL's transformer layers, one graph per layer, so every exit and scheduler keeps working
    (embeddings and heads stay in torch). The export goes to the cache, keyed by the body's
    fingerprint, where `--backend onnx|openvino` finds it; an fp32 export is also made on first use.
    With `--format hf OUT`, a cross-encoder becomes a folder that
    `sentence_transformers.CrossEncoder(OUT)` and `AutoModelForSequenceClassification` load. With
    `--format low-rank OUT`, a model whose body was fine-tuned whole is saved as the installed base
    plus rank `--rank` changes (a 12-layer MPNet: 6 MB at rank 16 instead of 220 MB)."""
    from sieveqa.encoder import SteppableEncoder
    from sieveqa.exported import FORMATS, build_export
    from sieveqa.models.zoo import load_model

    if fmt == "hf":
        _export_hf(model, out, int8, calibrate)
        return
    if fmt == "low-rank":
        _export_low_rank(model, out, rank, int8 or calibrate is not None)
        return
    if fmt not in FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(FORMATS)}, hf or low-rank, got {fmt!r}")
    if out is not None:
        raise ConfigError(
            f"OUT is for --format hf and low-rank; a {fmt} export goes to the cache (sieveqa finds it)"
        )
    if calibrate is not None and not int8:
        raise ConfigError("--calibrate goes with --int8 (an fp32 export needs no calibration)")
    loaded = load_model(model)
    batches, about = None, {"model": model}
    if int8:
        calibrate = calibrate or (
            "squad-passages:dev" if loaded.config.max_length > _SENTENCE_TOKENS else "wikiqa:dev"
        )
        batches = _calibration(loaded, calibrate, rows, seed)
        about |= {"calibration": calibrate, "calibration_seed": seed}
    kind = "int8" if int8 else "fp32"
    # Every body the model has (PEASI's two-body model reads EASI with a second one).
    for encoder in (m for m in loaded.modules() if isinstance(m, SteppableEncoder)):
        folder = build_export(
            encoder,
            encoder.fingerprint(),
            fmt,
            int8,
            batches,
            about,
            progress=lambda step: console.print(f"[dim]{step}...[/dim]"),
        )
        console.print(f"exported {model} ({encoder.num_layers} layers, {fmt} {kind}) to {folder}")
    precision = " --precision int8" if int8 else ""
    console.print(f"use it with --backend {fmt}{precision}")


def _export_hf(model: str, out: Path | None, int8: bool, calibrate: str | None) -> None:
    from sieveqa.exported.hf import check_out, export_hf
    from sieveqa.models.zoo import load_model

    if out is None:
        raise ConfigError("--format hf needs OUT, the folder to write")
    if int8 or calibrate is not None:
        raise ConfigError("--format hf writes fp32 weights; --int8 and --calibrate are for onnx and openvino")
    check_out(out)
    loaded = load_model(model)
    try:
        export_hf(loaded.configure(precision="fp32"), out)
    except ConfigError as err:
        raise ConfigError(f"{model}: {err}") from None
    console.print(f"exported {model} to {out}: sentence_transformers.CrossEncoder({str(out)!r}) loads it")


def _export_low_rank(model: str, out: Path | None, rank: int, quantized: bool) -> None:
    from sieveqa.exported.hf import check_out
    from sieveqa.models._saving import read_config
    from sieveqa.models.zoo import load_model

    if out is None:
        raise ConfigError("--format low-rank needs OUT, the model folder to write")
    if quantized:
        raise ConfigError("--format low-rank writes fp16; --int8 and --calibrate are for onnx and openvino")
    check_out(out)
    loaded = load_model(model)
    try:
        loaded.save_pretrained(out, extra={"low_rank_of": str(model)}, low_rank=rank)
    except ConfigError as err:
        raise ConfigError(f"{model}: {err}") from None
    entry = read_config(out)["low_rank"]
    size = sum(f.stat().st_size for f in out.iterdir()) / 1e6
    console.print(
        f"wrote {out} ({size:.1f} MB): {len(entry['matrices'])} matrices at rank {rank}, "
        f"keeping {entry['kept']:.0%} of the changes' norm"
    )


def _calibration(loaded: EncoderModel, dataset: str, rows: int, seed: int) -> list[dict[str, Any]]:
    """``rows`` (question, candidate) pairs of ``dataset``, sampled with ``seed``, collated in batches."""
    from sieveqa.data.registry import load_dataset

    examples = load_dataset(dataset)
    pairs = [(ex.question.text, c.text) for ex in examples for c in ex.candidates]
    if not pairs:
        raise ConfigError(f"--calibrate {dataset}: no (question, candidate) pairs")
    chosen = random.Random(seed).sample(pairs, min(rows, len(pairs)))
    features = loaded.featurizer.pairs(
        [q for q, _ in chosen], [t for _, t in chosen], loaded.config.max_length
    )
    return [batch for _, batch in loaded.batches(features)]
