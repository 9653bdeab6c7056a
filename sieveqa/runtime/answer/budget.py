"""One compute budget for an answer: ``--budget-ms N`` picks how an answering method runs.

An answer's time is spent in places the project can trade against accuracy: how many passages BM25
retrieves, how many of them (or of their sentences) a cascade's exits drop, where the layers run (torch,
or an int8 OpenVINO export), and the stages a method may drop (below). ``bench/budget.py`` measures a
grid of these settings for each sentence method on SQuAD passages dev (P@1, and p50 milliseconds per
question, retrieval included) and records it per CPU kind in ``resources/budgets.json``. A budget then
takes, among the settings of the method whose p50 is within N ms, the one with the best dev P@1 (the
faster one on a tie); when none is, the fastest, and says so. The times are this project's 2-thread
measurements on one machine of the kind: a budget is a target for p50, not a limit on any one question.
Where the table has no ``torch:fp32`` setting, each ``torch:bf16`` one has an fp32 twin whose p50 is
estimated from the pairs/s ratio measured on that CPU kind (``resources/backends.json``), said as such;
on a CPU without native bf16 (emulated, 40x slower per matmul) the bf16 settings are not offered at all.

The judge and PEASI's second look are stages a budget accounts for too: a setting measured without one
(or with EASI reading fewer passages) runs on a method loaded with it, which drops or shortens the stage
(``AnswerMethod.lightened``). The calibrated confidence was fitted for the method as loaded, so such a
setting answers without it (and never abstains): where the answerer has a confidence, the settings that
keep it come first among those within the budget (only those where abstention is asked for:
``min_confidence``), and one that drops it says so in the answer's budget note.

``load_answerer(..., budget_ms=N)`` chooses every lever before the models load; an Answerer already
loaded (the service's) can still move the cheap ones per request (``Answerer.within``): among the
settings measured for its method and backend, the number of passages, the drop ratio, and the stages
above.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from sieveqa.errors import ConfigError, ModelFormatError

__all__ = ["BUDGETS", "DROPPABLE", "Choice", "Setting", "choose", "join_notes", "load_settings"]

BUDGETS = Path(__file__).resolve().parent.parent.parent / "resources" / "budgets.json"
#: The stages a budget may drop from a loaded method: the role of their model, and the lever (with
#: its value) that drops it (``AnswerMethod.lightened``).
DROPPABLE = {"judge": ("judge", "none"), "second_look": ("second_look", 0)}
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Setting:
    """One measured way to run a method: its levers, and what it gave on dev."""

    method: str
    retrieve: int
    #: ``BACKEND:PRECISION`` as the models really ran (``torch:bf16``, ``openvino:int8``).
    system: str
    #: The drop ratios of the method's cascade, one per exit but the last, or one for all (None: the
    #: method has no cascade).
    drop_ratios: tuple[float, ...] | None
    p50_ms: float
    p_at_1: float
    #: The model options the setting needs beside the method's defaults (PEASI's cascade reranker).
    options: tuple[tuple[str, Any], ...] = ()
    #: The models it ran, by role (as ``AnswerMethod.model_names``).
    models: tuple[tuple[str, str], ...] = ()
    #: How its p50 was estimated, when it was not measured.
    estimated: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> Setting:
        try:
            # Options keep their JSON types (a method's options are typed); models are names.
            options = tuple(sorted((str(k), v) for k, v in dict(data.get("options", {})).items()))
            models = tuple(sorted((str(k), str(v)) for k, v in dict(data.get("models", {})).items()))
            return cls(
                str(data["method"]), int(data["retrieve"]), str(data["system"]),
                _ratios(data.get("drop_ratios")),
                float(data["p50_ms"]), float(data["p_at_1"]), options, models,
            )  # fmt: skip
        except (KeyError, TypeError, ValueError) as err:
            raise ModelFormatError(f"{where}: a budget setting is malformed ({err!r}): {data}") from None

    def as_dict(self) -> dict[str, Any]:
        ratios = None if self.drop_ratios is None else list(self.drop_ratios)
        return {
            **asdict(self),
            "drop_ratios": ratios,
            "options": dict(self.options),
            "models": dict(self.models),
        }

    @property
    def backend(self) -> str:
        return self.system.partition(":")[0]

    @property
    def precision(self) -> str:
        return self.system.partition(":")[2]

    def runs_on(self, method: Any) -> bool:
        """Whether ``method`` (loaded) runs this setting: the same models, but for stages the setting
        drops (``DROPPABLE``), and levers it can move (``blocked``)."""
        names, mine = dict(getattr(method, "model_names", {})), dict(self.models)
        same = all(names.get(role) == name for role, name in mine.items())
        return same and set(names) - set(mine) <= set(DROPPABLE) and not self.blocked(method)

    def blocked(self, method: Any) -> str:
        """Why ``method`` (loaded) cannot move its levers to this setting (a stage it did not load
        cannot come back), or "" when it can."""
        try:
            method.lightened(**self.levers(method))
        except ConfigError as err:
            return str(err)
        return ""

    def levers(self, method: Any) -> dict[str, Any]:
        """What ``method`` (loaded) moves to run this setting (``AnswerMethod.lightened``): each of its
        ``budget_levers`` at this setting's value, or at the method's default where the setting names
        none (a setting's options are relative to the defaults); the judge where it names one; the
        stages it drops."""
        defaults, mine = _defaults(type(method)), dict(self.options)
        out = {k: mine.get(k, defaults[k]) for k in method.budget_levers if k in defaults}
        if "judge" in mine:
            out["judge"] = mine["judge"]
        names, models = dict(getattr(method, "model_names", {})), dict(self.models)
        for role, (lever, value) in DROPPABLE.items():
            if role in names and role not in models:
                out[lever] = value
        return out

    def keeps_confidence(self, calibration: Any, method_class: type) -> bool:
        """Whether answers at this setting may carry ``calibration``'s confidence: it was fitted for
        this setting's models, at the method's default choice (its ``budget_levers`` at their
        defaults)."""
        if calibration is None or calibration.models != dict(self.models):
            return False
        defaults, mine = _defaults(method_class), dict(self.options)
        return all(mine.get(k, defaults.get(k)) == defaults.get(k) for k in method_class.budget_levers)

    def load_options(self) -> dict[str, Any]:
        """What ``load_answerer`` takes to run this setting."""
        ratios = None if self.drop_ratios is None else ",".join(f"{r:g}" for r in self.drop_ratios)
        return {"retrieve": self.retrieve, "backend": self.backend, "precision": self.precision,
                "drop_ratios": ratios, **dict(self.options)}  # fmt: skip


def _defaults(method_class: type) -> dict[str, Any]:
    """A method class's options at their defaults, by name."""
    options = getattr(method_class, "options_class", None)
    return {f.name: f.default for f in fields(options)} if options is not None else {}


def _ratios(value: Any) -> tuple[float, ...] | None:
    if value is None:
        return None
    return tuple(float(x) for x in (value if isinstance(value, list | tuple) else [value]))


@dataclass(frozen=True)
class Choice:
    """The setting a budget chose, and a note when it is not what the budget asked for."""

    setting: Setting
    budget_ms: float
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"budget_ms": self.budget_ms, **self.setting.as_dict(), "note": self.note}


