"""How much of a judge fine-tuned whole survives when its weight changes are kept at low rank (issue
41): each matrix of the body becomes the installed base's plus the best rank-r approximation (SVD) of
what training changed, the rest (biases, LayerNorms, head) kept as trained.

For every ``--ranks`` value and for the model as trained (rank 0 in the output): the AUROC between
answerable and unanswerable questions of ``--dataset`` of the judge's logit of the passage the
``--reranker`` puts first among each question's retrieved passages; the size of such a folder in fp16;
and how much of the changes' norm the rank keeps.

    python bench/low_rank_judge.py --judge runs/judge-mpnet/own/best --ranks 32,64,96 \
        --out bench/results/abstention/judge-mpnet-low-rank.json

The folder format is sieveqa's own (``sieveqa export JUDGE OUT --format low-rank --rank R``); this
measures what each rank keeps.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _common import finish, top_passages
from sklearn.metrics import roc_auc_score

from sieveqa.models._low_rank import expand, factorize
from sieveqa.models.zoo import load_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", required=True, help="a pair model fine-tuned whole")
    parser.add_argument("--ranks", default="32,64,96")
    parser.add_argument("--dataset", default="squad2-open:dev")
    parser.add_argument("--reranker", default="peasi-pr")
    parser.add_argument("--passages", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    ranks = [int(r) for r in args.ranks.split(",")]

    started = time.perf_counter()
    questions, texts, answerable = top_passages(args.reranker, args.dataset, args.passages)
    judge = load_model(args.judge)
    trained = {k: v.detach().clone() for k, v in judge.state_dict().items()}
    base = judge.installed_base()
    stored = sum(w.numel() for n, w in trained.items() if "word_embeddings" not in n)
    rows = []
    for rank in [0, *ranks]:
        state, size, kept = trained, stored, 1.0
        if rank:
            factors, entry = factorize(trained, base, rank)
            state, kept = expand(args.judge, factors, base, entry), entry["kept"]
            size = sum(w.numel() for n, w in factors.items() if "word_embeddings" not in n)
        judge.load_state_dict(state)
        logits = judge.configure(precision="auto").score_pairs(questions, texts)
        rows.append(
            {
                "rank": rank,
                "auroc": round(float(roc_auc_score(answerable, logits)), 4),
                "fp16_mb": round(2 * size / 1e6, 1),
                "change_norm_kept": round(kept, 3),
            }
        )
        print(rows[-1], flush=True)
    payload = {"judge": args.judge, "reranker": args.reranker, "dataset": args.dataset, "rows": rows}
    finish(args.out, "low_rank_judge", payload | {"seconds": round(time.perf_counter() - started)})


if __name__ == "__main__":
    main()
