"""What a call spent (:class:`Cost`): layer-units, FLOPs, sequences embedded and seconds, keyed by
branch and layer. A cost object belongs to one call, never to a model, so one loaded model can serve
many threads."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BODY", "Cost", "layer_flops"]

BODY = "body"


def layer_flops(seq_len: int, hidden: int, intermediate: int) -> int:
    """Multiply-add FLOPs (x2) of one encoder layer over one sequence of ``seq_len`` tokens.

    Q/K/V/output projections 8·n·h², attention scores and mixing 4·n²·h, feed-forward 4·n·h·f.
    """
    n = seq_len
    return 8 * n * hidden * hidden + 4 * n * n * hidden + 4 * n * hidden * intermediate


@dataclass
class Cost:
    """What one call spent: layer-units, FLOPs (at padded width), sequences embedded, seconds, and
    layer-units per ``(branch, layer)``."""

    layer_units: int = 0
    flops: int = 0
    sequences: int = 0
    seconds: float = 0.0
    per_layer: dict[tuple[str, int], int] = field(default_factory=dict)

    def add_layer(
        self, layer: int, rows: int, seq_len: int, hidden: int, intermediate: int, branch: str = BODY
    ) -> None:
        self.layer_units += rows
        self.flops += rows * layer_flops(seq_len, hidden, intermediate)
        self.per_layer[branch, layer] = self.per_layer.get((branch, layer), 0) + rows

    def add(self, other: Cost) -> None:
        """Add the compute of a call made inside this one (its seconds are already in ours)."""
        self.layer_units += other.layer_units
        self.flops += other.flops
        self.sequences += other.sequences
        for key, rows in other.per_layer.items():
            self.per_layer[key] = self.per_layer.get(key, 0) + rows

    def snapshot(self) -> Cost:
        """A copy of what was spent so far (see :meth:`count_rows`)."""
        return Cost(self.layer_units, self.flops, self.sequences, self.seconds, dict(self.per_layer))

    def count_rows(self, before: Cost, rows: int, padded: int) -> None:
        """Count, of what was spent since ``before`` on one batch of ``padded`` rows, only its first
        ``rows`` (the rest pad the batch to a bucketed shape: every row ran the same layers)."""
        if rows == padded:
            return
        for name in ("layer_units", "flops", "sequences"):
            spent = getattr(self, name) - getattr(before, name)
            setattr(self, name, getattr(before, name) + spent * rows // padded)
        for key, units in self.per_layer.items():
            was = before.per_layer.get(key, 0)
            self.per_layer[key] = was + (units - was) * rows // padded

    def as_dict(self) -> dict[str, int | float]:
        return {
            "layer_units": self.layer_units,
            "flops": self.flops,
            "sequences": self.sequences,
            "seconds": round(self.seconds, 4),
        }
