"""The surface people who rerank already know: sentence-transformers' ``CrossEncoder.predict(pairs)``
and ``.rank(query, documents)``, on every sieveqa ranker (``Ranker`` inherits them from
:class:`CrossEncoderStyle`).

Same meaning as there: ``predict`` gives one score per pair, in order, a probability (the sigmoid of
the logit) for a ranker whose scores are logits; ``rank`` gives ``[{"corpus_id", "score", "text"?}]``
best first. Unlike there, pairs are not scored one by one: those that share a query become one
question, so a cascade prunes among them, and its order (survivors of a later exit first) is the one
``rank`` returns.

    >>> ranker = load_ranker("default")
    >>> ranker.predict([("who wrote hamlet?", "Shakespeare wrote Hamlet."), ("who wrote hamlet?", "Hi.")])
    >>> ranker.rank("who wrote hamlet?", ["Hi.", "Shakespeare wrote Hamlet."], top_k=1, return_documents=True)
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from sieveqa.data.records import Candidate, Question, RankingExample, score_order
from sieveqa.errors import ConfigError
from sieveqa.models.fusion import Fusion, lexical_scores

if TYPE_CHECKING:
    from sieveqa.models.base import RankResult

Activation = Callable[[Tensor], Tensor]


def _pair(pair: object, i: int) -> tuple[str, str]:
    if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
        raise ConfigError(f"pairs[{i}]: expected a (query, text) pair of two strings, got {pair!r:.80}")
    query, text = pair
    if not isinstance(query, str) or not isinstance(text, str):
        raise ConfigError(f"pairs[{i}]: both query and text must be strings, got {pair!r:.80}")
    return query, text


def _listed(values: Any, name: str, what: str) -> list[Any]:
    """``values`` (any iterable) as a list, or a ConfigError naming ``name``."""
    if isinstance(values, list):
        return values
    try:
        return list(values)
    except TypeError:
        raise ConfigError(f"{name} must be a list of {what}, got {type(values).__name__}") from None


def _plain(values: Any) -> Any:
    """numpy arrays and pandas frames as nested lists (``list(frame)`` is its column names)."""
    if hasattr(values, "to_numpy"):
        values = values.to_numpy()
    return values.tolist() if hasattr(values, "tolist") else values


def _numbers(values: Any) -> list[float]:
    """``retrieval_scores`` as floats (numpy's too), or a ConfigError naming the first that is none."""
    listed = _listed(_plain(values), "retrieval_scores", "numbers")
    for i, value in enumerate(listed):
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            raise ConfigError(f"retrieval_scores[{i}]: expected a number, got {type(value).__name__}")
    return [float(v) for v in listed]


def _questions(pairs: Sequence[tuple[str, str]]) -> list[RankingExample]:
    """The pairs grouped by query, in first-seen order; a candidate's id is its pair's position."""
    groups: dict[str, list[int]] = {}
    for i, (query, _) in enumerate(pairs):
        groups.setdefault(query, []).append(i)
    return [
        RankingExample(Question(f"q{j}", query), [Candidate(str(i), pairs[i][1]) for i in rows])
        for j, (query, rows) in enumerate(groups.items())
    ]


def _calls(examples: list[RankingExample], batch_size: int | None) -> list[list[RankingExample]]:
    """Whole questions per call, at most ``batch_size`` pairs each (a bigger question goes alone)."""
    if batch_size is None:
        return [examples] if examples else []
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    calls: list[list[RankingExample]] = []
    size = 0
    for ex in examples:
        if calls and size + len(ex.candidates) <= batch_size:
            calls[-1].append(ex)
            size += len(ex.candidates)
        else:
            calls.append([ex])
            size = len(ex.candidates)
    return calls


def _activate(scores: list[float], logits: bool, activation_fn: Activation | None) -> Tensor:
    values = torch.tensor(scores, dtype=torch.float32)
    if activation_fn is not None:
        return activation_fn(values)
    return torch.sigmoid(values) if logits else values


class CrossEncoderStyle:
    """``predict`` and ``rank`` for a class with ``run(examples, progress)`` (every ``Ranker``)."""

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        raise NotImplementedError

    def predict(
        self,
        pairs: Sequence[Sequence[str]],
        batch_size: int | None = None,
        show_progress_bar: bool = False,
        activation_fn: Activation | None = None,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
    ) -> Any:
        """One score per ``(query, text)`` pair, in order, as sentence-transformers' ``CrossEncoder
        .predict``: a probability where this ranker's scores are logits (``activation_fn`` overrides;
        ``torch.nn.Identity()`` gives the logits), each candidate's own model's score (a cascade's
        from the last exit it reached); a single pair gives a single score. Pairs that
        share a query are one question (a cascade prunes among them); ``batch_size`` caps the pairs
        per call, a question's pairs never split."""
        pairs = _listed(_plain(pairs), "pairs", "(query, text) pairs")
        single = len(pairs) == 2 and all(isinstance(x, str) for x in pairs)
        checked = [_pair(pairs, 0)] if single else [_pair(p, i) for i, p in enumerate(pairs)]
        examples = _questions(checked)
        flat = [0.0] * len(checked)
        logits = True
        for call in _calls(examples, batch_size):
            result = self.run(call, progress=show_progress_bar)
            logits = result.own_logits
            for ex, scores in zip(call, result.own_scores(), strict=True):
                for candidate, score in zip(ex.candidates, scores, strict=True):
                    flat[int(candidate.id)] = score
        out = _activate(flat, logits, activation_fn)
        if convert_to_tensor:
            return out[0] if single else out
        if convert_to_numpy:
            return out.numpy()[0] if single else out.numpy()  # one pair: an np.float32, as there
        return out.tolist()[0] if single else out.tolist()

    def rank(
        self,
        query: str,
        documents: Sequence[str],
        top_k: int | None = None,
        return_documents: bool = False,
        batch_size: int | None = None,
        show_progress_bar: bool = False,
        activation_fn: Activation | None = None,
        retrieval_scores: Sequence[float] | None = None,
        fusion: str = "auto",
    ) -> list[dict[str, Any]]:
        """``documents`` best first for ``query`` as sentence-transformers' ``CrossEncoder.rank``:
        ``[{"corpus_id", "score", "text" with return_documents}]``, the first ``top_k``. The order is
        the ranker's own (a cascade's survivors of a later exit first), scores as ``predict``'s.
        ``batch_size`` is taken for compatibility: one query's documents are one call. With
        ``retrieval_scores`` (what the first stage gave each document) the ranking fuses them as
        ``fusion`` says (``auto``: interpolation, their share 0.2), and the scores are the fused ones;
        a fusion named without them fuses BM25 over ``documents``, as ``rank`` and ``/rerank`` do."""
        if not isinstance(query, str):
            raise ConfigError(f"query must be a string, got {type(query).__name__}")
        if not query.strip():  # as the CLI, /rerank and the framework components refuse it
            raise ConfigError("the query is empty: nothing to rank the documents against")
        if isinstance(documents, str):
            raise ConfigError("documents must be a list of strings, got one string")
        # A generator is read once, here (checking it used to consume it: rank gave []).
        documents = _listed(_plain(documents), "documents", "strings")
        for i, doc in enumerate(documents):
            if not isinstance(doc, str):
                raise ConfigError(f"documents[{i}]: expected a string, got {type(doc).__name__}")
        if top_k is not None and (
            not isinstance(top_k, numbers.Integral) or isinstance(top_k, bool) or top_k < 1
        ):
            raise ConfigError(f"top_k must be an integer >= 1, got {top_k!r}")
        top_k = None if top_k is None else int(top_k)  # numpy's too
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        fused = Fusion.parse(fusion)  # checked, as the scores are, before any scoring
        given = None if retrieval_scores is None else _numbers(retrieval_scores)
        if given is not None and len(given) != len(documents):
            raise ConfigError(f"retrieval_scores: {len(given)} scores for {len(documents)} documents")
        if not documents:
            return []
        candidates = [Candidate(str(i), d) for i, d in enumerate(documents)]
        result = self.run([RankingExample(Question("q", query), candidates)], progress=show_progress_bar)
        scores = _activate(result.own_scores()[0], result.own_logits, activation_fn).tolist()
        order = result.orders()[0]
        if fused.applies(given is not None):  # an explicit fusion without scores: BM25 over the list
            first = [float(g) for g in given] if given is not None else lexical_scores(query, documents)
            scores = fused.combine(result.own_scores()[0], first)
            order = score_order(scores)
        out = []
        for i in order[:top_k]:
            row: dict[str, Any] = {"corpus_id": i, "score": scores[i]}
            if return_documents:
                row["text"] = documents[i]
            out.append(row)
        return out
