"""What runs at question time: rankers that apply a policy over the steppable encoder, answer stores,
and the answer pipeline over a corpus index."""

from sieveqa.runtime.answer.answerer import Answer, Answerer, load_answerer
from sieveqa.runtime.cascade import CascadePolicy, CascadeRanker, CascadeResult, SequentialRanker
from sieveqa.runtime.ensemble import EnsembleRanker, EnsembleSpec
from sieveqa.runtime.policy import Policy, load_ranker
from sieveqa.runtime.pruning import cascade_order, check_drop_ratios, drop_count, keep_top
from sieveqa.runtime.store.answer_store import AnswerStore
from sieveqa.runtime.store.ranker import SearchSettings, StoreHit, StoreRanker
from sieveqa.runtime.trace import CascadeTrace, simulate

__all__ = [
    "Answer",
    "AnswerStore",
    "Answerer",
    "CascadePolicy",
    "CascadeRanker",
    "CascadeResult",
    "CascadeTrace",
    "EnsembleRanker",
    "EnsembleSpec",
    "Policy",
    "SearchSettings",
    "SequentialRanker",
    "StoreHit",
    "StoreRanker",
    "cascade_order",
    "check_drop_ratios",
    "drop_count",
    "keep_top",
    "load_answerer",
    "load_ranker",
    "simulate",
]
