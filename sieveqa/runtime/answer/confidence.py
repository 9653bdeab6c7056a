"""Calibrated confidence, and saying "not in your documents".

Every answering method scores its answers (``Found.score``: a reranker's logit, a reader's
``log P(has) + log P(span)``) and may name other signals of them (``Found.signals``: the passage
reranker's logit of the answer's passage, EASI's logit of the sentence, ...). A :class:`Confidence` is
the logistic regression of "the answer is right" on the score and those signals, fitted on dev
questions (``sieveqa calibrate-confidence``) that include questions the documents do not answer: on-topic
ones (SQuAD 2.0's, whose own paragraph is indexed) and, before them, ones whose article is not indexed.
Its ``min_confidence`` (chosen on the same dev questions) is where ``answer`` abstains by default: the
answer is then reported as "no answer found", with the best guess shown as such.

A confidence file maps method names to their calibration and the models it was fitted with; one fitted
for other models, or on signals the method does not give, does not apply (the answers then carry no
confidence). The shipped file is ``sieveqa/resources/confidence.json``, fitted for the shipped models.
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
    "LOCAL_CONFIDENCE",
    "SHIPPED_CONFIDENCE",
    "Confidence",
    "best_threshold",
    "choose_threshold",
    "fit_logistic",
    "fit_platt",
    "load_confidence",
    "save_confidence",
]

SHIPPED_CONFIDENCE = Path(__file__).resolve().parents[2] / "resources" / "confidence.json"
#: A calibration fitted for one corpus index (``calibrate-confidence --index``), in the index's folder.
LOCAL_CONFIDENCE = "confidence.json"
FORMAT = 1


@dataclass(frozen=True)
class Confidence:
    """P(right) = sigmoid(``scale`` * score + sum of ``signals[name]`` * signal + ``bias``) for one
    method and its models."""

    scale: float
    bias: float
    min_confidence: float = 0.0
    models: dict[str, str] = field(default_factory=dict)
    fitted_on: dict[str, Any] = field(default_factory=dict)
    #: Weights of the answer's named signals beside its score (none: Platt scaling of the score).
    signals: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        weights = [self.scale, self.bias, *self.signals.values()]
        if not all(math.isfinite(w) for w in weights):
            raise ConfigError(f"confidence: scale, bias and signal weights must be finite, got {weights}")
        if not 0 <= self.min_confidence <= 1:
            raise ConfigError(f"--min-confidence must be a probability in [0, 1], got {self.min_confidence}")

    def __call__(self, score: float, signals: Mapping[str, float] | None = None) -> float:
        z = self.scale * score + self.bias
        if self.signals:
            given = signals or {}
            missing = sorted(set(self.signals) - set(given))
            if missing:
                raise ConfigError(f"confidence: the answer carries no {', '.join(missing)} signal")
            z += sum(w * given[name] for name, w in self.signals.items())
        if not math.isfinite(z):
            return 0.0 if z < 0 or math.isnan(z) else 1.0
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    def reads(self, signals: Mapping[str, float] | None) -> bool:
        """Whether an answer with ``signals`` carries every signal this calibration reads."""
        return set(self.signals) <= set(signals or {})

    def applies_to(self, models: Mapping[str, str], signals: Sequence[str] = ()) -> bool:
        """Whether it was fitted for these models (names or folders by role), on signals among
        ``signals`` (those the method's answers carry)."""
        return dict(models) == self.models and set(self.signals) <= set(signals)


def fit_platt(scores: Sequence[float], right: Sequence[bool]) -> tuple[float, float]:
    """Platt scaling: the logistic regression of ``right`` on ``scores`` (scale, bias)."""
    weights, bias = fit_logistic([[s] for s in scores], right)
    return weights[0], bias


def fit_logistic(rows: Sequence[Sequence[float]], right: Sequence[bool]) -> tuple[list[float], float]:
    """The logistic regression of ``right`` on the feature ``rows`` (weights, bias); rows with a
    value that is not finite (no answer) are left out."""
    from sklearn.linear_model import LogisticRegression

    finite = [(r, y) for r, y in zip(rows, right, strict=True) if all(math.isfinite(v) for v in r)]
    labels = {y for _, y in finite}
    if len(labels) < 2:
        raise ConfigError("calibration needs right and wrong answers among the dev questions")
    fit = LogisticRegression(C=1e4, max_iter=1000).fit([r for r, _ in finite], [int(y) for _, y in finite])
    return [float(w) for w in fit.coef_[0]], float(fit.intercept_[0])


def choose_threshold(kept: Sequence[float], keep: float) -> float:
    """The highest threshold under which at least ``keep`` of ``kept`` (the confidences of the
    answers that should stay: the right answers to answerable questions) still pass."""
    if not kept:
        return 0.0
    ordered = sorted(kept, reverse=True)
    return ordered[max(0, math.ceil(keep * len(ordered)) - 1)]


def best_threshold(
    values: Sequence[float], gains: Sequence[float], losses: Sequence[float]
) -> tuple[float, float]:
    """The threshold that maximizes the score of answering where a value reaches it, and that score:
    an answer given scores its ``gain`` (1 when right), an abstention its ``loss`` avoided (1 for a
    question nothing answers): SQuAD 2.0's overall score. Ties go to the lowest threshold (abstain
    least); ``inf`` when abstaining everywhere is best."""
    order = sorted(range(len(values)), key=lambda i: -values[i])
    score = best = float(sum(losses))  # everything abstains
    threshold = math.inf
    for rank, i in enumerate(order):
        score += gains[i] - losses[i]
        last = rank + 1 == len(order) or values[order[rank + 1]] < values[i]
        if last and score >= best:
            best, threshold = score, values[i]
    return threshold, best


def load_confidence(path: str | Path | None = None, missing_ok: bool = False) -> dict[str, Confidence]:
    """A confidence file's calibrations by method (the shipped one by default; none if absent, or if
    ``path`` is absent and ``missing_ok``)."""
    file = Path(path) if path is not None else SHIPPED_CONFIDENCE
    if not file.is_file():
        if path is not None and not missing_ok:
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
