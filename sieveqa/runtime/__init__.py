"""What runs at question time: rankers that apply a policy over the steppable encoder, answer stores,
and the answer pipeline over a corpus index. Names are imported on first use, so a command that only
reads a settings dataclass (``rank``'s store-search flags) loads neither torch nor the models."""

from __future__ import annotations

from sieveqa.lazy import lazy_getattr

_EXPORTS = {
    "Answer": "sieveqa.runtime.answer.answerer",
    "Answerer": "sieveqa.runtime.answer.answerer",
    "load_answerer": "sieveqa.runtime.answer.answerer",
    "CascadePolicy": "sieveqa.runtime.cascade",
    "CascadeRanker": "sieveqa.runtime.cascade",
    "CascadeResult": "sieveqa.runtime.cascade",
    "SequentialRanker": "sieveqa.runtime.cascade",
    "EnsembleRanker": "sieveqa.runtime.ensemble",
    "EnsembleSpec": "sieveqa.runtime.ensemble",
    "Policy": "sieveqa.runtime.policy",
    "load_ranker": "sieveqa.runtime.policy",
    "cascade_order": "sieveqa.runtime.pruning",
    "check_drop_ratios": "sieveqa.runtime.pruning",
    "drop_count": "sieveqa.runtime.pruning",
    "keep_top": "sieveqa.runtime.pruning",
    "AnswerStore": "sieveqa.runtime.store.answer_store",
    "SearchSettings": "sieveqa.runtime.store.settings",
    "StoreHit": "sieveqa.runtime.store.ranker",
    "StoreRanker": "sieveqa.runtime.store.ranker",
    "CascadeTrace": "sieveqa.runtime.trace",
    "simulate": "sieveqa.runtime.trace",
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr("sieveqa.runtime", _EXPORTS)
