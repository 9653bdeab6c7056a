"""A budget applied: ``--budget-ms`` when an answerer loads (``load_within``), and on an answerer
already loaded (``choose_for``, ``run_at``: a server's per-request ``budget_ms``), from the settings
``runtime.answer.budget`` reads.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sieveqa.errors import ConfigError, DeviceError, MissingExtraError, ModelFormatError
from sieveqa.runtime.answer.budget import DROPPABLE, Choice, Setting, choose, join_notes, load_settings
from sieveqa.runtime.answer.confidence import load_confidence
from sieveqa.runtime.answer.method import method_options

__all__ = ["choose_for", "load_within", "models_text", "run_at", "unconfident"]

log = logging.getLogger(__name__)


def load_within(
    load: Callable[..., Any],
    budget_ms: float,
    method: str,
    index: str | None,
    retriever: str,
    top: int,
    device: str,
    batch_size: int | None,
    confidence: str | None,
    min_confidence: float | None,
    options: dict[str, Any],
    given: dict[str, Any],
    fitting: bool,
) -> Any:
    """``load`` (``load_answerer``) at the best measured setting within ``budget_ms`` among those with the
    ``given`` retrieve, backend or precision; one whose export is not made here (int8) or whose
    library is missing gives way to the next."""
    cls, _ = method_options(method, options)  # a bad option fails before the table is read
    chosen = sorted(k for k, v in options.items() if v is not None)
    if chosen:  # the table's numbers are for the method's measured models and settings only
        flags = ", ".join("--" + k.replace("_", "-") for k in chosen)
        raise ConfigError(
            "--budget-ms chooses the method's settings itself (timed for its shipped models only); "
            f"drop {flags}"
        )
    settings, note = load_settings()
    if given:  # the user's own flags stand: the budget chooses among the settings that have them
        settings = [s for s in settings if all(getattr(s, k) == v for k, v in given.items())]
        if not any(s.method == method for s in settings):
            flags = " ".join(f"--{k} {v}" for k, v in given.items())
            raise ConfigError(
                f"--budget-ms: no setting of --method {method} was measured with {flags}; drop it"
            )
    calibration = load_confidence(confidence).get(method)
    if min_confidence is not None or confidence is not None:  # abstention asked: settings that keep it
        kept = [s for s in settings if calibration is None or s.keeps_confidence(calibration, cls)]
        if any(s.method == method for s in settings) and not any(s.method == method for s in kept):
            raise ConfigError(
                f"--budget-ms: no setting measured for --method {method} keeps the calibrated confidence "
                "that --min-confidence (or --confidence) asks for; drop it (or the budget)"
            )
        settings = kept

    def confident(setting: Setting) -> bool:
        return setting.keeps_confidence(calibration, cls)

    skipped = []
    for choice in choose(budget_ms, method, settings, note=note, confident=confident):
        try:
            answerer = load(
                method, index, retriever=retriever, top=top, device=device, batch_size=batch_size,
                confidence=confidence, min_confidence=min_confidence, fitting=fitting,
                **options, **choice.setting.load_options(),
            )  # fmt: skip
        except (ModelFormatError, MissingExtraError, DeviceError) as err:
            skipped.append(f"{choice.setting.system}: {err}")
            continue
        if calibration is not None and not confident(choice.setting):
            answerer.confidence, answerer.min_confidence = None, 0.0  # fitted at the default choice
            unsure = _never_abstains(_dropped(choice.setting, calibration.models))
            if not any(confident(s) for s in settings if s.method == method):
                unsure += f" (no setting measured for {method} here keeps it: bench/budget.py measures them)"
            choice = replace(choice, note=join_notes(choice.note, unsure))
        answerer.budget = choice
        if skipped:
            log.warning("--budget-ms skipped %s", "; ".join(skipped))
        return answerer  # its note, if any, is on the answerer and every answer (the CLI prints it)
    raise ConfigError(f"--budget-ms: no measured setting could load ({'; '.join(skipped)})")


def unconfident(method: Any, lighter: Any) -> str:
    """What a budget's setting dropped or moved, and that the answers lose their confidence."""
    stages = (("judge", "judge"), ("look", "second look"))
    had = [
        (name, getattr(lighter, attr, None))
        for attr, name in stages
        if getattr(method, attr, None) is not None
    ]
    return _never_abstains([name for name, now in had if now is None])