@functools.lru_cache(maxsize=4)
def _read(path: str, mtime_ns: int) -> dict[str, Any]:
    """The table as last written (a server's requests read it without touching the disk again)."""
    return json.loads(Path(path).read_text())


def load_settings(
    kind: str | None = None, path: Path | None = None, native: bool | None = None
) -> tuple[list[Setting], str]:
    """The settings measured on this CPU kind (or ``kind``), and a note when they come from another
    kind (the only one measured: its times are then only a guide); with fp32 estimates, and without
    bf16 ones unless the CPU has ``native`` bf16 (default: this one's)."""
    from sieveqa.device import native_bf16
    from sieveqa.exported.choice import cpu_kind

    path = path or BUDGETS
    try:
        table = _read(str(path), path.stat().st_mtime_ns) if path.is_file() else {}
    except (OSError, json.JSONDecodeError) as err:
        raise ModelFormatError(f"{path}: unreadable budget settings ({err})") from err
    kind = kind or cpu_kind()
    note = ""
    if kind not in table:
        if not table:
            raise ConfigError(f"--budget-ms: no settings measured ({path} is missing; run bench/budget.py)")
        measured = sorted(table)[0]
        note = f"latencies measured on a {measured} CPU, not on this {kind} one: a guide only"
        kind = measured
    rows = [Setting.from_dict(r, f"{path} [{kind}]") for r in table[kind].get("settings", [])]
    return _runnable(rows, kind, native_bf16() if native is None else native), note


