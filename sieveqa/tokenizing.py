"""The Rust tokenizers a :class:`~sieveqa.features.Featurizer` encodes with.

Hugging Face's ``tokenizers`` gives every tokenization that needs character offsets. Token ids alone
come from nanotoken's WordPiece tokenizer where it takes the tokenizer and gives Hugging Face's ids on
a set of hard probes, checked at load: on two cores it tokenizes WikiQA's sentences five times faster
than Hugging Face's, every cache cold (bench/host_path.py), and its ids were equal to Hugging Face's
on 247,563 texts (WikiQA, TrecQA, SQuAD sentences and passages, 40,000 random Unicode strings; issue
46). Anything it does not take (a BPE or Unigram tokenizer) stays on Hugging Face's;
``SIEVEQA_TOKENIZER=hf`` keeps all there.

A featurizer also keeps the token ids of texts it tokenized before (:class:`TokenCache`), so that a
text seen again (a corpus passage reranked for another query, a benchmark's second pass) skips the
tokenizer altogether. It is bounded in bytes (each text's string, its ids at 4 bytes a token, and the
bookkeeping around them), the least recently used text dropped first; thread-safe.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tokenizers import Tokenizer

#: Probes a fast tokenizer must tokenize exactly as Hugging Face's before it is used: accents, CJK,
#: control and zero-width characters, a word past WordPiece's 100 characters, special tokens in text.
_PROBES = (
    'Who wrote Hamlet? Shakespeare, c. 1600 -- "the" play\'s 4,042 lines.',
    "Café naïve résumé Ångström ÉCOLE ﬁnance Straße ½ ² № ™ ‰ † •",
    "東京は日本の首都です。 北京 서울 ภาษาไทย Ελληνικά Кириллица العربية עברית",
    "tab\there\u200bzero\u00adsoft\u200dwidth\x00nul\x7fdel \U0001f600 emoji \ue000 private",
    "a" * 120 + " antidisestablishmentarianism pneumonoultramicroscopic",
    "[CLS] inside [SEP] text [PAD] [MASK] [UNK] ##piece",
    "",
    "   \n\t  ",
)

log = logging.getLogger("sieveqa")
#: ``SIEVEQA_TOKENIZER=hf`` keeps every tokenization on Hugging Face's tokenizer.
TOKENIZER_ENV = "SIEVEQA_TOKENIZER"
#: Words nanotoken's cache holds per worker thread, so its bytes are bounded too (a word over 100
#: characters is one ``[UNK]``): its default, 2**20, grew a process by 355 MB over 12 million random
#: words, this one by 33 MB. Set for the whole process when nanotoken is first used.
FAST_CACHE_ENTRIES = 1 << 16


@functools.lru_cache(maxsize=8)
def fast_backend(spec: str) -> Any | None:
    """nanotoken's WordPiece tokenizer for ``spec`` when it is installed, takes this tokenizer and
    gives the same ids as Hugging Face's on the probes. None otherwise (Hugging Face's is used)."""
    if os.environ.get(TOKENIZER_ENV, "").lower() == "hf":
        return None
    try:
        import nanotoken
    except ImportError:
        return None
    try:
        nanotoken.set_cache_entries(FAST_CACHE_ENTRIES)
        fast = nanotoken.Tokenizer.from_json(spec)
        got = fast.encode_batch_list(_PROBES, add_special_tokens=False, parallel=False)
    except Exception as err:  # any failure of the optional fast path falls back
        log.info("nanotoken not used (%s: %s); Hugging Face's tokenizer instead", type(err).__name__, err)
        return None
    reference = private_backend(spec).encode_batch(list(_PROBES), add_special_tokens=False)
    return fast if got == [e.ids for e in reference] else None


@functools.lru_cache(maxsize=8)
def private_backend(spec: str) -> Tokenizer:
    """A Rust tokenizer built from ``spec`` with truncation and padding off; shared by the featurizers
    of one tokenizer (they only encode with it, which is thread-safe), since building one costs ~50 ms."""
    backend = Tokenizer.from_str(spec)
    backend.no_truncation()
    backend.no_padding()
    return backend


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


#: A lone UTF-16 surrogate: a Python string may hold one (bytes decoded with surrogateescape, JSON's
#: "\\ud800"), no UTF-8 tokenizer can encode it.
_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(texts: Sequence[str]) -> Sequence[str]:
    """``texts`` with each lone surrogate as U+FFFD (one character for one: offsets keep their place)."""
    if all(t.isascii() or not _SURROGATE.search(t) for t in texts):
        return texts
    return [_SURROGATE.sub("\ufffd", t) for t in texts]
