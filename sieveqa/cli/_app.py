"""The ``sieveqa`` Typer app, its error handling, and the option types the commands share.

Every user error ends as one line on stderr (``error: ...``) and exit code 2: sieveqa's own errors
(``SieveQAError``, which name the file, line or field) and bad usage alike. Anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperGroup

from sieveqa.errors import ConfigError, SieveQAError, shorten

#: The write failures a user can remedy: a full disk or quota, a read-only or forbidden place.
_FULL_OR_LOCKED = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}
#: The longest error line printed (a bad input's value is already shortened where it is named).
_ERROR_LIMIT = 2000


class _Interrupted(Exception):
    """Ctrl-C or SIGTERM's stop, carried past typer (which would turn it into a silent exit 130)."""


class _Group(TyperGroup):
    """Runs a command with the errors a user can cause turned into one line and exit code 2."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as err:
            raise _Interrupted from err

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except SieveQAError as err:
            _fail(str(err))
        except sqlite3.OperationalError as err:  # SQLite says a full disk its own way
            if "disk is full" not in str(err):
                raise
            _fail(f"{err}: no space left on the device (an index is written whole or not at all)")
        except OSError as err:
            if err.errno not in _FULL_OR_LOCKED:
                raise
            # a full disk, a quota, a read-only or forbidden place: writes are atomic, so nothing is
            # left half-written; say where, once
            where = f": {err.filename}" if err.filename else ""
            _fail(
                f"{err.strerror or err}{where} (nothing was left half-written; make room, or write elsewhere)"
            )
        except typer.TyperException as err:  # click's usage errors: bad or missing options
            _fail(err.format_message(), err.exit_code)
        except (typer.Abort, KeyboardInterrupt, _Interrupted) as err:
            if isinstance(err.__cause__, EOFError):  # click turns every EOFError into an Abort
                _fail(f"an input ended early (a truncated file?): {err.__cause__}")
            _fail("interrupted", 130)
        except Exception as err:  # safetensors and torch say a full disk only in their errors' text
            if "No space left on device" not in str(err):
                raise
            _fail(
                f"no space left on the device ({type(err).__name__}); what is saved is written whole "
                "(a training run resumes from its last checkpoint once there is room)"
            )
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int = 2) -> None:
    typer.secho(f"error: {shorten(message, _ERROR_LIMIT)}", fg=typer.colors.RED, err=True)
    sys.exit(code)


app = typer.Typer(
    cls=_Group,
    help="sieveqa: answer sentence selection with as little transformer compute as the answer needs.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


class _Console(Console):
    """A console that goes quiet when its reader goes away (``sieveqa rank -o F | head``) and lets the
    command finish: the files it writes are its results (rich's own exits, leaving them unwritten)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # what is still buffered, flushed at exit, goes nowhere
        os.close(devnull)


# soft_wrap: long lines (paths, answers) are wrapped by the terminal, not cut with newlines by rich.
console = _Console(soft_wrap=True)


@app.callback()
def _root(
    threads: Annotated[
        int | None,
        typer.Option(
            min=1,
            envvar="SIEVEQA_THREADS",
            help="CPU threads every pool uses (torch, the tokenizer, ONNX Runtime, OpenVINO); "
            "default: one per core. Before the command: sieveqa --threads 2 answer ...",
        ),
    ] = None,
) -> None:
    """sieveqa: answer sentence selection with as little transformer compute as the answer needs."""
    if threads is not None:
        from sieveqa.device import use_threads

        use_threads(threads)


DatasetOpt = Annotated[
    str,
    typer.Option(
        "--dataset",
        "-d",
        help="dataset name: wikiqa:test, wikiqa:test-raw, trecqa:test-clean, squad-as2:test, jsonl:PATH",
    ),
]
ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="a saved model folder, or a shipped one: default, default-cascade, peasi-pr, "
        "peasi-cascade, peasi-easi, peasi-judge",
    ),
]
DeviceOpt = Annotated[str, typer.Option(help="auto (CUDA if available), cpu or cuda")]
PrecisionOpt = Annotated[
    str,
    typer.Option(
        help="auto (bf16 where the CPU or GPU has it natively; else fp16 on a GPU, fp32 on a CPU), "
        "fp32, bf16, fp16 (CUDA), int8 (with --backend torch: dynamic quantization; with onnx or "
        "openvino: the static export)"
    ),
]
BackendOpt = Annotated[
    str,
    typer.Option(
        help="where the model's layers run: torch, onnx (ONNX Runtime), openvino, or auto (the fastest "
        "measured at no loss on this kind of CPU); fp32 exports are made on first use, int8 ones by "
        "`sieveqa export MODEL --format F --int8`"
    ),
]
BatchOpt = Annotated[int | None, typer.Option(help="inputs per forward pass (default: the model's)")]
WarmUpOpt = Annotated[
    bool,
    typer.Option(
        "--warm-up",
        help="first run the model once at each bucketed batch shape (half precision on CUDA, where "
        "each new shape is slow once; nothing to do on a CPU)",
    ),
]


def warm_up_ranker(ranker: Any) -> None:
    """``--warm-up``: run the ranker's model at each of its batch shapes, and say what it took."""
    from sieveqa.runtime.policy import warm_up

    shapes, seconds = warm_up(ranker)
    console.print(f"[dim]warmed up at {shapes} batch shapes in {seconds:.1f} s[/dim]")


FusionOpt = Annotated[
    str | None,
    typer.Option(
        help="mix the first stage's scores into the model's: auto (the default: interp:0.2 where the "
        "candidates carry a retriever's scores, as beir: sets do; else nothing), none, interp:W "
        "(normalised interpolation) or rrf:W (reciprocal rank), W being the first stage's share "
        "(BM25 over the candidates where no scores are given)"
    ),
]
AlphaOpt = Annotated[
    str | None,
    typer.Option(
        "--alpha",
        help="cascade drop ratio: one value for every exit, or one per exit but the last "
        "(e.g. 0.5,0.3,0.3,0.2); default: the policy saved with the model",
    ),
]
PolicyOpt = Annotated[
    str | None, typer.Option("--policy", help="a policy.json written by tune-cascade (default: the model's)")
]
_LONG_HELP = (
    "a text longer than the model's input: read in windows, the best one counting (the default), or "
    "cut to its first tokens (one input a text: faster on long documents, less of them read)"
)
LongTextsOpt = Annotated[str, typer.Option("--long-texts", help=_LONG_HELP)]


def float_list(text: str | None, option: str) -> list[float] | None:
    """``"0.5,0.3"`` → ``[0.5, 0.3]``; None stays None."""
    if not text:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(
            f"{option}: expected comma-separated numbers, got {shorten(repr(text), 60)}"
        ) from None


def check_device(device: str, precision: str, backend: str = "torch") -> None:
    """Refuse an unknown or unavailable device, precision or backend before any work starts."""
    from sieveqa.device import resolve_device, resolve_precision

    if backend == "torch":
        resolve_precision(precision, resolve_device(device))
    else:
        from sieveqa.exported import backend_precision, device_for

        backend_precision(backend, precision, resolve_device(device_for(backend, device)))


def main() -> None:
    """Entry point of the ``sieveqa`` command."""
    app()
