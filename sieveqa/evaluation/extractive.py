"""Extractive QA metrics: exact match and token F1 with SQuAD v1.1's answer normalisation, and the
expected calibration error of binary probabilities (has-answer heads).

The normalisation is the official evaluation script's (and DrQA's, which the adaptive computation
paper uses): lower-case, drop punctuation and the articles a/an/the, collapse whitespace. A prediction
scores the best over the gold answers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from sieveqa.data.open_qa import normalize_answer

__all__ = ["exact_match", "expected_calibration_error", "f1_score", "normalize_answer"]


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(a) for a in answers))


def _f1(prediction: str, answer: str) -> float:
    pred, gold = normalize_answer(prediction).split(), normalize_answer(answer).split()
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, answers: Sequence[str]) -> float:
    """Best token F1 of the prediction against the gold answers (0.0 without answers)."""
    return max((_f1(prediction, a) for a in answers), default=0.0)


def expected_calibration_error(probs: Sequence[float], labels: Sequence[int], bins: int = 10) -> float:
    """ECE (Guo et al., 2017) of binary probabilities: over ``bins`` equal-width bins of the predicted
    probability of class 1, the share-weighted gap between mean probability and observed frequency."""
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if p.shape != y.shape or p.size == 0:
        raise ValueError(f"need as many labels as probabilities (>0), got {p.size} and {y.size}")
    which = np.minimum((p * bins).astype(int), bins - 1)
    ece = 0.0
    for b in range(bins):
        members = which == b
        if members.any():
            ece += members.mean() * abs(p[members].mean() - y[members].mean())
    return float(ece)
