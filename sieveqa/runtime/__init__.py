"""What runs at question time: pruning policies over the steppable encoder."""

from sieveqa.runtime.pruning import cascade_order, drop_count, keep_top

__all__ = ["cascade_order", "drop_count", "keep_top"]
