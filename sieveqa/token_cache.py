"""Token ids of texts tokenized before, so that a text seen again (a corpus passage reranked for
another query, a benchmark's second pass) skips the tokenizer: on two CPU cores the Rust tokenizer is
nine tenths of what a ranking call does besides the model's arithmetic (``bench/host_path.py``).

Bounded by tokens (4 bytes each) and by texts (each also holds its string and ~200 bytes of
bookkeeping), the least recently used text dropped first; thread-safe.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence

#: Tokens a featurizer's cache holds by default: ~4 MB of ids (some 30,000 sentences) ...
TOKEN_CACHE = 1 << 20
#: ... and texts (~13 MB of bookkeeping at most, with short texts' strings).
TEXT_CACHE = 1 << 16


class TokenCache:
    """Token ids by text, at most ``capacity`` tokens and ``max_texts`` texts in all (0 holds nothing)."""

    def __init__(self, capacity: int = TOKEN_CACHE, max_texts: int = TEXT_CACHE) -> None:
        self.capacity = max(int(capacity), 0)
        self.max_texts = max(int(max_texts), 0)
        self._ids: OrderedDict[str, array] = OrderedDict()
        self._tokens = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def tokens(self) -> int:
        """Token ids held."""
        return self._tokens

    def take(self, texts: Iterable[str]) -> dict[str, array]:
        """The ids of those ``texts`` held, each marked as just used."""
        found = {}
        with self._lock:
            for text in texts:
                ids = self._ids.get(text)
                if ids is not None:
                    self._ids.move_to_end(text)
                    found[text] = ids
        return found

    def put(self, items: Mapping[str, Sequence[int]]) -> None:
        """Hold the ids of these texts, dropping the least recently used past the bounds."""
        if not self.capacity or not self.max_texts:
            return
        kept = {t: array("i", ids) for t, ids in items.items() if len(ids) <= self.capacity}
        with self._lock:
            for text, ids in kept.items():
                old = self._ids.pop(text, None)
                self._tokens += len(ids) - (0 if old is None else len(old))
                self._ids[text] = ids
            while self._tokens > self.capacity or len(self._ids) > self.max_texts:
                self._tokens -= len(self._ids.popitem(last=False)[1])

    def clear(self) -> None:
        """Forget every text."""
        with self._lock:
            self._ids.clear()
            self._tokens = 0
