"""Dataset names usable everywhere: ``wikiqa:test``, ``trecqa:test-clean``, ``squad-as2:dev``, ``jsonl:PATH``.

The field's filtering conventions are part of the names:

- ``wikiqa:{train,dev,test}`` keep the questions with at least one correct answer (the standard
  243 test questions); ``wikiqa:{split}-raw`` keep every question (633 in test).
- ``trecqa:{train,train-all,dev,test}`` are the raw files; ``trecqa:{dev,test}-clean`` drop the
  questions whose candidates are all correct or all incorrect (65 dev, 68 test questions).
- ``squad-as2:{train,dev,test}`` is the SQuAD-AS2 benchmark built from SQuAD v1.1 dev (dev and test
  are fixed subsets of 300 and 500 questions; ``dev-all`` and ``test-all`` are the whole splits).
- ``squad-train-as2:{train,dev,dev-all}``: the transfer set built the same way from SQuAD v1.1 *train*
  (85,531 train questions; ``sieveqa.data.squad_train_as2``); add ``-qnli`` for QNLI's view, each
  question with the sentences of its gold paragraph only.
- ``squad-passages:{train,dev,test,dev-all,test-all}`` and ``wikiqa-passages:{train,dev,test}``: the
  passages retrieved for each question as candidates (PEASI's passage reranking); add ``-sentences``
  (``squad-passages:test-sentences``) for their sentences, each with its ``passage_id``.
- ``squad-train-passages:{train,dev}``: the same from SQuAD v1.1 train, on squad-train-as2's articles
  (train: BM25's top 5 passages, correct ones appended; dev: its 300 dev questions over their top 20).
- ``squad2-passages:train``: SQuAD 2.0's questions of the train-split articles, unanswerable ones
  included (their own paragraph's passages labelled 0; ``sieveqa.data.squad2``);
  ``squad-unanswerable:train``: unanswerable questions made from SQuAD v1.1 train, each over its own
  paragraph (``sieveqa.data.unanswerable``).
- ``jsonl:PATH`` reads the generic JSONL format (a bare path ending in .jsonl or .jsonl.gz works too);
  ``pairs:PATH`` also takes unlabelled ``{"query", "text"}`` lines (a label-free retrofit's data).
- ``beir:PATH`` (or ``beir:PATH:SPLIT``, default ``test``): a passage set in BEIR's format, each
  query with BM25's top 100 of the corpus as candidates (``sieveqa.data.beir``).
- ``squad-beir:{dev,test}`` and ``wikiqa-beir:{dev,test}``: passage sets in that format made from
  SQuAD v1.1 dev's paragraphs and WikiQA's documents (``sieveqa.data.beir_sets``).
- Any ranking name takes ``[:N]`` for its first N questions (``squad-as2:test[:100]``), to evaluate
  expensive models on a fixed slice, and ``[~N]`` for N of its questions drawn at random (seed 0,
  file order kept): a training mix that takes all of one set and part of another.

Open-domain QA data (a question, its gold answers, its retrieved passages: ``sieveqa.data.open_qa``)
has its own names, read by :func:`load_open_dataset`: ``squad-open-mini:{train,dev0,dev1,dev-all,test,
test-all}``, ``squad-open-train:{train,dev,dev-all}`` (the same from SQuAD v1.1 train, for training
the reader), ``squad2-open:{train,dev,dev-all}`` (SQuAD 2.0's questions, unanswerable ones included,
over an index of all its paragraphs), ``squad-unanswerable:open`` (the made unanswerable questions over
their own paragraphs) and ``jsonl:PATH`` in that format; these take ``[:N]`` and ``[~N]`` too.
"""

from __future__ import annotations

import contextlib
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from sieveqa.data.jsonl import read_jsonl, read_pairs
from sieveqa.data.open_qa import OpenExample, read_open_jsonl
from sieveqa.data.readers import read_trecqa, read_wikiqa
from sieveqa.data.records import RankingExample
from sieveqa.errors import DataFormatError, DatasetNotFoundError
from sieveqa.paths import cache_root, data_root

