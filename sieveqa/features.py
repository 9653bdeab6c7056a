"""Tokenized model inputs: one type for pairs, single texts and ``question [SEP] s1 [SEP] s2 ...``.

A :class:`Features` row is one input sequence. Besides token ids it can carry, per token, a segment id
(``-1`` special token, ``0`` question, ``k`` the k-th passage segment, from 1) and the character span
of the token inside its own text, so a sentence can be pooled (``encoder.pool_segments``) and an
answer span mapped back to characters. A passage longer than the model's limit is either truncated
(``truncated[row]`` says so) or cut into overlapping windows, each a row of its own, ``source[row]``
naming the input it came from.

The question is kept whole; only a question that alone fills the limit is cut, to leave a quarter of
it to the passage. (Hugging Face's ``longest_first`` cut long questions as soon as the pair did not
fit.)
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from tokenizers import Encoding, Tokenizer
from transformers import PreTrainedTokenizerBase

from sieveqa.errors import BackboneError, ConfigError
from sieveqa.profiling import timed
from sieveqa.tokenizing import TokenCache, encodable, fast_backend, private_backend

Span = tuple[int, int]


class _Ids(NamedTuple):
    """A text's token ids without the rest of a Rust ``Encoding`` (which keeps ~25 times their bytes)."""

    ids: Sequence[int]


@dataclass
class Features:
    """Unpadded token rows; optional per-token segment ids and character offsets."""

    input_ids: list[Sequence[int]]
    token_type_ids: list[Sequence[int]]
    source: list[int] = field(default_factory=list)
    truncated: list[bool] = field(default_factory=list)
    segment_ids: list[Sequence[int]] | None = None
    offsets: list[list[Span]] | None = None
    #: The token limit its rows were cut to (None: not known), which caps a bucketed batch's width.
    max_length: int | None = None

    def __post_init__(self) -> None:
        n = len(self.input_ids)
        self.source = self.source or list(range(n))
        self.truncated = self.truncated or [False] * n

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def lengths(self) -> list[int]:
        return [len(ids) for ids in self.input_ids]

    def compact(self) -> Features:
        """These rows as typed arrays and without character offsets: what a training run holds for
        hours. A token then takes 5 bytes, 7 with segment ids, where lists take 8 a pointer and 28 an int
        past 256, and an offset 120 (docs/RESULTS.md, issue 43). Rows already of the type are shared, not
        copied; a value past the type's range raises ``OverflowError``."""

        def typed(rows: list[Sequence[int]], code: str) -> list[Sequence[int]]:
            return [r if isinstance(r, array) and r.typecode == code else array(code, r) for r in rows]

        segments = None if self.segment_ids is None else typed(self.segment_ids, "h")
        return Features(
            typed(self.input_ids, "i"),
            typed(self.token_type_ids, "b"),
            list(self.source),
            list(self.truncated),
            segments,
            None,
            self.max_length,
        )

    @staticmethod
    def concat(parts: Sequence[tuple[int, Features]]) -> Features:
        """The rows of ``parts``, each ``(first, features)`` made from the inputs numbered from ``first``
        on, in one :class:`Features` whose ``source`` numbers the inputs of all of them."""
        if not parts:
            raise ValueError("nothing to concatenate")
        kinds = {(f.segment_ids is None, f.offsets is None, f.max_length) for _, f in parts}
        if len(kinds) > 1:
            raise ValueError(f"features of different kinds (segments, offsets, max_length): {kinds}")
        first = parts[0][1]
        out = Features(
            [],
            [],
            segment_ids=None if first.segment_ids is None else [],
            offsets=None if first.offsets is None else [],
            max_length=first.max_length,
        )
        for start, f in parts:
            out.input_ids += f.input_ids
            out.token_type_ids += f.token_type_ids
            out.source += [start + s for s in f.source]
            out.truncated += f.truncated
            if out.segment_ids is not None and f.segment_ids is not None:
                out.segment_ids += f.segment_ids
            if out.offsets is not None and f.offsets is not None:
                out.offsets += f.offsets
        return out


@dataclass(frozen=True)
class _Template:
    """Where a tokenizer puts its special tokens around one or two sequences, and their type ids."""

    parts: tuple[tuple[int, ...], ...]  # ids before the first sequence, between, after
    part_types: tuple[tuple[int, ...], ...]
    types: tuple[int, ...]  # type id of the first (and second) sequence's tokens

    @property
    def n_special(self) -> int:
        return sum(map(len, self.parts))


def _find(ids: list[int], piece: list[int], start: int) -> int:
    for i in range(start, len(ids) - len(piece) + 1):
        if ids[i : i + len(piece)] == piece:
            return i
    raise ValueError(f"cannot locate {piece} in the tokenizer's template {ids}")


