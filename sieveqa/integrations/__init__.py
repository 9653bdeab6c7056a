"""sieveqa's rankers inside the frameworks people build retrieval pipelines with, each an optional
extra tested against the real library:

- LangChain (``pip install 'sieveqa[langchain]'``): :class:`sieveqa.integrations.langchain.SieveQACompressor`,
  a document compressor for a ``ContextualCompressionRetriever``;
- LlamaIndex (``sieveqa[llamaindex]``): :class:`sieveqa.integrations.llamaindex.SieveQARerank`, a node
  postprocessor;
- Haystack (``sieveqa[haystack]``): :class:`sieveqa.integrations.haystack.SieveQARanker`, a ranker
  component.

Each takes a model name or folder (``default``, ``default-cascade``, ...), the cascade's
``drop_ratios`` where the model has exits (its compute budget), and how many documents to keep under
the framework's own name for it (``top_n`` in LangChain and LlamaIndex, ``top_k`` in Haystack), and
``max_documents`` a call may rank (1000, as ``sieveqa serve``; None: no limit), and ``fusion``: how
the retriever's scores (a LlamaIndex node's, a Haystack document's; higher is better) are combined
with the model's, as ``/rerank`` combines them (``auto``: interpolated, their share 0.2, where every
document has one; ``none``: the model alone; ``interp:W`` / ``rrf:W``, BM25 over the list where the
retriever gave none). Each kept document carries :meth:`~sieveqa.models.base.Ranker.rank`'s score:
the model's probability where nothing was fused; where the retriever's scores were, the fused score,
in [0, 1] and relative to the call's documents (the best 1.0 where one leads on both): an order, not a
probability to threshold (``fusion="none"`` for that). Settings are checked when a component is built.
"""

from __future__ import annotations

import math
import numbers
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sieveqa.errors import ConfigError
from sieveqa.models.base import Ranker
from sieveqa.models.fusion import Fusion

#: Rankers loaded by name and drop ratios, the last few used (each holds a model's weights).
_LOADED: OrderedDict[tuple[str, str], Ranker] = OrderedDict()
_KEPT = 4
_LOCK = threading.Lock()


def shared_ranker(model: str | Path | Ranker, drop_ratios: float | Sequence[float] | None = None) -> Ranker:
    """``model`` loaded once per process (a name or folder; a Ranker is used as it is), with
    ``drop_ratios`` for a cascade."""
    if isinstance(model, Ranker):
        if drop_ratios is not None:
            raise ConfigError("drop_ratios goes with a model name or folder, not a loaded ranker")
        return model
    from sieveqa.models.zoo import SHIPPED
    from sieveqa.runtime.policy import load_ranker

    folder = Path(model).expanduser()
    # A shipped name wins, as load_ranker has it; a folder is keyed by where it is.
    name = str(folder.resolve()) if str(model) not in SHIPPED and folder.exists() else str(model)
    # One key however the ratios are spelt: 1 and 1.0, a tuple and a list, numpy floats and Python's
    ratios: float | tuple[float, ...] | None = (
        None
        if drop_ratios is None
        else float(drop_ratios)
        if isinstance(drop_ratios, float | int)
        else tuple(float(r) for r in drop_ratios)
    )
    key = (name, ratios)
    with _LOCK:
        if key not in _LOADED:
            overrides: dict[str, Any] = {} if drop_ratios is None else {"drop_ratios": drop_ratios}
            _LOADED[key] = load_ranker(name, **overrides)
            while len(_LOADED) > _KEPT:
                _LOADED.popitem(last=False)
        _LOADED.move_to_end(key)
        return _LOADED[key]


#: Documents one call ranks unless the component says otherwise: what ``sieveqa serve`` takes in a
#: request. Ten thousand RAG passages ran on for minutes with nothing said.
MAX_DOCUMENTS = 1000


def _count(value: object, what: str) -> None:
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if value is not None and (not whole or value < 1):  # type: ignore[operator]
        raise ConfigError(f"{what} must be an integer >= 1 (or None), got {value!r}")


def check_settings(
    model: str | Path | Ranker, top: int | None, limit: int | None, fusion: str, top_name: str
) -> None:
    """A component's settings, checked where it is built (a misspelt model or a negative count used to
    fail at the first call); nothing is loaded."""
    if not isinstance(model, Ranker):
        from sieveqa.models.zoo import check_model_name

        check_model_name(model)
    _count(top, top_name)
    _count(limit, "max_documents")
    Fusion.parse(fusion)


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def keep(
    ranker: Ranker,
    query: str,
    texts: Sequence[str],
    top: int | None,
    limit: int | None = MAX_DOCUMENTS,
    retrieval_scores: Sequence[float | None] | None = None,
    fusion: str = "auto",
) -> list[tuple[int, float]]:
    """``(position, score)`` of the best ``top`` texts for ``query`` (all of them with None); a blank
    query, or more than ``limit`` texts (None: no limit), is refused as ``/rerank`` refuses it. Where
    every text comes with the retriever's score (``retrieval_scores``: a LlamaIndex node's, a Haystack
    document's; numpy numbers too), the ranking fuses it as ``fusion`` says, and the scores are the
    fused ones."""
    _count(top, "the number of documents to keep")
    if not texts:
        return []
    if not query.strip():
        raise ConfigError("the query is empty: nothing to rank the documents against")
    if limit is not None and len(texts) > limit:
        raise ConfigError(
            f"{len(texts)} documents, more than max_documents={limit} in one call (a cross-encoder "
            "reads every one: give fewer, or raise max_documents, None for no limit)"
        )
    given = list(retrieval_scores or ())
    usable = all(_is_number(g) for g in given) and len(set(given)) > 1
    scores = [float(g) for g in given] if usable and len(given) == len(texts) else None  # all alike: none
    ranked = ranker.rank(query, list(texts), top_k=top, retrieval_scores=scores, fusion=fusion)
    return [(row["corpus_id"], row["score"]) for row in ranked]
