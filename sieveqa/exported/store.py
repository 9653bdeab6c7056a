"""Where exported bodies live and how a loaded model finds (or makes) its own.

An export is keyed by the body's fingerprint (sha256 of its tensors), not by the model's name or
folder: a retrofit cascade that shares the default's body uses the default's export, and a model
retrained in place never picks up a stale one. Layout, under ``$SIEVEQA_CACHE/exports/``::

    <fingerprint[:16]>/<format>-<precision>/export.json   what it is, from what, made how
                                         /layer00.onnx …  one graph per layer (.xml/.bin for OpenVINO)

A folder is written whole beside its final name and renamed into place, under a lock, so a killed
export leaves nothing a reader would take for finished. The manifest records each file's sha256 and
the runtime's version, checked when a model opens the export: a damaged or foreign fp32 export is
made again (it is made on first use anyway), an int8 one is refused in a line naming its folder.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from filelock import FileLock
from torch import Tensor

from sieveqa.device import cpu_info, native_bf16, resolve_precision
from sieveqa.encoder import LayerRunner, SteppableEncoder
from sieveqa.errors import (
    ConfigError,
    DeviceError,
    MissingExtraError,
    ModelFormatError,
    SieveQAError,
    shorten,
)
from sieveqa.exported import graphs, quantize, runners
from sieveqa.io import atomic_dir, atomic_write_json, file_sha256
from sieveqa.paths import cache_root

BACKENDS: tuple[str, ...] = ("auto", "torch", "onnx", "openvino")
FORMATS: tuple[str, ...] = ("onnx", "openvino")
MANIFEST = "export.json"


def backend_precision(backend: str, precision: str, device: torch.device) -> str:
    """The concrete precision an exported ``backend`` runs at; impossible pairs are refused.

    ONNX Runtime: fp32 (``auto``) or int8. OpenVINO: ``auto`` is bf16 where the CPU multiplies it
    natively, else fp32; int8 as exported. Neither runs here on CUDA.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend in ("auto", "torch"):
        return resolve_precision(precision, device) if backend == "torch" else precision
    if device.type != "cpu":
        raise DeviceError(f"--backend {backend} runs on the CPU; use --backend torch on {device.type}")
    allowed = {"onnx": ("fp32", "int8"), "openvino": ("fp32", "bf16", "int8")}[backend]
    if precision == "auto":
        return "bf16" if backend == "openvino" and native_bf16() else "fp32"
    if precision not in allowed:
        raise DeviceError(f"--backend {backend} runs at {' or '.join(allowed)}, not {precision}")
    if precision == "bf16" and not native_bf16():
        raise DeviceError("bf16 needs a CPU that multiplies it natively (AVX512-BF16 or AMX); use fp32")
    return precision


def device_for(backend: str, device: str) -> str:
    """The device a model runs on with ``backend``: exported graphs run on the CPU, so ``auto`` means
    the CPU for them even where a GPU is."""
    return "cpu" if device == "auto" and backend in FORMATS else device


def export_folder(fingerprint: str, fmt: str, precision: str) -> Path:
    """Where the ``fmt`` export at ``precision`` (fp32 or int8) of the body ``fingerprint`` lives."""
    try:
        return cache_root() / "exports" / fingerprint[:16] / f"{fmt}-{precision}"
    except ConfigError as err:  # no cache: an export is missing, as --backend auto takes it
        raise ModelFormatError(str(err)) from None


#: The library that reads each format: an export made under another version of it is made again.
RUNTIMES = {"onnx": "onnxruntime", "openvino": "openvino"}
#: Files already checked against their manifest in this process: (path, size, mtime_ns).
_VERIFIED: set[tuple[str, int, int]] = set()


