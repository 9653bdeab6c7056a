"""Calibrated confidence, and saying "not in your documents".

Every answering method scores its answers (``Found.score``: a reranker's logit, a reader's
``log P(has) + log P(span)``). A :class:`Confidence` turns a method's best score into the probability
that the answer is right, by Platt scaling fitted on dev questions (``sieveqa calibrate-confidence``)
where half are asked of an index that holds their article and half of one that does not. Its
``min_confidence`` (chosen on the same dev questions) is where ``answer`` abstains by default: the
answer is then reported as "no answer found", with the best guess shown as such.

A confidence file maps method names to their calibration and the models it was fitted with; one fitted
for other models does not apply (the answers then carry no confidence). The shipped file is
``sieveqa/resources/confidence.json``, fitted for the shipped models.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sieveqa.errors import ConfigError
from sieveqa.fields import typed
from sieveqa.io import atomic_write_json, read_json_object

__all__ = [
    "SHIPPED_CONFIDENCE",
    "Confidence",
    "choose_threshold",
    "fit_platt",
    "load_confidence",
    "save_confidence",
]

SHIPPED_CONFIDENCE = Path(__file__).resolve().parents[2] / "resources" / "confidence.json"
FORMAT = 1


@dataclass(frozen=True)
class Confidence:
    """P(right) = sigmoid(``scale`` * score + ``bias``) for one method and its models."""

    scale: float
    bias: float
    min_confidence: float = 0.0
    models: dict[str, str] = field(default_factory=dict)
    fitted_on: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.scale) and math.isfinite(self.bias)):
            raise ConfigError(f"confidence: scale and bias must be finite, got {self.scale}, {self.bias}")
        if not 0 <= self.min_confidence <= 1:
            raise ConfigError(f"--min-confidence must be a probability in [0, 1], got {self.min_confidence}")

    def __call__(self, score: float) -> float:
        z = self.scale * score + self.bias
        if not math.isfinite(z):
            return 0.0 if z < 0 or math.isnan(z) else 1.0
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    def applies_to(self, models: Mapping[str, str]) -> bool:
        """Whether it was fitted for these models (names or folders by role)."""
        return dict(models) == self.models


def fit_platt(scores: Sequence[float], right: Sequence[bool]) -> tuple[float, float]:
    """Platt scaling: the logistic regression of ``right`` on ``scores`` (scale, bias)."""
    from sklearn.linear_model import LogisticRegression

    finite = [(s, r) for s, r in zip(scores, right, strict=True) if math.isfinite(s)]
    labels = {r for _, r in finite}
    if len(labels) < 2:
        raise ConfigError("calibration needs right and wrong answers among the dev questions")
    fit = LogisticRegression(C=1e4).fit([[s] for s, _ in finite], [int(r) for _, r in finite])
    return float(fit.coef_[0][0]), float(fit.intercept_[0])


def choose_threshold(kept: Sequence[float], keep: float) -> float:
    """The highest threshold under which at least ``keep`` of ``kept`` (the confidences of the
    answers that should stay: the right answers to answerable questions) still pass."""
    if not kept:
        return 0.0
    ordered = sorted(kept, reverse=True)
    return ordered[max(0, math.ceil(keep * len(ordered)) - 1)]


def load_confidence(path: str | Path | None = None) -> dict[str, Confidence]:
    """A confidence file's calibrations by method (the shipped one by default; none if absent)."""
    file = Path(path) if path is not None else SHIPPED_CONFIDENCE
    if not file.is_file():
        if path is not None:
            raise ConfigError(f"--confidence {file}: no such file")
        return {}
    data = read_json_object(file)
    methods = data.get("methods")
    if data.get("format") != FORMAT or not isinstance(methods, dict):
        raise ConfigError(f"{file}: not a sieveqa confidence file (format {FORMAT} with 'methods')")
    out = {}
    for name, entry in methods.items():
        where = f"{file}: methods.{name}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected an object")
        out[name] = Confidence(**typed(Confidence, entry, where))
    return out


def save_confidence(path: str | Path, method: str, confidence: Confidence) -> Path:
    """Add (or replace) ``method``'s calibration in the confidence file at ``path`` (atomically)."""
    file = Path(path)
    current = load_confidence(file) if file.is_file() else {}
    current[method] = confidence
    atomic_write_json(file, {"format": FORMAT, "methods": {k: asdict(v) for k, v in sorted(current.items())}})
    return file
