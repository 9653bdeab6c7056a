"""A small, deterministic BM25 index over plain texts with string ids, built on ``bm25s``.

Texts are lower-cased, split into words of two or more word characters (the scikit-learn pattern bm25s
uses) and English stopwords are removed; no stemming, so the index needs nothing beyond ``bm25s`` and
numpy. Scripts written without spaces (Chinese, Japanese; Korean's words carry their particles) would
make a whole clause one word, so runs of those characters become their single characters and the
pairs of neighbours (as Lucene's CJK analyzer does, unigrams kept so a one-character query matches).
Scoring is Lucene's BM25 variant. Results are ordered by score, ties broken by id, so the same
corpus and query always give the same list whatever order the documents were added in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np
from bm25s.tokenization import Tokenizer

__all__ = ["BM25Index", "split_words"]

IDS = "ids.json"

# Han (with extension A and compatibility ideographs), kana (half-width too) and Hangul syllables.
_CJK_CHARS = "\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")
_WORD = re.compile(r"(?u)\b\w\w+\b")
_PIECE = re.compile(f"[{_CJK_CHARS}]+|[^\\W{_CJK_CHARS}]+")


def split_words(text: str) -> list[str]:
    """The index's words of ``text``: words as bm25s splits them, runs of CJK as characters and pairs."""
    if not _CJK_RUN.search(text):
        return _WORD.findall(text)
    words: list[str] = []
    for piece in _PIECE.findall(text):
        if not _CJK_RUN.fullmatch(piece):
            if len(piece) > 1:
                words.append(piece)
            continue
        words.extend(piece)
        words.extend(piece[i : i + 2] for i in range(len(piece) - 1))
    return words


class BM25Index:
    """BM25 over a fixed list of ``(id, text)`` documents; build it with :meth:`build`."""

    def __init__(self, ids: list[str], tokenizer: Tokenizer, model: bm25s.BM25) -> None:
        self._ids = ids
        self._tokenizer = tokenizer
        self._model = model
        # Position of each document in id order: the secondary sort key that makes ties deterministic.
        self._id_rank = np.argsort(np.argsort(np.asarray(ids, dtype=object), kind="stable"), kind="stable")

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> BM25Index:
        """Index ``texts`` under ``ids`` (same length, ids unique)."""
        ids = [str(i) for i in ids]
        texts = list(texts)
        if len(ids) != len(texts):
            raise ValueError(f"BM25Index.build: {len(ids)} ids but {len(texts)} texts")
        if not ids:
            raise ValueError("BM25Index.build: the corpus is empty")
        if len(set(ids)) != len(ids):
            dupes = sorted({i for i in ids if ids.count(i) > 1})[:5]
            raise ValueError(f"BM25Index.build: duplicate ids, e.g. {dupes}")
        tokenizer = Tokenizer(lower=True, splitter=split_words, stopwords="en", stemmer=None)
        token_ids = tokenizer.tokenize(texts, update_vocab=True, return_as="ids", show_progress=False)
        model = bm25s.BM25(k1=k1, b=b, method="lucene", backend="numpy")
        model.index((token_ids, tokenizer.get_vocab_dict()), show_progress=False)
        return cls(ids, tokenizer, model)

    def save(self, folder: str | Path) -> None:
        """Write the index into ``folder`` (bm25s' own files, its vocabulary and the ids)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self._model.save(str(folder), show_progress=False)
        self._tokenizer.save_vocab(str(folder))
        self._tokenizer.save_stopwords(str(folder))
        (folder / IDS).write_text(json.dumps(self._ids), encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path, mmap: bool = False) -> BM25Index:
        """Read an index written by :meth:`save`."""
        folder = Path(folder)
        model = bm25s.BM25.load(str(folder), mmap=mmap, show_progress=False)
        tokenizer = Tokenizer(lower=True, splitter=split_words, stopwords=[], stemmer=None)
        tokenizer.load_vocab(str(folder))
        tokenizer.load_stopwords(str(folder))
        ids = json.loads((folder / IDS).read_text(encoding="utf-8"))
        return cls(ids, tokenizer, model)

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def splits_cjk(self) -> bool:
        """False for an index built before CJK runs were split (a word of three or more CJK
        characters in its vocabulary): questions in those scripts match nothing in it."""
        return not any(len(w) > 2 and _CJK_RUN.search(w) for w in self._tokenizer.get_vocab_dict())

    @property
    def ids(self) -> list[str]:
        """Document ids in insertion order."""
        return list(self._ids)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Return the ``min(k, len(self))`` best ``(id, score)`` pairs for ``query``, best first."""
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[list[tuple[str, float]]]:
        """:meth:`search` for many queries: one tokenizer pass, then one score vector per query."""
        if not queries:
            return []
        # Words the corpus never saw cannot score, so the vocabulary is frozen; allow_empty=False keeps
        # a stopword-only query from matching the placeholder token bm25s gives empty documents.
        token_ids = self._tokenizer.tokenize(
            list(queries), update_vocab=False, return_as="ids", show_progress=False, allow_empty=False
        )
        return [self._top_k(self._scores(ids), k) for ids in token_ids]

    def scores(self, query: str) -> np.ndarray:
        """The score of every document for ``query``, in insertion order."""
        (token_ids,) = self._tokenizer.tokenize(
            [query], update_vocab=False, return_as="ids", show_progress=False, allow_empty=False
        )
        return self._scores(token_ids)

    def _scores(self, token_ids: list[int]) -> np.ndarray:
        if not token_ids:
            return np.zeros(len(self._ids), dtype=np.float32)
        return self._model.get_scores_from_ids(token_ids)

    def _top_k(self, scores: np.ndarray, k: int) -> list[tuple[str, float]]:
        n = len(scores)
        k = min(k, n)
        if k <= 0:
            return []
        if k < n:
            # Keep every document tied with the k-th score so the id tie-break sees all of them.
            threshold = np.partition(scores, n - k)[n - k]
            pool = np.flatnonzero(scores >= threshold)
        else:
            pool = np.arange(n)
        order = np.lexsort((self._id_rank[pool], -scores[pool]))[:k]
        return [(self._ids[i], float(scores[i])) for i in pool[order]]
