"""Draws docs/img/architecture.png: the steppable encoder and the techniques as policies over it.

python tools/architecture.py   # rewrites docs/img/architecture.png
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

OUT = Path(__file__).resolve().parent.parent / "docs" / "img" / "architecture.png"
LAYERS = 6
#: (name, what it decides) of each technique, drawn as a policy over the encoder's layers.
POLICIES = [
    ("Cascade", "drop a share of candidates\nat each exit"),
    ("PEASI", "rerank passages, then read\nthe best ones' sentences"),
    ("HAS", "answers hashed once;\nquestion attends at query time"),
    ("TowerBuilder /\nSkylineBuilder", "which passage gets\nits next layer"),
    ("MHS", "one body,\nk teachers' heads"),
]


def _box(ax, x: float, y: float, w: float, h: float, text: str, color: str, size: float = 9) -> None:
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02", fc=color, ec="#333333", lw=1))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size)


def draw(out: Path = OUT) -> Path:
    """Draw the picture into ``out``."""
    fig, ax = plt.subplots(figsize=(10, 5.2))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 5.6)
    ax.axis("off")
    _box(ax, 0.2, 0.2, 3.2, 0.6, "rows: (question, candidate) pairs,\npassages, answers", "#eeeeee")
    for i in range(LAYERS):
        _box(ax, 0.2, 1.0 + 0.55 * i, 3.2, 0.45, f"layer {i + 1}: run on any subset of rows", "#d6e6f5", 8)
    ax.text(1.8, 4.45, "the steppable encoder\n(BERT-like backbone; counts\nlayer-units and FLOPs per row)",
            ha="center", va="bottom", fontsize=9, weight="bold")  # fmt: skip
    for i, (name, what) in enumerate(POLICIES):
        y = 4.55 - 1.0 * i
        _box(ax, 5.0, y, 1.7, 0.75, name, "#f7e3c6", 9)
        ax.text(6.9, y + 0.375, what, ha="left", va="center", fontsize=8)
        ax.annotate("", xy=(3.45, 2.35), xytext=(4.95, y + 0.375),
                    arrowprops={"arrowstyle": "->", "color": "#888888", "lw": 0.8})  # fmt: skip
    ax.text(5.85, 5.45, "policies: how many layers, for which rows", ha="center", fontsize=9, weight="bold")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(draw())