def read_manifest(folder: Path, fingerprint: str) -> dict[str, Any] | None:
    """The manifest of a finished export of body ``fingerprint`` in ``folder``, or None if there is none;
    an export of another body or runtime version, with files missing or damaged, is an error naming
    the folder."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ModelFormatError(
            f"{path}: unreadable export manifest ({err}); delete {folder} and export again"
        ) from err
    if manifest.get("body_fingerprint") != fingerprint:
        raise ModelFormatError(f"{path}: an export of another body; delete {folder} and export again")
    missing = [name for name in manifest.get("files", []) if not (folder / name).is_file()]
    if missing or not manifest.get("files"):
        raise ModelFormatError(
            f"{folder}: export files missing ({', '.join(missing[:3]) or 'all'}); export again"
        )
    runtime = RUNTIMES.get(manifest.get("format", ""), "")
    made, here = manifest.get("versions", {}).get(runtime), _versions(manifest["format"]).get(runtime)
    if "sha256" not in manifest:
        raise ModelFormatError(
            f"{folder}: made by an older sieveqa (no checksums); delete it and export again"
        )
    if made != here:
        raise ModelFormatError(
            f"{folder}: made by {runtime} {made}, this is {here}; delete it and export again"
        )
    for name, digest in manifest["sha256"].items():
        stat = (folder / name).stat()
        key = (str(folder / name), stat.st_size, stat.st_mtime_ns)
        if key not in _VERIFIED:
            if file_sha256(folder / name) != digest:
                raise ModelFormatError(
                    f"{folder / name}: damaged (sha256 differs); delete {folder} and export again"
                )
            _VERIFIED.add(key)
    return manifest


def _versions(fmt: str) -> dict[str, str]:
    names = ["torch", "onnx", "onnxruntime"] + (["openvino", "nncf"] if fmt == "openvino" else [])
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def build_export(
    encoder: SteppableEncoder,
    fingerprint: str,
    fmt: str,
    int8: bool = False,
    calibration: Iterable[Mapping[str, Tensor]] | None = None,
    about: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
    replace: bool = True,
) -> Path:
    """Export ``encoder``'s body (fingerprint ``fingerprint``) to ``fmt``, int8 calibrated on the
    collated ``calibration`` batches when ``int8``; ``about`` (model, calibration set) goes into the
    manifest. Replaces an earlier export of the same kind (unless ``replace`` is False and one
    exists); returns its folder."""
    if fmt not in FORMATS:
        raise ConfigError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if int8 and calibration is None:
        raise ConfigError("an int8 export needs calibration batches")
    say = progress or (lambda _: None)
    folder = export_folder(fingerprint, fmt, "int8" if int8 else "fp32")
    try:
        lock = _lock(folder)
        lock.acquire()
    except OSError as err:  # a read-only cache: a container's read-only layer, a shared install
        raise ModelFormatError(
            f"{folder.parent}: cannot write an export there ({err.strerror or err}); "
            "set SIEVEQA_CACHE to a writable folder"
        ) from err
    try:
        if not replace and _finished(folder, fingerprint):
            return folder  # another process made it while this one waited for the lock
        _write_export(encoder, fingerprint, fmt, int8, calibration, about, say, folder)
    except (OSError, RuntimeError, ValueError) as err:
        # The exporters' and quantizers' own failures (and a full disk) as one line.
        raise ModelFormatError(f"{folder}: export to {fmt} failed: {err}") from err
    finally:
        lock.release()
    return folder


def _finished(folder: Path, fingerprint: str) -> bool:
    """Whether ``folder`` holds a sound export of ``fingerprint`` (a damaged one is not)."""
    try:
        return read_manifest(folder, fingerprint) is not None
    except ModelFormatError:
        return False


def _write_export(
    encoder: SteppableEncoder,
    fingerprint: str,
    fmt: str,
    int8: bool,
    calibration: Iterable[Mapping[str, Tensor]] | None,
    about: Mapping[str, Any] | None,
    say: Callable[[str], None],
    folder: Path,
) -> None:
    started = time.perf_counter()
    with atomic_dir(folder) as tmp:
        onnx_dir = tmp / "fp32" if fmt == "openvino" or int8 else tmp
        onnx_dir.mkdir(exist_ok=True)
        say(f"exporting {encoder.num_layers} layers to ONNX")
        files = graphs.export_onnx(encoder, onnx_dir)
        samples = None
        if int8:
            say("recording layer inputs for calibration")
            samples = graphs.record_inputs(encoder, calibration or [])
            if not samples[0]:
                raise ConfigError("the calibration set has no rows")
        if fmt == "openvino":
            say("converting to OpenVINO" + (" int8 (NNCF)" if int8 else ""))
            files = [
                quantize.convert_openvino(onnx_dir, tmp, i, samples[i] if samples else None)
                for i in range(encoder.num_layers)
            ]
        elif int8:
            say("quantizing to int8 (ONNX Runtime, static)")
            files = [quantize.quantize_onnx(onnx_dir, tmp, i, samples[i]) for i in range(encoder.num_layers)]
        if onnx_dir != tmp:
            shutil.rmtree(onnx_dir)
        rows = sum(batch["mask"].shape[0] for batch in samples[0]) if samples else 0
        sums = {p.relative_to(tmp).as_posix(): file_sha256(p) for p in sorted(tmp.rglob("*")) if p.is_file()}
        model = cpu_info()[0]
        atomic_write_json(
            tmp / MANIFEST,
            {
                "format": fmt,
                "precision": "int8" if int8 else "fp32",
                "files": files,
                "sha256": sums,
                "layers": encoder.num_layers,
                "hidden_size": encoder.hidden_size,
                "body_fingerprint": fingerprint,
                "opset": graphs.OPSET,
                "calibration_rows": rows,
                "versions": _versions(fmt),
                "cpu": model,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "seconds": round(time.perf_counter() - started, 1),
                **(about or {}),
            },
        )


def _lock(folder: Path) -> FileLock:
    """One writer of an export at a time, across processes; a second waits for the first."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(folder.parent / f".{folder.name}.lock"))


