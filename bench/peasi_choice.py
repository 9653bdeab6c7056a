"""How PEASI should choose, and what tells "the documents say this", measured once and swept offline
(docs/RESULTS.md, "The right sentence in the right passage").

``cache``: for each question of a set, the passage reranker's logit of every retrieved passage, then,
for the ``--read`` best passages, EASI's logit of each of their sentences and the point-wise ranker's
logit of each sentence read alone, and whether the sentence is right. Passage benchmarks with labelled
sentences (``squad-passages:dev-sentences``) and open-domain sets (``squad2-open:dev``, where a sentence is
right when it holds a gold answer and nothing is right for an unanswerable question) both work.

``sweep``: from caches, answer P@1 of every choice on a grid (passages read, weight of log P(sentence |
passage), how many sentences the point-wise ranker re-reads and the weight of its logit), the best
choice by mean P@1 over the sets (ties: the cheaper, then the simpler). On an open set, each choice's
confidence fitted on every subset of the signals with 5-fold cross-fitting: held-out AUROC (answerable
against unanswerable) and SQuAD 2.0 overall at the held-out folds' own best thresholds.
``--second-judge`` adds another cache's judge logits as one more signal (``judge2``; or ``cache --judge2``
reads a second judge in the same pass); ``--against``
names a signal subset (the shipped one) that every subset's overall is compared with, question by
question (a paired bootstrap's 95% interval of the difference).

    python bench/peasi_choice.py cache --dataset squad-passages:dev-sentences --out C1.cache.json
    python bench/peasi_choice.py sweep --caches C1.cache.json,C2.cache.json --out choice-dev.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import statistics
from pathlib import Path
from typing import Any

import numpy as np
from _common import finish, markdown
from peasi_cache import cache
from tqdm.auto import tqdm

from sieveqa.runtime.answer.confidence import best_threshold, fit_logistic

READS = (1, 2, 3)
SENTENCE_WEIGHTS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 1000.0)  # 1000: best passage first, EASI decides
LOOKS = (0, 2, 3, 5, 8)
LOOK_WEIGHTS = (0.25, 0.5, 1.0, 2.0)
BM25_WEIGHTS = (0.0, 0.5, 1.0, 2.0)  # of the passage's BM25, min-max over the question's passages
SIGNALS = (
    "passage",
    "sentence",
    "in_passage",
    "margin",
    "null",
    "pointwise",
    "judge",
    "judge2",
    "has",
    "judge_max",
    "has_max",
)


Choice = tuple[int, float, int, float, float]  # read, sentence weight, second look, its weight, BM25's
CHOICE_KEYS = ("read", "sentence_weight", "second_look", "look_weight", "bm25_weight")


def _joint(c: dict[str, Any], w: float, bw: float) -> float:
    return c["passage"] + w * c["in_passage"] + bw * c["bm25"]


def _choose(
    row: dict[str, Any], read: int, w: float, look: int, lw: float, bw: float
) -> dict[str, Any] | None:
    """The answer this choice gives (a candidate with its joint score), None without candidates."""
    cands = [c for c in row["candidates"] if c["rank"] < read]
    if not cands:
        return None
    joint = sorted(cands, key=lambda c: -_joint(c, w, bw))
    if look:
        head = sorted(joint[:look], key=lambda c: -(_joint(c, w, bw) + lw * c["pointwise"]))
        joint = head + joint[look:]
    best = joint[0]
    score = _joint(best, w, bw) + (lw * best["pointwise"] if look else 0.0)
    # A question's best reading by judge or reader over every passage read, not only the answer's.
    most = {f"{s}_max": max(c[s] for c in cands) for s in ("judge", "has") if s in best}
    return {**best, **most, "score": score, "looked": bool(look)}


def _grid() -> list[Choice]:
    plain = [(r, w, 0, 0.0, b) for r in READS for w in SENTENCE_WEIGHTS for b in BM25_WEIGHTS]
    looked = [
        (r, w, k, lw, b)
        for r in READS
        for w in SENTENCE_WEIGHTS
        for k in LOOKS[1:]
        for lw in LOOK_WEIGHTS
        for b in BM25_WEIGHTS
    ]
    return plain + looked


def _p_at_1(rows: list[dict[str, Any]], choice: Choice) -> float:
    answerable = [r for r in rows if r["answerable"]]
    hits = [bool((a := _choose(r, *choice)) and a["right"]) for r in answerable]
    return 100 * sum(hits) / max(len(hits), 1)


def _held_out(
    rows: list[dict[str, Any]], answers: list[dict[str, Any] | None], subset: tuple[str, ...]
) -> tuple[list[float], list[float]]:
    """Each question's confidence and SQuAD 2.0 point (0/1) from the fold that left it out (5 folds,
    each at its fit's best threshold; the same folds for every subset)."""
    order = list(range(len(rows)))
    random.Random(0).shuffle(order)
    values, points = [0.0] * len(rows), [0.0] * len(rows)
    for k in range(5):
        test = set(order[k::5])
        fit = [i for i in range(len(rows)) if i not in test and answers[i] is not None]
        feats = [[answers[i]["score"], *(answers[i][s] for s in subset)] for i in fit]
        weights, bias = fit_logistic(feats, [answers[i]["right"] for i in fit])

        def conf(i: int, weights: list[float] = weights, bias: float = bias) -> float:
            a = answers[i]
            if a is None:
                return -math.inf
            x = [a["score"], *(a[s] for s in subset)]
            return sum(w * v for w, v in zip(weights, x, strict=True)) + bias

        train = [i for i in range(len(rows)) if i not in test]
        gains = [float(bool(answers[i] and answers[i]["right"])) for i in train]
        losses = [float(not rows[i]["answerable"]) for i in train]
        threshold, _ = best_threshold([conf(i) for i in train], gains, losses)
        for i in test:
            values[i] = conf(i)
            right = bool(answers[i] and answers[i]["right"])
            points[i] = float(right if values[i] >= threshold else not rows[i]["answerable"])
    return values, points