Loader = Callable[[str], list[RankingExample]]
_SLICE = re.compile(r"(?P<name>.+)\[(?P<how>[:~])(?P<n>\d+)\]")


def _wikiqa(split: str) -> list[RankingExample]:
    raw = split.endswith("-raw")
    base = split.removesuffix("-raw")
    if base not in ("train", "dev", "test"):
        raise DatasetNotFoundError(
            f"wikiqa has no split {split!r}: use train, dev, test (add -raw for all questions)"
        )
    examples = read_wikiqa(data_root() / "wikiqa" / f"WikiQA-{base}.tsv.gz")
    return examples if raw else [ex for ex in examples if ex.has_positive()]


_TRECQA_FILES = {
    "train": "train",
    "train-all": "train-all",
    "dev": "dev",
    "test": "test",
    "dev-clean": "dev.clean",
    "test-clean": "test.clean",
}


def _trecqa(split: str) -> list[RankingExample]:
    stem = _TRECQA_FILES.get(split)
    if stem is None:
        raise DatasetNotFoundError(f"trecqa has no split {split!r}: use one of {', '.join(_TRECQA_FILES)}")
    examples = read_trecqa(data_root() / "trecqa" / f"{stem}.tsv.gz")
    # The .clean files are published already filtered; the rule is applied too so the name always means it.
    return [ex for ex in examples if ex.is_clean()] if split.endswith("-clean") else examples


_SQUAD_AS2_SPLITS = ("train", "dev", "test", "dev-all", "test-all")


def _squad_as2(split: str) -> list[RankingExample]:
    if split not in _SQUAD_AS2_SPLITS:
        raise DatasetNotFoundError(
            f"squad-as2 has no split {split!r}: use one of {', '.join(_SQUAD_AS2_SPLITS)}"
        )
    from sieveqa.data.squad_as2 import ensure_squad_as2

    return read_jsonl(ensure_squad_as2() / f"{split}.jsonl.gz")


def _squad_train_as2(split: str) -> list[RankingExample]:
    from sieveqa.data.squad_train_as2 import SPLITS, ensure_squad_train_as2, gold_paragraph_view

    base = split.removesuffix("-qnli")
    if base not in SPLITS:
        raise DatasetNotFoundError(
            f"squad-train-as2 has no split {split!r}: use one of {', '.join(SPLITS)} "
            "(add -qnli for the gold paragraph's sentences only)"
        )
    examples = read_jsonl(ensure_squad_train_as2() / f"{base}.jsonl.gz")
    return gold_paragraph_view(examples) if split.endswith("-qnli") else examples


_PASSAGE_SPLITS = {
    "squad-passages": ("train", "dev", "test", "dev-all", "test-all"),
    "squad-train-passages": ("train", "dev"),
    "squad2-passages": ("train", "own"),
    "squad-unanswerable": ("train", "contrast"),
    "wikiqa-passages": ("train", "dev", "test"),
}


def _passage_builder(family: str) -> Callable[[Path], dict]:
    """What builds (or finds cached) a SQuAD passage family's files into a folder."""
    from sieveqa.data import passage_sets, squad2, unanswerable

    return {
        "squad-passages": passage_sets.build_squad_passages,
        "squad-train-passages": passage_sets.build_squad_train_passages,
        "squad2-passages": squad2.build_squad2_passages,
        "squad-unanswerable": unanswerable.build_squad_unanswerable,
    }[family]


def _passages(family: str) -> Loader:
    def load(split: str) -> list[RankingExample]:
        from sieveqa.data import passage_sets

        base = split.removesuffix("-sentences")
        if base not in _PASSAGE_SPLITS[family]:
            splits = ", ".join(_PASSAGE_SPLITS[family])
            raise DatasetNotFoundError(
                f"{family} has no split {split!r}: use one of {splits} (add -sentences for sentences)"
            )
        if family.startswith("squad"):
            folder = cache_root() / family
            _passage_builder(family)(folder)
            examples = read_jsonl(folder / f"{base}.jsonl.gz")
        else:
            examples = passage_sets.wikiqa_passages(_wikiqa(base))
        return examples if split.endswith("-sentences") else passage_sets.to_passages(examples)

    return load


