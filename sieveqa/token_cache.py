"""Token ids of texts tokenized before, so that a text seen again (a corpus passage reranked for
another query, a benchmark's second pass) skips the tokenizer: on two CPU cores the Rust tokenizer is
nine tenths of what a ranking call does besides the model's arithmetic (``bench/host_path.py``).

Bounded in bytes (each text's string, its ids at 4 bytes a token, and the bookkeeping around them),
the least recently used text dropped first; thread-safe.
"""

from __future__ import annotations

import sys
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence

#: Bytes a featurizer's cache holds by default (some 50,000 sentences).
TOKEN_CACHE_BYTES = 16 << 20
#: Bytes an entry costs besides its string and ids: the array's header and the ordered dict's slot.
_ENTRY = 160


def entry_bytes(text: str, ids: Sequence[int]) -> int:
    """What holding ``text`` with its ``ids`` costs."""
    return sys.getsizeof(text) + 4 * len(ids) + _ENTRY


class TokenCache:
    """Token ids by text, at most ``capacity`` bytes in all (0 holds nothing)."""

    def __init__(self, capacity: int = TOKEN_CACHE_BYTES) -> None:
        self.capacity = max(int(capacity), 0)
        self._ids: OrderedDict[str, array] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def bytes(self) -> int:
        """Bytes held (as :func:`entry_bytes` counts them)."""
        return self._bytes

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
        """Hold the ids of these texts, dropping the least recently used past ``capacity``."""
        if not self.capacity:
            return
        kept = {t: array("i", ids) for t, ids in items.items() if entry_bytes(t, ids) <= self.capacity}
        with self._lock:
            for text, ids in kept.items():
                old = self._ids.pop(text, None)
                self._bytes += entry_bytes(text, ids) - (0 if old is None else entry_bytes(text, old))
                self._ids[text] = ids
            while self._bytes > self.capacity:
                text, ids = self._ids.popitem(last=False)
                self._bytes -= entry_bytes(text, ids)

    def clear(self) -> None:
        """Forget every text."""
        with self._lock:
            self._ids.clear()
            self._bytes = 0