def _probe(backend: Tokenizer, texts: tuple[str, ...]) -> _Template:
    pieces = [backend.encode(t, add_special_tokens=False).ids for t in texts]
    full = backend.encode(*texts, add_special_tokens=True)
    ids, types = full.ids, full.type_ids
    cuts, at = [], 0
    for piece in pieces:
        start = _find(ids, piece, at)
        cuts.append((start, start + len(piece)))
        at = start + len(piece)
    bounds = [0, *(x for cut in cuts for x in cut), len(ids)]
    parts = tuple(tuple(ids[a:b]) for a, b in zip(bounds[::2], bounds[1::2], strict=True))
    part_types = tuple(tuple(types[a:b]) for a, b in zip(bounds[::2], bounds[1::2], strict=True))
    return _Template(parts, part_types, tuple(types[start] for start, _ in cuts))


class Featurizer:
    """Turns texts into :class:`Features` for one tokenizer. Thread-safe: it only reads a private copy
    of the Rust tokenizer with truncation and padding off (the Hugging Face wrapper reconfigures its
    tokenizer on every call, which races across threads)."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise BackboneError(f"{type(tokenizer).__name__} has no fast (Rust) tokenizer; sieveqa needs one")
        self._spec = backend.to_str()
        self._backend = private_backend(self._spec)
        self.pad_id = int(tokenizer.pad_token_id or 0)
        self.sep_id = int(tokenizer.sep_token_id)
        self._single = _probe(self._backend, ("a",))
        self._pair = _probe(self._backend, ("a", "b"))
        self.__setstate__({})

    def __getstate__(self) -> dict[str, object]:
        # A copy (a deep-copied model, a pickled one) starts with an empty cache.
        state = dict(self.__dict__)
        del state["cache"], state["_fast"]
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._fast = fast_backend(self._spec)  # (not pickled: a Rust object, rebuilt from the spec)
        #: Token ids of texts seen before (see ``sieveqa.tokenizing``); ``TokenCache(0)`` holds none.
        self.cache = TokenCache()

    def forget(self) -> None:
        """Forget every text's and word's tokens held (this featurizer's token cache, and the fast
        tokenizer's word cache, which every featurizer of its tokenizer shares): the next call
        tokenizes as a fresh process would."""
        self.cache.clear()
        if self._fast is not None:
            self._fast.clear_cache()

    def _encode_ids(self, texts: list[str]) -> Sequence[_Ids | Encoding]:
        """Token ids of ``texts`` (no offsets): nanotoken's where it matched (see ``sieveqa.tokenizing``),
        else the Rust tokenizer's ``encode_batch_fast`` (tokenizers >= 0.21: a fifth faster)."""
        if self._fast is not None:
            return [_Ids(ids) for ids in self._fast.encode_batch_list(texts, add_special_tokens=False)]
        encode = getattr(self._backend, "encode_batch_fast", self._backend.encode_batch)
        return encode(texts, add_special_tokens=False)

    def _encode(self, texts: Sequence[str], offsets: bool = False) -> Sequence[Encoding | _Ids]:
        """Each text's tokens, from the cache where it holds them (a service's request checked, then
        scored, is tokenized once)."""
        texts, cache = encodable(texts), self.cache  # a lone surrogate as U+FFFD
        if offsets:
            return self._backend.encode_batch(list(texts), add_special_tokens=False)
        if not cache.capacity:
            return self._encode_ids(list(texts))
        unique = list(dict.fromkeys(texts))
        found: dict[str, Encoding | _Ids] = {t: _Ids(ids) for t, ids in cache.take(unique).items()}
        missing = [t for t in unique if t not in found]
        encoded = self._encode_ids(missing)
        cache.put({t: e.ids for t, e in zip(missing, encoded, strict=True)})
        found |= dict(zip(missing, encoded, strict=True))
        return [found[t] for t in texts]

    @timed("tokenize")
    def texts(self, texts: Sequence[str], max_length: int) -> Features:
        """One row per text: ``[CLS] text [SEP]``, truncated to ``max_length`` tokens."""
        single = self._single
        (pre, post), (pre_t, post_t), (kind,) = single.parts, single.part_types, single.types
        room = max_length - self._single.n_special
        if room < 1:
            raise ConfigError(f"max_length {max_length} leaves no room for text")
        out = Features([], [], max_length=max_length)
        for enc in self._encode(texts):
            ids = enc.ids[:room]
            out.input_ids.append([*pre, *ids, *post])
            out.token_type_ids.append([*pre_t, *[kind] * len(ids), *post_t])
            out.truncated.append(len(enc.ids) > room)
        out.source = list(range(len(out)))
        return out

    @timed("tokenize")
    def pairs(
        self,
        questions: Sequence[str],
        texts: Sequence[str],
        max_length: int,
        stride: int | None = None,
        offsets: bool = False,
    ) -> Features:
        """``[CLS] question [SEP] text [SEP]`` rows; see :meth:`segments` for ``stride`` and ``offsets``."""
        if len(questions) != len(texts):
            raise ValueError(f"{len(questions)} questions but {len(texts)} candidate texts")
        return self._rows(questions, [[t] for t in texts], max_length, stride, offsets, segments=offsets)

    @timed("tokenize")
    def segments(
        self,
        questions: Sequence[str],
        passages: Sequence[Sequence[str]],
        max_length: int,
        stride: int | None = None,
        offsets: bool = False,
    ) -> Features:
        """``[CLS] question [SEP] s1 [SEP] s2 ... [SEP] sk [SEP]`` rows with a segment id per token.

        Without ``stride`` a passage that does not fit is truncated (``truncated`` marks the row);
        with it, the passage is cut into windows that overlap by ``stride`` tokens, one row each.
        ``offsets`` adds each token's character span inside its question or segment.
        """
        if len(questions) != len(passages):
            raise ValueError(f"{len(questions)} questions but {len(passages)} passages")
        return self._rows(questions, passages, max_length, stride, offsets, segments=True)

    def _rows(
        self,
        questions: Sequence[str],
        passages: Sequence[Sequence[str]],
        max_length: int,
        stride: int | None,
        offsets: bool,
        segments: bool,
    ) -> Features:
        out = Features(
            [],
            [],
            segment_ids=[] if segments else None,
            offsets=[] if offsets else None,
            max_length=max_length,
        )
        if not questions:
            return out
        unique = list(dict.fromkeys(questions))
        q_enc = dict(zip(unique, self._encode(unique, offsets), strict=True))
        sizes = [len(p) for p in passages]
        flat = self._encode([s for p in passages for s in p], offsets)
        budget = max_length - self._pair.n_special
        if budget < 2:
            raise ConfigError(f"max_length {max_length} leaves no room for a question and a passage")
        if stride is not None and stride < 0:
            raise ConfigError(f"stride must be >= 0, got {stride}")
        start = 0
        for i, (question, size) in enumerate(zip(questions, sizes, strict=True)):
            side = _passage_side(flat[start : start + size], self.sep_id, segments, offsets)
            start += size
            q = q_enc[question]
            q_len = len(q.ids)
            keep = max(budget // 4, 1)
            if q_len >= budget:  # the question alone fills the limit: cut it, keep a quarter
                q_len = budget - min(len(side[0]), keep)
            if stride is not None and len(side[0]) > budget - q_len:
                # Windows must advance past their overlap: a long question is cut so that each
                # window keeps ``stride`` tokens of overlap and a quarter of new passage.
                q_len = min(q_len, max(budget - stride - keep, 1))
            room = budget - q_len
            if stride is not None and stride >= room and len(side[0]) > room:
                raise ConfigError(f"stride {stride} must be below the {room} passage tokens per window")
            for lo, hi in _windows(len(side[0]), room, stride):
                self._append(out, q, q_len, side, lo, hi, i, truncated=stride is None and hi < len(side[0]))
        return out

    def _append(
        self,
        out: Features,
        q: Encoding | _Ids,
        q_len: int,
        side: tuple[Sequence[int], list[int], list[Span]],
        lo: int,
        hi: int,
        source: int,
        truncated: bool,
    ) -> None:
        (pre, mid, post), (pre_t, mid_t, post_t) = self._pair.parts, self._pair.part_types
        q_type, p_type = self._pair.types
        ids, segs, spans = side
        out.input_ids.append([*pre, *q.ids[:q_len], *mid, *ids[lo:hi], *post])
        out.token_type_ids.append([*pre_t, *[q_type] * q_len, *mid_t, *[p_type] * (hi - lo), *post_t])
        out.source.append(source)
        out.truncated.append(truncated or q_len < len(q.ids))
        if out.segment_ids is not None:
            out.segment_ids.append(
                [*[-1] * len(pre), *[0] * q_len, *[-1] * len(mid), *segs[lo:hi], *[-1] * len(post)]
            )
        if out.offsets is not None:
            none = [(0, 0)]
            out.offsets.append(
                [*none * len(pre), *q.offsets[:q_len], *none * len(mid), *spans[lo:hi], *none * len(post)]
            )


def _passage_side(
    encodings: Sequence[Encoding | _Ids], sep_id: int, segments: bool, offsets: bool
) -> tuple[Sequence[int], list[int], list[Span]]:
    """A passage's tokens (segments joined by separator tokens), their segment ids and spans."""
    if len(encodings) == 1 and not segments and not offsets:
        return encodings[0].ids, [], []
    ids, segs, spans = list[int](), list[int](), list[Span]()
    for k, enc in enumerate(encodings, start=1):
        if k > 1:
            ids.append(sep_id)
            segs.append(-1)
            spans.append((0, 0))
        ids.extend(enc.ids)
        segs.extend([k] * len(enc.ids))
        if offsets:
            spans.extend(enc.offsets)
    return ids, segs, spans


def _windows(length: int, room: int, stride: int | None) -> list[tuple[int, int]]:
    """Token ranges of a passage: the first ``room`` tokens, or overlapping windows covering all."""
    if stride is None or length <= room:
        return [(0, min(length, room))]
    out, lo = [], 0
    while True:
        out.append((lo, min(lo + room, length)))
        if lo + room >= length:
            return out
        lo += room - stride
