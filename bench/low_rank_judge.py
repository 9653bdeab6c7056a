"""How much of a judge fine-tuned whole survives when its weight changes are kept at low rank (issue
41): each matrix of the body becomes the installed base's plus the best rank-r approximation (SVD) of
what training changed, the rest (biases, LayerNorms, head) kept as trained.

For every ``--ranks`` value and for the model as trained (rank 0 in the output): the AUROC between
answerable and unanswerable questions of ``--dataset`` of the judge's logit of the passage the
``--reranker`` puts first among each question's retrieved passages; the size of such a folder in fp16;
and how much of the changes' norm the rank keeps.

    python bench/low_rank_judge.py --judge runs/judge-mpnet/own/best --ranks 32,64,96 \
        --out bench/results/abstention/judge-mpnet-low-rank.json

``--save-rank R --save FILE`` only writes the judge at rank R as one safetensors file (each changed
matrix ``NAME`` as ``NAME.lr_a`` @ ``NAME.lr_b`` to add to the base's, every other trained tensor as
it is, the word embeddings left out; fp16), so that it outlives the 435 MB folder it came from.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from _common import finish
from sklearn.metrics import roc_auc_score
from tqdm.auto import tqdm

from sieveqa.backbones import load_backbone
from sieveqa.data.registry import load_open_dataset
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.models.zoo import load_model

BODY = "encoder.backbone."


def _top_passages(reranker: str, dataset: str, passages: int) -> tuple[list[str], list[str], list[bool]]:
    model = load_model(reranker).configure(precision="auto")
    questions, texts, answerable = [], [], []
    for ex in tqdm(load_open_dataset(dataset), desc="reranking", unit="q"):
        candidates = [p.text for p in ex.passages[:passages]]
        scores = model.score_pairs([ex.question] * len(candidates), candidates)
        texts.append(candidates[max(range(len(candidates)), key=scores.__getitem__)])
        questions.append(ex.question)
        answerable.append(not ex.impossible)
    return questions, texts, answerable


Svd = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def _changes(judge: EncoderModel) -> dict[str, tuple[torch.Tensor, Svd]]:
    """Each body matrix's base weight and the SVD of what training changed in it (embeddings aside)."""
    base = load_backbone(judge.config.backbone).model.state_dict()
    out = {}
    for name, w in judge.state_dict().items():
        key = name.removeprefix(BODY)
        if name.startswith(BODY) and key in base and w.dim() == 2 and "embeddings" not in key:
            weight = base[key].float()
            out[name] = (weight, torch.linalg.svd(w.float() - weight, full_matrices=False))
    return out


def _save(judge_path: str, rank: int, out: Path) -> None:
    from safetensors.torch import save_file

    judge = load_model(judge_path)
    changes = _changes(judge)
    tensors = {}
    for name, w in judge.state_dict().items():
        if name in changes:
            _, (u, s, vh) = changes[name]
            tensors[f"{name}.lr_a"] = (u[:, :rank] * s[:rank]).half().contiguous()
            tensors[f"{name}.lr_b"] = vh[:rank].half().contiguous()
        elif "word_embeddings" not in name:
            tensors[name] = w.half().contiguous()
    meta = {"judge": judge_path, "backbone": judge.config.backbone, "rank": str(rank)}
    save_file(tensors, out, metadata=meta)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", required=True, help="a pair model fine-tuned whole")
    parser.add_argument("--ranks", default="32,64,96")
    parser.add_argument("--dataset", default="squad2-open:dev")
    parser.add_argument("--reranker", default="peasi-pr")
    parser.add_argument("--passages", type=int, default=20)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--save-rank", type=int)
    parser.add_argument("--save", type=Path)
    args = parser.parse_args()
    ranks = [int(r) for r in args.ranks.split(",")]
    if args.save is not None:
        return _save(args.judge, args.save_rank, args.save)
    if args.out is None:
        parser.error("--out is needed unless --save is given")

    started = time.perf_counter()
    questions, texts, answerable = _top_passages(args.reranker, args.dataset, args.passages)
    judge = load_model(args.judge)
    trained = {k: v.detach().clone() for k, v in judge.state_dict().items()}
    changes = _changes(judge)
    word_embeddings = sum(w.numel() for n, w in trained.items() if "word_embeddings" in n)
    kept = sum(w.numel() for n, w in trained.items() if n not in changes) - word_embeddings
    rows = []
    for rank in [0, *ranks]:
        state = dict(trained)
        size, energy = kept + sum(w.numel() for n, w in trained.items() if n in changes), 1.0
        if rank:
            size, left, total = kept, 0.0, 0.0
            for name, (weight, (u, s, vh)) in changes.items():
                state[name] = weight + (u[:, :rank] * s[:rank]) @ vh[:rank]
                size += rank * (u.shape[0] + vh.shape[1])
                left, total = left + s[:rank].pow(2).sum().item(), total + s.pow(2).sum().item()
            energy = left / total
        judge.load_state_dict(state)
        logits = judge.configure(precision="auto").score_pairs(questions, texts)
        rows.append(
            {
                "rank": rank,
                "auroc": round(float(roc_auc_score(answerable, logits)), 4),
                "fp16_mb": round(2 * size / 1e6, 1),
                "change_norm_kept": round(energy**0.5, 3),
            }
        )
        print(rows[-1], flush=True)
    payload = {"judge": args.judge, "reranker": args.reranker, "dataset": args.dataset, "rows": rows}
    finish(args.out, "low_rank_judge", payload | {"seconds": round(time.perf_counter() - started)})


if __name__ == "__main__":
    main()
