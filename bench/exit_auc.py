"""How much each exit of a reader knows about its passage: the spread of the raw has-answer logit and
its ROC AUC (passages with a gold answer against those without), per dataset.

Reads the cached static tables (``sieveqa calibrate`` and ``bench/adaptive.py`` fill them), so it is
quick after either has run.

    python bench/exit_auc.py --reader runs/reader/r6m-cal --out bench/results/adaptive/r6m/exit_auc.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _common import finish, markdown
from sklearn.metrics import roc_auc_score

from sieveqa.data.registry import load_open_dataset
from sieveqa.evaluation.odqa import cached_table, load_reader
from sieveqa.training.skyline import exit_logits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reader", required=True)
    parser.add_argument("--datasets", nargs="+", default=["squad-open-mini:dev0", "squad-open-mini:dev1"])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    reader = load_reader(args.reader)
    rows = []
    for name in args.datasets:
        logits, labels = exit_logits(cached_table(reader, load_open_dataset(name), progress=True))
        for e, layer in enumerate(reader.exits):
            column = logits[:, e]
            rows.append(
                {"dataset": name, "layer": layer, "logit_std": round(float(column.std()), 4),
                 "auc": round(float(roc_auc_score(labels.numpy(), column.numpy())), 3)}
            )  # fmt: skip
    print(markdown(rows, ["dataset", "layer", "logit_std", "auc"]))
    finish(args.out, "exit_auc", {"reader": args.reader, "rows": rows})


if __name__ == "__main__":
    main()
