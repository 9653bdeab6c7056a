"""The ``sieveqa`` command line: one module per command group, all on one Typer app."""

from sieveqa.cli import answer, batch, confidence, data, evaluate, export, index, rank, reader, serve, train
from sieveqa.cli._app import app, main

__all__ = [
    "answer",
    "app",
    "batch",
    "confidence",
    "data",
    "evaluate",
    "export",
    "index",
    "main",
    "rank",
    "reader",
    "serve",
    "train",
]
