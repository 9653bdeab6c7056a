"""First-stage retrieval (lexical); depends on nothing above the data layer."""

from sieveqa.retrieval.bm25 import BM25Index

__all__ = ["BM25Index"]
