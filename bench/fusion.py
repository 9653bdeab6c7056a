"""BM25 fusion for every answer method: each model scores a split once, BM25 scores the same
candidates, and every fusion of a grid is measured from those scores (docs/RESULTS.md, "Never worse
than BM25").

- Sentence methods (``pointwise``, ``cascade``): the ranker's scores of each question's sentences,
  on AS2 sets (WikiQA, TrecQA, SQuAD-AS2) and on the sentences of retrieved passages.
- ``peasi``: the passage reranker's scores of each question's passages fused with BM25 over those
  passages; the answer is EASI's pick inside the fused top passage (EASI reads every passage once).

Choose on dev (``--choose``: the fusion with the best mean P@1 over the sets, MAP breaking ties),
then report test with the chosen fusions only (``--fusions none,interp:0.2``):

    python bench/fusion.py --split dev --out bench/results/fusion/dev.json
    python bench/fusion.py --split test --fusions none,interp:0.2 --out bench/results/fusion/test.json
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import finish, markdown
from tqdm.auto import tqdm

from sieveqa.data.records import RankingExample
from sieveqa.data.registry import load_dataset
from sieveqa.evaluation.answers import passages_of
from sieveqa.evaluation.metrics import evaluate_scores
from sieveqa.runtime.answer.answerer import load_answerer
from sieveqa.runtime.answer.fusion import Fusion, lexical_scores
from sieveqa.runtime.policy import load_ranker

GRID = [Fusion()] + [
    Fusion(m, w) for m in ("interp", "rrf") for w in (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0)
]
SENTENCE_SETS = {
    "dev": "wikiqa:dev,trecqa:dev-clean,squad-as2:dev,squad-passages:dev-sentences",
    "test": "wikiqa:test,trecqa:test-clean,squad-as2:test,squad-passages:test-sentences",
}
PASSAGE_SETS = {
    "dev": "squad-passages:dev-sentences,wikiqa-passages:dev-sentences",
    "test": "squad-passages:test-sentences,wikiqa-passages:test-sentences",
}


def _bm25(examples: Sequence[RankingExample]) -> list[list[float]]:
    return [lexical_scores(ex.question.text, [c.text for c in ex.candidates]) for ex in examples]


def _metrics(examples: Sequence[RankingExample], scores: list[list[float]]) -> dict[str, float]:
    mean = evaluate_scores(examples, scores).mean
    return {"map": round(mean["map"], 4), "p@1": round(mean["p@1"], 4)}


def sentence_grid(model: str, names: list[str], fusions: list[Fusion]) -> dict[str, dict[str, Any]]:
    """Per dataset and fusion, MAP and P@1 of ``model`` fused with BM25 over the same sentences."""
    ranker = load_ranker(model)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        examples = load_dataset(name)
        scores, bm25 = ranker.score(examples, progress=True), _bm25(examples)
        out[name] = {
            str(f): _metrics(examples, [f.combine(s, b) for s, b in zip(scores, bm25, strict=True)])
            for f in fusions
        }
        out[name]["bm25 alone"] = _metrics(examples, bm25)
    return out


def peasi_grid(
    reranker: str, selector: str | None, names: list[str], fusions: list[Fusion]
) -> dict[str, Any]:
    """Per dataset and fusion, answer P@1 and passage P@1/MAP of PEASI with the fused passage order."""
    answerer = load_answerer("peasi", None, reranker=reranker, selector=selector)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        rows = []
        for ex in tqdm(load_dataset(name), desc=f"peasi {name}", unit="q"):
            passages, members = passages_of(ex)
            logits, _ = answerer.method._passage_scores(ex.question.text, passages)
            probs, _ = answerer.method.selector.select(
                [ex.question.text] * len(passages), [p.sentences for p in passages]
            )
            picks = [
                members[i][max(range(len(pr)), key=lambda s: (pr[s], -s))].label == 1
                for i, pr in enumerate(probs)
            ]
            gold = [int(any(c.label == 1 for c in m)) for m in members]
            rows.append((logits, lexical_scores(ex.question.text, [p.text for p in passages]), picks, gold))
        out[name] = {}
        for f in fusions:
            answer, passage = [], []
            for logits, bm25, picks, gold in rows:
                fused = f.combine(logits, bm25)
                top = max(range(len(fused)), key=lambda i: (fused[i], -i))
                answer.append(int(picks[top]))
                passage.append(gold[top])
            out[name][str(f)] = {
                "p@1": round(statistics.fmean(answer), 4),
                "passage p@1": round(statistics.fmean(passage), 4),
            }
    return out


def choose(grid: dict[str, dict[str, Any]]) -> str:
    """The fusion with the best mean P@1 over the datasets (then mean MAP where there is one)."""
    names = [k for k in next(iter(grid.values())) if k != "bm25 alone"]

    def key(f: str) -> tuple[float, float]:
        rows = [grid[d][f] for d in grid]
        return statistics.fmean(r["p@1"] for r in rows), statistics.fmean(r.get("map", 0.0) for r in rows)

    return max(names, key=lambda f: (*key(f), f == "none"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--pointwise", default="default")
    parser.add_argument("--cascade", default="default-cascade")
    parser.add_argument("--reranker", default="peasi-pr")
    parser.add_argument("--selector", default=None)
    parser.add_argument("--fusions", default=None, help="comma-separated fusions (default: the whole grid)")
    parser.add_argument("--methods", default="pointwise,cascade,peasi", help="comma-separated methods to run")
    parser.add_argument("--limit", type=int, default=None, help="first N questions of each set (a smoke run)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    fusions = [Fusion.parse(f) for f in args.fusions.split(",")] if args.fusions else GRID
    suffix = f"[:{args.limit}]" if args.limit else ""
    sentences = [n + suffix for n in SENTENCE_SETS[args.split].split(",")]
    passages = [n + suffix for n in PASSAGE_SETS[args.split].split(",")]
    runs = {
        "pointwise": lambda: sentence_grid(args.pointwise, sentences, fusions),
        "cascade": lambda: sentence_grid(args.cascade, sentences, fusions),
        "peasi": lambda: peasi_grid(args.reranker, args.selector, passages, fusions),
    }
    wanted = args.methods.split(",")
    if unknown := set(wanted) - set(runs):
        parser.error(f"--methods: unknown {', '.join(sorted(unknown))} (use {', '.join(runs)})")
    methods = {m: runs[m]() for m in wanted}
    chosen = {m: choose(grid) for m, grid in methods.items()}
    for method, grid in methods.items():
        print(f"\n## {method} (chosen: {chosen[method]})")
        rows = [
            {"fusion": f, **{f"{d} {k}": v for d in grid for k, v in grid[d].get(f, {}).items()}}
            for f in grid[next(iter(grid))]
        ]
        print(markdown(rows, list(rows[0])))
    finish(
        args.out,
        "fusion",
        {
            "split": args.split,
            "models": {
                "pointwise": args.pointwise,
                "cascade": args.cascade,
                "reranker": args.reranker,
                "selector": args.selector,
            },
            "methods": methods,
            "chosen_by_mean_p@1": chosen,
        },
    )


if __name__ == "__main__":
    main()
