"""Sentence boundaries against datasets' own sentences: pysbd alone against sieveqa's guarded splitter,
on WikiQA's and TrecQA's documents as given and with one stray double quote in each.

    python bench/sentence_split.py --split dev --out bench/results/sentence_split/dev.json
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from _common import finish, markdown

from sieveqa.data.sentences import sentence_spans
from sieveqa.evaluation.sentence_boundaries import boundary_scores, gold_sentences, stray_quote

TRECQA = {"dev": "dev", "test": "test", "train": "train-all"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=sorted(TRECQA), default="dev")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    sets = {
        "wikiqa": gold_sentences(f"wikiqa:{args.split}"),
        "trecqa": gold_sentences(f"trecqa:{TRECQA[args.split]}"),
    }
    sets |= {f"{name}+stray-quote": stray_quote(docs) for name, docs in list(sets.items())}
    rows = []
    for name, docs in sets.items():
        for splitter, guard in (("pysbd", False), ("guarded", True)):
            for boundaries, only in (("all", False), ("punctuated", True)):
                scores = boundary_scores(docs, partial(sentence_spans, guard=guard), punctuated_only=only)
                rows.append({"data": name, "splitter": splitter, "counted": boundaries, **scores.as_dict()})
                print(rows[-1], flush=True)
    keys = [
        "data",
        "splitter",
        "counted",
        "boundaries",
        "precision",
        "recall",
        "f1",
        "wrong_documents",
        "longest",
    ]
    print(markdown(rows, keys))
    finish(args.out, "sentence_split", {"split": args.split, "rows": rows})


if __name__ == "__main__":
    main()
