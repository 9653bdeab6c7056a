"""What runs at question time: pruning policies over the steppable encoder, answer stores."""

from sieveqa.runtime.answer_store import AnswerStore, StoreRanker
from sieveqa.runtime.cascade import CascadeRanker, CascadeResult, SequentialRanker, simulate
from sieveqa.runtime.pruning import cascade_order, drop_count, keep_top

__all__ = [
    "AnswerStore",
    "CascadeRanker",
    "CascadeResult",
    "SequentialRanker",
    "StoreRanker",
    "cascade_order",
    "drop_count",
    "keep_top",
    "simulate",
]