def _dropped(setting: Setting, calibrated: dict[str, str]) -> list[str]:
    """The stages (``DROPPABLE``) a setting runs without, of those a calibration read."""
    mine, options = dict(setting.models), dict(setting.options)
    return [
        role.replace("_", " ")
        for role, (lever, value) in DROPPABLE.items()
        if role in calibrated and (role not in mine or options.get(lever) == value)
    ]


def _never_abstains(dropped: list[str]) -> str:
    what = f"drops the {' and the '.join(dropped)}" if dropped else "moves the answer's choice"
    return f"this setting {what}: no calibrated confidence, the answer never abstains"


def choose_for(method: Any, confidence: Any, budget_ms: float, keep_confidence: bool = False) -> Choice:
    """The measured setting of loaded ``method``'s models and backend that answers best within
    ``budget_ms`` at p50, one that keeps its ``confidence`` first; with ``keep_confidence`` only those
    (ConfigError when none was measured for its models, or for them less a stage a budget drops)."""
    settings, note = load_settings()
    cls, named = type(method), dict(getattr(method, "model_names", {}))
    usable = [s for s in settings if s.method == method.name and s.runs_on(method)]
    measured = {s.models for s in settings if s.method == method.name}
    blocked = [
        s.blocked(method)
        for s in settings
        if s.method == method.name and s.models == tuple(sorted(named.items()))
    ]
    if measured and not usable and any(blocked):  # measured for its models, with a stage it did not load
        raise ConfigError(
            "--budget-ms: no setting measured for these models runs on this answerer "
            f"({next(filter(None, blocked))})"
        )
    if measured and not usable:  # e.g. PEASI's defaults changed since its grid was measured
        raise ConfigError(
            f"--budget-ms: the settings of --method {method.name} were measured with "
            f"{' or '.join(models_text(dict(m)) for m in sorted(measured))}, not {models_text(named)}; "
            "load it with the budget instead (load_answerer(..., budget_ms=N) or answer --budget-ms), "
            "or measure the grid again (bench/budget.py)"
        )
    if keep_confidence:
        usable = [s for s in usable if s.keeps_confidence(confidence, cls)]
        if not usable:
            raise ConfigError(
                "--budget-ms: no setting measured for these models keeps the calibrated confidence that "
                "min_confidence asks for; drop min_confidence (or the budget)"
            )
    keeps = functools.partial(Setting.keeps_confidence, calibration=confidence, method_class=cls)
    return choose(budget_ms, method.name, usable, method.system, note, keeps)[0]


def run_at(method: Any, confidence: Any, choice: Choice) -> tuple[Any, Choice, bool]:
    """Loaded ``method`` as ``choice``'s setting runs it (drop ratios, levers, stages dropped), the
    choice with a note where the setting loses ``confidence``, and whether it keeps it."""
    if choice.setting.drop_ratios is not None:
        method = method.with_settings(alpha=list(choice.setting.drop_ratios))
    lighter = method.lightened(**choice.setting.levers(method))
    keeps = confidence is not None and choice.setting.keeps_confidence(confidence, type(method))
    if confidence is not None and not keeps:
        choice = replace(choice, note=join_notes(choice.note, unconfident(method, lighter)))
    return lighter, choice, keeps


def models_text(models: dict[str, str]) -> str:
    """Models by role, as an error names them."""
    return ", ".join(f"{role} {name}" for role, name in models.items()) or "no models"
