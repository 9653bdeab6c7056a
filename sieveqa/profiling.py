"""Where a call's time goes: named stages, timed while a :class:`Profile` is active.

``answer --profile`` (and ``bench/answer_latency.py --profile``) runs a question under ``profiled()``;
the answering stages (retrieval, passage rerank, sentence selection, second look, judge) and the work
every model shares (``tokenize``: text to token ids and rows; ``collate``: rows to padded tensors;
``model``: the forward passes, with the FLOPs they ran, padding included) each open a ``stage``. A
stage inside another counts in both; what a stage spent outside its inner ones is its own Python
work (``other``). Without an active profile a stage costs one context-variable read, so the hooks
stay in the code paths that production runs. A profile belongs to one thread of work at a time, as a
``Cost`` belongs to one call; work a model hands to another thread (batches made ahead on CUDA) is
counted in the stage that waits for it.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from sieveqa.cost import Cost

__all__ = ["LEAVES", "Profile", "profiled", "render", "stage", "timed"]

#: The stages every model shares, reported inside the answering stage that ran them.
LEAVES = ("tokenize", "collate", "model")

_ACTIVE: ContextVar[Profile | None] = ContextVar("sieveqa_profile", default=None)
P = ParamSpec("P")
R = TypeVar("R")


@dataclass
class Profile:
    """Seconds and FLOPs by stage path (``("judge", "model")``), summed over every call profiled."""

    seconds: dict[tuple[str, ...], float] = field(default_factory=dict)
    flops: dict[tuple[str, ...], int] = field(default_factory=dict)
    #: Wall seconds of the profiled calls themselves (what the stages are shares of).
    total: float = 0.0
    calls: int = 0
    _open: list[str] = field(default_factory=list)

    def add(self, path: tuple[str, ...], seconds: float, flops: int = 0) -> None:
        self.seconds[path] = self.seconds.get(path, 0.0) + seconds
        if flops:
            self.flops[path] = self.flops.get(path, 0) + flops

    def stages(self) -> list[dict[str, Any]]:
        """One row per outermost stage, in the order first seen, per call: ``ms``, ``gflops`` and its
        ``tokenize`` / ``collate`` / ``model`` / ``other`` ms; then ``unstaged`` (the rest of the calls)."""
        n = max(self.calls, 1)
        rows, staged = [], 0.0
        for path, seconds in self.seconds.items():
            if len(path) != 1:
                continue
            inner = {} if path[0] in LEAVES else {leaf: self._inside(path, leaf) for leaf in LEAVES}
            flops = sum(f for p, f in self.flops.items() if p[: len(path)] == path)
            row: dict[str, Any] = {"stage": path[0], "ms": seconds / n * 1000, "gflops": flops / n / 1e9}
            if inner:
                row |= {leaf: s / n * 1000 for leaf, s in inner.items()}
                row["other"] = max(seconds - sum(inner.values()), 0.0) / n * 1000
            rows.append(row)
            staged += seconds
        rows.append({"stage": "unstaged", "ms": max(self.total - staged, 0.0) / n * 1000, "gflops": 0.0})
        return rows

    def _inside(self, path: tuple[str, ...], leaf: str) -> float:
        """Seconds of ``leaf`` stages anywhere under ``path``, not counting one inside another leaf."""
        return sum(
            s
            for p, s in self.seconds.items()
            if p[: len(path)] == path and p[-1] == leaf and not set(p[len(path) : -1]) & set(LEAVES)
        )

    def as_dict(self) -> dict[str, Any]:
        """Per call: the wall ms and each stage's row (``stages``), rounded."""
        rows = [{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in self.stages()]
        return {"calls": self.calls, "ms": round(self.total / max(self.calls, 1) * 1000, 2), "stages": rows}


@contextlib.contextmanager
def profiled(profile: Profile | None = None) -> Iterator[Profile]:
    """Profile the calls made inside (one more into ``profile`` if given)."""
    profile = profile if profile is not None else Profile()
    token = _ACTIVE.set(profile)
    started = time.perf_counter()
    try:
        yield profile
    finally:
        profile.total += time.perf_counter() - started
        profile.calls += 1
        _ACTIVE.reset(token)


@contextlib.contextmanager
def stage(name: str, cost: Cost | None = None) -> Iterator[None]:
    """Time what runs inside as stage ``name`` of the active profile (none: nothing); with ``cost``,
    the FLOPs it adds to that cost meanwhile count as the stage's."""
    profile = _ACTIVE.get()
    if profile is None:
        yield
        return
    depth = len(profile._open)
    profile._open.append(name)
    path = tuple(profile._open)
    flops = cost.flops if cost is not None else 0
    started = time.perf_counter()
    try:
        yield
    finally:
        spent = cost.flops - flops if cost is not None else 0
        profile.add(path, time.perf_counter() - started, spent)
        # Back to the depth it opened at: a stage left open inside (a generator abandoned while
        # suspended in one) is closed with it, not mistaken for the next stage up.
        del profile._open[depth:]


def timed(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A function's calls as stage ``name`` (``@timed("tokenize")``)."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            if _ACTIVE.get() is None:
                return fn(*args, **kwargs)
            with stage(name):
                return fn(*args, **kwargs)

        return inner

    return wrap


def render(profile: Profile, what: str = "a question") -> Any:
    """The profile as a rich table: ms and GFLOPs per call (``what`` one call is) by stage."""
    from rich.table import Table

    table = Table(title=f"where {what}'s time went (mean of {profile.calls}, ms)", title_justify="left")
    for name in ("stage", "ms", "GFLOPs", *LEAVES, "other"):
        table.add_column(name, justify="left" if name == "stage" else "right")
    for row in profile.stages():
        cells = [f"{row[k]:.1f}" if k in row else "" for k in (*LEAVES, "other")]
        gflops = f"{row['gflops']:.1f}" if row["gflops"] else ""
        table.add_row(row["stage"], f"{row['ms']:.1f}", gflops, *cells)
    total = profile.total / max(profile.calls, 1) * 1000
    table.add_row("[bold]total[/bold]", f"[bold]{total:.1f}[/bold]", "")
    return table