def _beir(family: str) -> Loader:
    """``beir:PATH[:SPLIT]`` (any folder: ``sieveqa.data.beir``) or a built set's ``NAME:SPLIT``."""

    def load(spec: str) -> list[RankingExample]:
        from sieveqa.data import beir, beir_sets

        return beir.load_beir(spec) if family == "beir" else beir_sets.beir_set_loader(family)(spec)

    return load


def _jsonl(path: str) -> list[RankingExample]:
    if not Path(path).is_file():
        raise DatasetNotFoundError(f"jsonl:{path}: no such file")
    return read_jsonl(path)


def _pairs(path: str) -> list[RankingExample]:
    if not Path(path).is_file():
        raise DatasetNotFoundError(f"pairs:{path}: no such file")
    return read_pairs(path)


LOADERS: dict[str, Loader] = {
    "wikiqa": _wikiqa,
    "trecqa": _trecqa,
    "squad-as2": _squad_as2,
    "squad-train-as2": _squad_train_as2,
    "squad-passages": _passages("squad-passages"),
    "squad-train-passages": _passages("squad-train-passages"),
    "squad2-passages": _passages("squad2-passages"),
    "squad-unanswerable": _passages("squad-unanswerable"),
    "wikiqa-passages": _passages("wikiqa-passages"),
    "jsonl": _jsonl,
    "pairs": _pairs,
    **{name: _beir(name) for name in ("beir", "squad-beir", "wikiqa-beir")},
}


T = TypeVar("T")


def _sliced(name: str, sliced: re.Match[str], load: Callable[[str], list[T]]) -> list[T]:
    """``NAME[:N]`` (the first N questions) or ``NAME[~N]`` (N drawn at random, seed 0, in order)."""
    n = int(sliced["n"])
    if n < 1:
        raise DatasetNotFoundError(f"{name}: [{sliced['how']}N] takes N >= 1 questions")
    examples = load(sliced["name"])
    if sliced["how"] == ":":
        return examples[:n]
    keep = sorted(random.Random(0).sample(range(len(examples)), min(n, len(examples))))
    return [examples[i] for i in keep]


def load_dataset(name: str) -> list[RankingExample]:
    """Load a dataset by name (see the module docstring); raises DatasetNotFoundError on a bad name."""
    if sliced := _SLICE.fullmatch(name):
        return _sliced(name, sliced, load_dataset)
    if name.endswith((".jsonl", ".jsonl.gz")) and not name.startswith(("jsonl:", "pairs:")):
        name = f"jsonl:{name}"
    family, sep, split = name.partition(":")
    if not sep or not split:
        raise DatasetNotFoundError(f"dataset name {name!r} must look like FAMILY:SPLIT, e.g. wikiqa:test")
    loader = LOADERS.get(family)
    if loader is None:
        raise DatasetNotFoundError(
            f"unknown dataset family {family!r} in {name!r}: known {', '.join(LOADERS)}"
        )
    return loader(split)


def dataset_file(name: str) -> Path | None:
    """The file a dataset name reads, where it names one (``jsonl:PATH``, ``pairs:PATH``, a bare
    .jsonl path; a slice taken off), else None."""
    if sliced := _SLICE.fullmatch(name):
        name = sliced["name"]
    family, sep, rest = name.partition(":")
    if sep and family in ("jsonl", "pairs"):
        return Path(rest)
    return Path(name) if name.endswith((".jsonl", ".jsonl.gz")) else None