def _runnable(settings: list[Setting], kind: str, native: bool) -> list[Setting]:
    """``settings`` with an estimated torch:fp32 twin of each torch:bf16 one where no fp32 one was
    measured; the bf16 ones dropped on a CPU without native bf16."""
    from sieveqa.exported.choice import measured_speeds

    speeds = measured_speeds(kind)
    twins = []
    if "torch:fp32" not in {s.system for s in settings} and {"torch:bf16", "torch:fp32"} <= set(speeds):
        ratio = speeds["torch:bf16"] / speeds["torch:fp32"]
        how = f"p50 estimated: torch:bf16's x {ratio:.2f}, the pairs/s ratio measured on {kind}"
        twins = [
            replace(s, system="torch:fp32", p50_ms=round(s.p50_ms * ratio, 1), estimated=how)
            for s in settings
            if s.system == "torch:bf16"
        ]
    return [s for s in settings if native or s.precision != "bf16"] + twins


def choose(
    budget_ms: float,
    method: str,
    settings: list[Setting],
    system: str | None = None,
    note: str = "",
    confident: Callable[[Setting], bool] | None = None,
) -> list[Choice]:
    """The settings of ``method`` (on ``system`` only, when given) best first for ``budget_ms``: those
    within it by dev P@1 (then speed), then the rest fastest first, each with a note saying it is
    over the budget. With ``confident`` (whether a setting keeps the answerer's calibrated confidence)
    those within the budget that keep it come first: a budget drops the confidence only to fit."""
    if isinstance(budget_ms, float) and math.isnan(budget_ms):
        raise ConfigError("--budget-ms: nan is not a number; give a positive number of milliseconds")
    if not isinstance(budget_ms, int | float) or isinstance(budget_ms, bool) or not 0 < budget_ms < math.inf:
        raise ConfigError(f"--budget-ms must be a positive number of milliseconds, got {budget_ms!r}")
    mine = [s for s in settings if s.method == method and (system is None or s.system == system)]
    if not mine:
        where = f" on {system}" if system else ""
        raise ConfigError(f"--budget-ms: no settings measured for --method {method}{where}")
    keeps = confident or (lambda s: True)
    within = sorted(
        (s for s in mine if s.p50_ms <= budget_ms), key=lambda s: (not keeps(s), -s.p_at_1, s.p50_ms)
    )
    over = sorted((s for s in mine if s.p50_ms > budget_ms), key=lambda s: s.p50_ms)
    out = [Choice(s, budget_ms, join_notes(note, s.estimated)) for s in within]
    for s in over:
        miss = f"no measured setting answers within {budget_ms:g} ms; this one took {s.p50_ms:g} ms at p50"
        out.append(Choice(s, budget_ms, join_notes(note, miss, s.estimated)))
    return out


def join_notes(*notes: str) -> str:
    """The non-empty ``notes``, joined."""
    return "; ".join(n for n in notes if n)