def _paired_ci(a: list[float], b: list[float], draws: int = 2000) -> list[float]:
    """95% interval of mean(a) - mean(b) over questions drawn with replacement (paired), in points."""
    diff = np.asarray(a) - np.asarray(b)
    drawn = np.random.default_rng(1).integers(0, len(diff), (draws, len(diff)))
    low, high = np.percentile(100 * diff[drawn].mean(axis=1), [2.5, 97.5])
    return [round(float(low), 2), round(float(high), 2)]


def _confidence(
    rows: list[dict[str, Any]],
    choice: Choice,
    only: tuple[str, ...] = SIGNALS,
    against: tuple[str, ...] | None = None,
) -> list[dict[str, Any]]:
    """For each signal subset: held-out AUROC and overall; with ``against`` (a subset, e.g. the shipped
    one), each overall's paired 95% bootstrap interval of its difference from that subset's."""
    answers = [_choose(r, *choice) for r in rows]
    first = next((a for a in answers if a is not None), {})
    names = [s for s in only if (s != "pointwise" or choice[2]) and s in first]
    if against is not None and not set(against) <= set(names):
        raise SystemExit(f"--against: {','.join(against)} is not among the signals read ({','.join(names)})")
    base = _held_out(rows, answers, against)[1] if against is not None else None
    out = []
    for n in range(len(names) + 1):
        for subset in itertools.combinations(names, n):
            values, points = _held_out(rows, answers, subset)
            row = {
                "signals": "+".join(("score", *subset)),
                "auroc": round(_auroc(values, [r["answerable"] for r in rows]), 4),
                "overall": round(100 * sum(points) / len(rows), 2),
            }
            if base is not None:
                row["overall_delta_ci95"] = _paired_ci(points, base)
            out.append(row)
    return sorted(out, key=lambda r: (-r["overall"], -r["auroc"]))


def _auroc(values: list[float], labels: list[bool]) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, [v if math.isfinite(v) else -1e30 for v in values]))


def _second_judge(cache: dict[str, Any], other: dict[str, Any]) -> None:
    """Put ``other``'s judge logits into ``cache`` as ``judge2``: the judge reads a passage, so they
    go by the passage's rank (the same set and reranker: the same passages read, checked)."""
    if other["dataset"] != cache["dataset"] or len(other["questions"]) != len(cache["questions"]):
        raise SystemExit(f"--second-judge: a cache of {other['dataset']}, not of {cache['dataset']}")
    for mine, theirs in zip(cache["questions"], other["questions"], strict=True):
        judged = {c["rank"]: c["judge"] for c in theirs["candidates"]}
        if {c["rank"] for c in mine["candidates"]} != set(judged):
            raise SystemExit("--second-judge: it read other passages (another reranker)")
        for c in mine["candidates"]:
            c["judge2"] = judged[c["rank"]]


def _fixed_choice(text: str | None) -> Choice | None:
    """``--choice`` as a grid point, or one line naming what is wrong with it."""
    if not text:
        return None
    try:
        read, w, look, lw, bw = (float(x) for x in text.split(","))
    except ValueError:
        raise SystemExit(
            f"--choice: expected read,sentence_weight,second_look,look_weight,bm25_weight; got {text!r}"
        ) from None
    choice = (int(read), w, int(look), lw if look else 0.0, bw)
    if choice not in _grid():
        raise SystemExit(f"--choice: {text} is not a point of the sweep's grid")
    return choice