def load_datasets(names: str | list[str]) -> list[RankingExample]:
    """Load and concatenate several datasets (a list, or one comma-separated string)."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    out: list[RankingExample] = []
    for name in names:
        out.extend(load_dataset(name))
    return out


#: The families :func:`load_open_dataset` reads (besides ``jsonl:``).
OPEN_FAMILIES = ("squad-open-mini", "squad-open-train", "squad-gold", "squad2-open", "squad-unanswerable")


def is_open_dataset(name: str) -> bool:
    """Whether ``name`` is an open-domain dataset: of a known family, or a JSONL file whose first
    question comes with ``passages`` (the ranking format has ``candidates``)."""
    if name.endswith((".jsonl", ".jsonl.gz")) and not name.startswith("jsonl:"):
        name = f"jsonl:{name}"
    family, _, path = name.partition(":")
    if family != "jsonl":
        return family in OPEN_FAMILIES
    if not Path(path).is_file():
        return False
    from sieveqa.data.jsonl import iter_json_lines

    with contextlib.closing(iter_json_lines(path)) as lines:
        first = next(lines, None)
    return first is not None and isinstance(first[1], dict) and "passages" in first[1]


def load_open_dataset(name: str) -> list[OpenExample]:
    """``squad-open-mini:SPLIT``, ``squad-open-train:SPLIT``, ``squad-gold:SPLIT`` (SQuAD dev, gold
    paragraphs) or a JSONL file of this format
    (``jsonl:PATH`` or a bare .jsonl path)."""
    from sieveqa.data.squad_open import (
        GOLD_SPLITS,
        SPLITS,
        TRAIN_SPLITS,
        squad_gold,
        squad_open,
        squad_open_train,
    )

    if sliced := _SLICE.fullmatch(name):
        return _sliced(name, sliced, load_open_dataset)
    if name.endswith((".jsonl", ".jsonl.gz")) and not name.startswith("jsonl:"):
        name = f"jsonl:{name}"
    family, _, split = name.partition(":")
    if family == "squad-unanswerable":
        if split != "open":
            raise DatasetNotFoundError(
                f"squad-unanswerable's open-domain split is 'open', not {split!r} (train and contrast rank)"
            )
        from sieveqa.data.unanswerable import unanswerable_open

        return unanswerable_open()
    if family == "squad-open-mini":
        if split not in SPLITS:
            raise DatasetNotFoundError(
                f"squad-open-mini has no split {split!r}: use one of {', '.join(SPLITS)}"
            )
        return squad_open(split)
    if family == "squad-open-train":
        if split not in TRAIN_SPLITS:
            raise DatasetNotFoundError(
                f"squad-open-train has no split {split!r}: use one of {', '.join(TRAIN_SPLITS)}"
            )
        return squad_open_train(split)
    if family == "squad-gold":
        if split not in GOLD_SPLITS:
            raise DatasetNotFoundError(
                f"squad-gold has no split {split!r}: use one of {', '.join(GOLD_SPLITS)}"
            )
        return squad_gold(split)
    if family == "squad2-open":
        from sieveqa.data.squad2 import OPEN_SPLITS, squad2_open

        if split not in OPEN_SPLITS:
            splits = ", ".join(OPEN_SPLITS)
            raise DatasetNotFoundError(f"squad2-open has no split {split!r}: use one of {splits}")
        return squad2_open(split)
    if family == "jsonl":
        if not Path(split).is_file():
            raise DatasetNotFoundError(f"jsonl:{split}: no such file")
        examples = read_open_jsonl(split)
        if not examples:  # every command reading questions needs at least one
            raise DataFormatError(f"{split}: no questions")
        return examples
    raise DatasetNotFoundError(
        f"unknown open-domain dataset {name!r}: use squad-open-mini:SPLIT, squad-open-train:SPLIT, "
        "squad-gold:SPLIT, squad2-open:SPLIT, squad-unanswerable:open or jsonl:PATH (questions with their "
        "passages)"
    )


def load_open_datasets(names: str | list[str]) -> list[OpenExample]:
    """Several open-domain datasets (a list, or one comma-separated string), concatenated."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    return [ex for name in names for ex in load_open_dataset(name)]