def open_runner(
    encoder: SteppableEncoder,
    fingerprint: str,
    backend: str,
    precision: str,
    threads: int,
    model: str = "MODEL",
) -> LayerRunner:
    """The layer runner of ``encoder``'s export for ``backend`` at ``precision``. An fp32 export that
    does not exist yet, or is damaged, is made now (seconds); an int8 one must have been made by
    ``sieveqa export`` (errors name that command for ``model``). It is read under the writers' lock
    (when the cache is writable), so no export is replaced while it opens."""
    stored = "int8" if precision == "int8" else "fp32"
    folder = export_folder(fingerprint, backend, stored)
    if stored == "fp32" and not _finished(folder, fingerprint):
        # Made now, unless another process makes it first; a damaged one is made again.
        build_export(encoder, fingerprint, backend, replace=(folder / MANIFEST).is_file())
    with _reading(folder):
        try:
            manifest = read_manifest(folder, fingerprint)
        except ModelFormatError as err:
            if stored == "fp32":  # made again above unless the cache cannot be written: said as it is
                raise
            raise ModelFormatError(f"{err} (`sieveqa export {model} --format {backend} --int8`)") from None
        if manifest is None:
            raise ModelFormatError(
                f"no int8 {backend} export of {model} yet: run `sieveqa export {model} --format {backend} "
                "--int8` (it calibrates on a dev slice; --calibrate FILE.jsonl for your own pairs)"
            )
        if manifest["layers"] != encoder.num_layers:
            raise ModelFormatError(
                f"{folder}: {manifest['layers']} layers exported, the model has {encoder.num_layers}"
            )
        try:
            if backend == "onnx":
                return runners.OnnxRuntimeLayers(folder, manifest["files"], threads)
            return runners.OpenVinoLayers(folder, manifest["files"], threads, precision)
        except SieveQAError:
            raise
        except Exception as err:  # the runtime's own load errors (InvalidProtobuf, RuntimeError, ...)
            reason = shorten(str(err))
            raise ModelFormatError(
                f"{folder}: {backend} cannot load it ({reason}); delete it and export again"
            ) from err


@contextlib.contextmanager
def _reading(folder: Path) -> Iterator[None]:
    """The writers' lock while an export is opened; none in a read-only cache (nobody writes there)."""
    try:
        lock = _lock(folder)
        lock.acquire()
    except OSError:
        yield
        return
    try:
        yield
    finally:
        lock.release()


def attach(
    encoders: Sequence[SteppableEncoder],
    device: torch.device,
    backend: str,
    precision: str,
    model: str = "MODEL",
) -> tuple[str, str]:
    """Run ``encoders``' layers on ``backend`` at ``precision`` and return the concrete pair used
    (``model``: how errors name the model, a shipped name or its folder).

    ``auto`` tries the measured choices of this CPU kind (:func:`~sieveqa.exported.choice.auto_choices`)
    in order, skipping one whose export or library is missing, and ends with torch. The runners are all
    opened before any is set, so a failure leaves the encoders as they were.
    """
    from sieveqa.exported.choice import auto_choices

    candidates = auto_choices(precision) if backend == "auto" else [(backend, precision)]
    for tried, (name, asked) in enumerate(candidates, start=1):
        try:
            concrete = backend_precision(name, asked, device)
            found = [
                None
                if name == "torch"
                else open_runner(enc, enc.fingerprint(), name, concrete, torch.get_num_threads(), model)
                for enc in encoders
            ]
        except (ModelFormatError, DeviceError, MissingExtraError):
            if tried == len(candidates):
                raise
            continue
        for enc, runner in zip(encoders, found, strict=True):
            enc.runner = runner
        return name, concrete
    raise AssertionError("auto_choices always ends with torch")
