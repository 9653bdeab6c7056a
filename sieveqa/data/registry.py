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
- ``jsonl:PATH`` reads the generic JSONL format (a bare path ending in .jsonl or .jsonl.gz works too).
- Any ranking name takes ``[:N]`` for its first N questions (``squad-as2:test[:100]``), to evaluate
  expensive models on a fixed slice.

Open-domain QA data (a question, its gold answers, its retrieved passages: ``sieveqa.data.open_qa``)
has its own names, read by :func:`load_open_dataset`: ``squad-open-mini:{train,dev0,dev1,dev-all,test,
test-all}``, ``squad-open-train:{train,dev,dev-all}`` (the same from SQuAD v1.1 train, for training
the reader) and ``jsonl:PATH`` in that format.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

from sieveqa.data.jsonl import read_jsonl
from sieveqa.data.open_qa import OpenExample, read_open_jsonl
from sieveqa.data.readers import read_trecqa, read_wikiqa
from sieveqa.data.records import RankingExample
from sieveqa.errors import DataFormatError, DatasetNotFoundError
from sieveqa.paths import cache_root, data_root

Loader = Callable[[str], list[RankingExample]]
_SLICE = re.compile(r"(?P<name>.+)\[:(?P<n>\d+)\]")


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
    "wikiqa-passages": ("train", "dev", "test"),
}


def _passages(family: str) -> Loader:
    def load(split: str) -> list[RankingExample]:
        from sieveqa.data import passage_sets

        base = split.removesuffix("-sentences")
        if base not in _PASSAGE_SPLITS[family]:
            splits = ", ".join(_PASSAGE_SPLITS[family])
            raise DatasetNotFoundError(
                f"{family} has no split {split!r}: use one of {splits} (add -sentences for sentences)"
            )
        if family.startswith("squad-"):
            examples = passage_sets.squad_passages(base, family)
        else:
            examples = passage_sets.wikiqa_passages(_wikiqa(base))
        return examples if split.endswith("-sentences") else passage_sets.to_passages(examples)

    return load


def _jsonl(path: str) -> list[RankingExample]:
    if not Path(path).is_file():
        raise DatasetNotFoundError(f"jsonl:{path}: no such file")
    return read_jsonl(path)


LOADERS: dict[str, Loader] = {
    "wikiqa": _wikiqa,
    "trecqa": _trecqa,
    "squad-as2": _squad_as2,
    "squad-train-as2": _squad_train_as2,
    "squad-passages": _passages("squad-passages"),
    "squad-train-passages": _passages("squad-train-passages"),
    "wikiqa-passages": _passages("wikiqa-passages"),
    "jsonl": _jsonl,
}


def _build_squad_as2(top_k: int | None, force: bool) -> dict:
    from sieveqa.data.squad_as2 import build_squad_as2

    return build_squad_as2(force=force, **({"top_k": top_k} if top_k is not None else {}))


def _build_squad_train_as2(top_k: int | None, force: bool) -> dict:
    from sieveqa.data.squad_train_as2 import build_squad_train_as2

    return build_squad_train_as2(force=force, **({"train_top_k": top_k} if top_k is not None else {}))


def _build_squad_open_train(top_k: int | None, force: bool) -> dict:
    from sieveqa.data.squad_open import TRAIN_NAME, build_squad_open_train

    if force:
        shutil.rmtree(cache_root() / TRAIN_NAME, ignore_errors=True)
    return build_squad_open_train(**({"top_k": top_k} if top_k is not None else {}))


def _build_squad_train_passages(top_k: int | None, force: bool) -> dict:
    from sieveqa.data.passage_sets import build_squad_train_passages

    if force:
        shutil.rmtree(cache_root() / "squad-train-passages", ignore_errors=True)
    return build_squad_train_passages(**({"top_k": top_k} if top_k is not None else {}))


#: Derived benchmarks ``sieveqa data build`` makes: each builder takes BM25's paragraphs per (training)
#: question (None: its default) and ``force``, and returns the manifest.
BUILDERS: dict[str, Callable[[int | None, bool], dict]] = {
    "squad-as2": _build_squad_as2,
    "squad-train-as2": _build_squad_train_as2,
    "squad-train-passages": _build_squad_train_passages,
    "squad-open-train": _build_squad_open_train,
}


def load_dataset(name: str) -> list[RankingExample]:
    """Load a dataset by name (see the module docstring); raises DatasetNotFoundError on a bad name."""
    sliced = _SLICE.fullmatch(name)
    if sliced:
        if int(sliced["n"]) < 1:
            raise DatasetNotFoundError(f"{name}: [:N] takes N >= 1 questions")
        return load_dataset(sliced["name"])[: int(sliced["n"])]
    if name.endswith((".jsonl", ".jsonl.gz")) and not name.startswith("jsonl:"):
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


def load_datasets(names: str | list[str]) -> list[RankingExample]:
    """Load and concatenate several datasets (a list, or one comma-separated string)."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    out: list[RankingExample] = []
    for name in names:
        out.extend(load_dataset(name))
    return out


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

    if name.endswith((".jsonl", ".jsonl.gz")) and not name.startswith("jsonl:"):
        name = f"jsonl:{name}"
    family, _, split = name.partition(":")
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
    if family == "jsonl":
        if not Path(split).is_file():
            raise DatasetNotFoundError(f"jsonl:{split}: no such file")
        examples = read_open_jsonl(split)
        if not examples:  # every command reading questions needs at least one
            raise DataFormatError(f"{split}: no questions")
        return examples
    raise DatasetNotFoundError(
        f"unknown open-domain dataset {name!r}: use squad-open-mini:SPLIT, squad-open-train:SPLIT, "
        "squad-gold:SPLIT or jsonl:PATH (questions with their passages)"
    )


def load_open_datasets(names: str | list[str]) -> list[OpenExample]:
    """Several open-domain datasets (a list, or one comma-separated string), concatenated."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    return [ex for name in names for ex in load_open_dataset(name)]
