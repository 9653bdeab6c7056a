"""What runs at question time: pruning policies over the steppable encoder."""

from sieveqa.runtime.cascade import CascadeRanker, CascadeResult, SequentialRanker, simulate
from sieveqa.runtime.pruning import cascade_order, drop_count, keep_top

__all__ = [
    "CascadeRanker",
    "CascadeResult",
    "SequentialRanker",
    "cascade_order",
    "drop_count",
    "keep_top",
    "simulate",
]
