"""Sentence splitting measured against known boundaries: a dataset's own sentences joined back into
documents (one space between them), every boundary the splitter finds compared with theirs.

WikiQA's documents are Wikipedia summaries in sentence order; a TrecQA question's candidates, detokenized
from Penn Treebank tokens (nltk), make a document of news sentences. Boundaries after a sentence without
final punctuation (WikiQA's image captions and list items, separate lines in the original) cannot be
found once joined by a space, so scores are also given over *punctuated* boundaries only. ``stray_quote``
makes the hostile case: one unmatched double quote put before a random word of each document.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

from sieveqa.data.documents import wikiqa_documents
from sieveqa.data.readers import read_trecqa
from sieveqa.paths import data_root

__all__ = ["BoundaryScores", "boundary_scores", "gold_sentences", "stray_quote"]

Span = tuple[int, int]
Splitter = Callable[[str], list[Span]]
_PUNCTUATED = re.compile(r"[.!?…][\"'”’)\]]*$")
_BRACKETS = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}


@dataclass(frozen=True)
class BoundaryScores:
    """Boundary precision, recall and F1 (percent) over a set of documents."""

    precision: float
    recall: float
    f1: float
    boundaries: int
    documents: int
    wrong_documents: int
    longest: int  # characters of the longest sentence found

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def boundary_scores(
    documents: Iterable[Sequence[str]], split: Splitter, punctuated_only: bool = False
) -> BoundaryScores:
    """Score ``split`` (text -> sentence spans) on documents given as their gold sentences.

    With ``punctuated_only`` only gold boundaries after final punctuation count, and a boundary found
    elsewhere counts against precision only where it is not a gold boundary at all.
    """
    found = right = gold_count = documents_seen = wrong = longest = 0
    for sentences in documents:
        text = " ".join(sentences)
        gold: set[int] = set()
        punctuated: set[int] = set()
        at = 0
        for i, sentence in enumerate(sentences):
            if i:
                gold.add(at)
                if _PUNCTUATED.search(sentences[i - 1]):
                    punctuated.add(at)
            at += len(sentence) + 1
        spans = split(text)
        predicted = {start for start, _ in spans[1:]}
        longest = max([longest, *(b - a for a, b in spans)])
        wanted = punctuated if punctuated_only else gold
        counted = predicted - (gold - wanted)
        found += len(counted)
        right += len(counted & wanted)
        gold_count += len(wanted)
        documents_seen += 1
        wrong += counted != wanted
    precision = 100.0 * right / found if found else 100.0
    recall = 100.0 * right / gold_count if gold_count else 100.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return BoundaryScores(
        round(precision, 2), round(recall, 2), round(f1, 2), gold_count, documents_seen, wrong, longest
    )


def gold_sentences(dataset: str) -> list[tuple[str, ...]]:
    """Documents as their sentences: ``wikiqa:SPLIT`` or ``trecqa:SPLIT`` (a TrecQA file name)."""
    family, _, split = dataset.partition(":")
    if family == "wikiqa":
        return [doc.sentences for doc in wikiqa_documents(split) if doc.sentences]
    if family == "trecqa":
        from nltk.tokenize.treebank import TreebankWordDetokenizer  # the bench extra

        detokenize = TreebankWordDetokenizer().detokenize
        return [
            tuple(detokenize([_BRACKETS.get(t, t) for t in cand.text.split()]) for cand in example.candidates)
            for example in read_trecqa(data_root() / "trecqa" / f"{split}.tsv.gz")
        ]
    raise ValueError(f"unknown dataset {dataset!r}: wikiqa:SPLIT or trecqa:SPLIT")


def stray_quote(documents: Iterable[Sequence[str]], seed: int = 0) -> list[tuple[str, ...]]:
    """Each document with one unmatched ``"`` before a random word of a random sentence."""
    rng = random.Random(seed)
    out = []
    for sentences in documents:
        changed = list(sentences)
        i = rng.randrange(len(changed))
        words = changed[i].split(" ")
        j = rng.randrange(len(words))
        words[j] = '"' + words[j]
        changed[i] = " ".join(words)
        out.append(tuple(changed))
    return out
