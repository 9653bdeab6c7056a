"""Records, readers and dataset names."""

from sieveqa.data.corpus import CorpusIndex, CorpusOptions, IndexedPassage
from sieveqa.data.documents import Document
from sieveqa.data.formats import read_documents
from sieveqa.data.jsonl import read_jsonl, write_jsonl
from sieveqa.data.readers import read_trecqa, read_wikiqa
from sieveqa.data.records import Candidate, Passage, Question, RankingExample, ScoredCandidate
from sieveqa.data.registry import load_dataset, load_datasets

__all__ = [
    "Candidate",
    "CorpusIndex",
    "CorpusOptions",
    "Document",
    "IndexedPassage",
    "Passage",
    "Question",
    "RankingExample",
    "ScoredCandidate",
    "load_dataset",
    "load_datasets",
    "read_documents",
    "read_jsonl",
    "read_trecqa",
    "read_wikiqa",
    "write_jsonl",
]
