"""The Rust tokenizers a :class:`~sieveqa.features.Featurizer` encodes with.

Hugging Face's ``tokenizers`` gives every tokenization that needs character offsets. Token ids alone
come from nanotoken's WordPiece tokenizer where it takes the tokenizer and gives Hugging Face's ids on
a set of hard probes, checked at load: on two cores it tokenizes WikiQA's sentences five times faster
than Hugging Face's, every cache cold (bench/host_path.py), and its ids were equal to Hugging Face's
on 247,563 texts (WikiQA, TrecQA, SQuAD sentences and passages, 40,000 random Unicode strings; issue
46). Anything it does not
take (a BPE or Unigram tokenizer) stays on Hugging Face's; ``SIEVEQA_TOKENIZER=hf`` keeps all there.
"""

from __future__ import annotations

import functools
import os
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

#: ``SIEVEQA_TOKENIZER=hf`` keeps every tokenization on Hugging Face's tokenizer.
TOKENIZER_ENV = "SIEVEQA_TOKENIZER"
#: Words nanotoken's cache holds per worker thread (its default, 2**20, grew a process by 355 MB over
#: 12 million random words; this one by 33 MB). Set for the whole process when nanotoken is first used.
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
    nanotoken.set_cache_entries(FAST_CACHE_ENTRIES)
    try:
        fast = nanotoken.Tokenizer.from_json(spec)
    except (nanotoken.UnsupportedTokenizerError, ValueError):
        return None
    reference = private_backend(spec).encode_batch(list(_PROBES), add_special_tokens=False)
    got = fast.encode_batch_list(_PROBES, add_special_tokens=False, parallel=False)
    return fast if got == [e.ids for e in reference] else None


@functools.lru_cache(maxsize=8)
def private_backend(spec: str) -> Tokenizer:
    """A Rust tokenizer built from ``spec`` with truncation and padding off; shared by the featurizers
    of one tokenizer (they only encode with it, which is thread-safe), since building one costs ~50 ms."""
    backend = Tokenizer.from_str(spec)
    backend.no_truncation()
    backend.no_padding()
    return backend