def sweep(args: argparse.Namespace) -> None:
    fixed = _fixed_choice(args.choice)
    only = tuple(args.signals.split(","))
    if unknown := [s for s in only if s not in SIGNALS]:
        raise SystemExit(f"--signals: unknown {', '.join(unknown)} (known: {', '.join(SIGNALS)})")
    against = tuple(a for a in args.against.split(",") if a) if args.against is not None else None
    if against is not None and not set(against) <= set(only):
        raise SystemExit(f"--against: {','.join(against)} is not a subset of --signals {args.signals}")
    caches = {Path(p).name: json.loads(Path(p).read_text()) for p in args.caches.split(",")}
    if args.second_judge:
        other = json.loads(args.second_judge.read_text())
        for c in caches.values():
            if c["dataset"] == other["dataset"]:
                _second_judge(c, other)
                c["models"] |= {"judge2": other["models"].get("judge")}
    grid = _grid()
    table = []
    for choice in tqdm(grid, desc="choices"):
        row = {
            "read": choice[0],
            "sentence_weight": choice[1],
            "second_look": choice[2],
            "look_weight": choice[3],
            "bm25_weight": choice[4],
        }
        for c in caches.values():
            if any(r["answerable"] for r in c["questions"]):
                row[c["dataset"]] = round(_p_at_1(c["questions"], choice), 2)
        row["mean"] = round(statistics.mean(v for k, v in row.items() if ":" in k), 2)
        table.append(row)

    # Ties go to reading fewer passages, looking at fewer sentences, then to the plain weights.
    def simpler(r: dict[str, Any]) -> tuple:
        return (r["mean"], -r["read"], -r["second_look"], -r["bm25_weight"], -abs(r["sentence_weight"] - 1))

    best = max(table, key=simpler)
    # The confidence is fitted at the best choice here, or at a given one (the shipped choice).
    chosen = best if fixed is None else next(r for r in table if tuple(r[k] for k in CHOICE_KEYS) == fixed)
    plain = max((r for r in table if r["second_look"] == 0), key=simpler)
    top1 = next(
        r
        for r in table
        if (r["read"], r["sentence_weight"], r["second_look"], r["bm25_weight"]) == (1, 1000.0, 0, 0.0)
    )
    payload: dict[str, Any] = {
        "caches": {n: c["models"] | {"dataset": c["dataset"]} for n, c in caches.items()}
    }
    payload |= {"paper_top1": top1, "best_without_look": plain, "best": best, "chosen": chosen}
    open_sets = {n: c for n, c in caches.items() if any(not r["answerable"] for r in c["questions"])}
    for c in open_sets.values():
        key = tuple(chosen[k] for k in CHOICE_KEYS)
        payload[f"confidence {c['dataset']}"] = _confidence(c["questions"], key, only, against)
    payload["grid"] = sorted(table, key=lambda r: -r["mean"])
    keys = [k for k in table[0] if k != "mean"] + ["mean"]
    print(markdown([top1, plain, best] + ([chosen] if fixed else []), keys))
    for c in open_sets.values():
        shown = ["signals", "auroc", "overall"] + (["overall_delta_ci95"] if against else [])
        print(markdown(payload[f"confidence {c['dataset']}"][:8], shown))
    finish(args.out, "peasi_choice sweep", payload)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("cache")
    c.add_argument("--dataset", required=True)
    c.add_argument("--reranker", default="peasi-pr")
    c.add_argument("--selector", default=None)
    c.add_argument("--look-ranker", default="default")
    c.add_argument("--judge", default="none", help="a reranker whose logit of each read passage is cached")
    c.add_argument("--judge2", default="", help="another judge, cached beside it as 'judge2' (one pass)")
    c.add_argument(
        "--reader", default=None, help="a reader whose has-answer logit of each read passage is cached"
    )
    c.add_argument("--read", type=int, default=max(READS))
    c.add_argument("--limit", type=int, default=None, help="open sets: this many questions, drawn at random")
    c.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("sweep")
    s.add_argument("--caches", required=True, help="cache files, comma-separated")
    s.add_argument("--second-judge", type=Path, help="a cache of the same open set whose judge is 'judge2'")
    s.add_argument("--choice", help="read,sentence_weight,second_look,look_weight,bm25_weight to fit at")
    s.add_argument("--signals", default=",".join(SIGNALS), help="the confidence signals to try subsets of")
    s.add_argument(
        "--against",
        help="a signal subset (e.g. passage,judge2; '' for the score alone) each overall is compared "
        "with: a paired 95%% bootstrap interval of the difference",
    )
    s.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    cache(args) if args.mode == "cache" else sweep(args)


if __name__ == "__main__":
    main()
