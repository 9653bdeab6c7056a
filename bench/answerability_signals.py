"""Which readings of a question's best passage tell answerable from unanswerable (issue 41): for each
question of an open set, the passage ``--reranker`` puts first among its retrieved passages, read by
each ``--judges`` pair model (its logit) and each ``--readers`` reader (its last exit's has-answer logit
and best span's log P(start) + log P(end)). Reported: each signal's AUROC between answerable and
unanswerable questions, and every combination's, fitted by logistic regression in 5 folds (held out).

    python bench/answerability_signals.py --judges peasi-judge --readers reader \\
        --out bench/results/abstention/answerability-signals.json
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np
from _common import finish, markdown, top_passages
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sieveqa.models.reader import ReaderModel
from sieveqa.models.zoo import load_model


def _signals(args: argparse.Namespace, questions: list[str], texts: list[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for name in filter(None, args.judges.split(",")):
        out[f"judge:{name}"] = load_model(name).configure(precision="auto").score_pairs(questions, texts)
    for name in filter(None, args.readers.split(",")):
        reader = load_model(name, ReaderModel).configure(precision="auto")
        read, _ = reader.read(questions, [[t] for t in texts], progress=True)
        last = [r[0][-1] for r in read]
        out[f"has:{name}"] = [g.has_logit for g in last]
        out[f"span:{name}"] = [g.span if np.isfinite(g.span) else -50.0 for g in last]
    return out


def _held_out_auroc(x: np.ndarray, y: np.ndarray) -> float:
    model = make_pipeline(StandardScaler(), LogisticRegression())
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    return float(roc_auc_score(y, cross_val_predict(model, x, y, cv=folds, method="predict_proba")[:, 1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="squad2-open:dev")
    parser.add_argument("--reranker", default="peasi-pr")
    parser.add_argument("--passages", type=int, default=20)
    parser.add_argument("--judges", default="peasi-judge", help="pair models, comma-separated")
    parser.add_argument("--readers", default="reader", help="readers, comma-separated")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    started = time.perf_counter()
    questions, texts, answerable = top_passages(args.reranker, args.dataset, args.passages)
    signals = _signals(args, questions, texts)
    y = np.array(answerable, dtype=int)
    rows = []
    names = list(signals)
    for k in range(1, len(names) + 1):
        for subset in itertools.combinations(names, k):
            x = np.array([signals[n] for n in subset]).T
            row = {"signals": " + ".join(subset), "held_out_auroc": round(_held_out_auroc(x, y), 4)}
            if k == 1:
                row["auroc"] = round(float(roc_auc_score(y, x[:, 0])), 4)
            rows.append(row)
    print(markdown(rows, ["signals", "auroc", "held_out_auroc"]))
    payload = {
        "dataset": args.dataset,
        "reranker": args.reranker,
        "questions": len(y),
        "answerable": int(y.sum()),
        "rows": rows,
        "per_question": {"answerable": answerable, **signals},
    }
    finish(args.out, "answerability_signals", payload | {"seconds": round(time.perf_counter() - started)})


if __name__ == "__main__":
    main()
