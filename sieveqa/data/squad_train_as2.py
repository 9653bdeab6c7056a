"""squad-train-as2: an ASNQ-like transfer set built from SQuAD v1.1 *train* (87,599 questions).

ASNQ's recipe on SQuAD train: for each question, the candidates are every sentence (pysbd) of the
paragraphs BM25 retrieves for it from its own split (title + paragraph, as SQuAD-AS2 does), the gold
paragraph appended when BM25 missed it; a sentence is correct iff it lies in the question's own
paragraph and contains a gold answer text verbatim. ASNQ's distinction between negatives in the gold
paragraph and elsewhere stays readable: a candidate's ``passage_id`` is its paragraph, and the
question's gold paragraph is that of its positives (``gold_paragraph_view`` keeps only those: the
QNLI-style view, ``squad-train-as2:train-qnli``).

Split, by article: the 442 titles are sorted, shuffled with ``random.Random(2024)``, and the first
``dev_articles`` (12) form dev; the rest train. SQuAD v1.1 train shares no article with dev, so the
SQuAD-AS2 splits (built from SQuAD dev) stay untouched and every earlier number comparable.

Train retrieves ``train_top_k`` (5) paragraphs per question, dev ``dev_top_k`` (25, SQuAD-AS2's
depth): training samples a few negatives per question anyway, and 5 paragraphs keep the train file
loadable (about 30 candidates a question instead of 125); dev ranks as many candidates as SQuAD-AS2.

Files (generic JSONL, gzipped) in ``cache_root()/squad-train-as2/``: ``train``, ``dev-all`` and
``dev`` (300 questions with a positive, ``random.Random(7).sample`` over sorted qids) and
``manifest.json`` (parameters, counts, sha256 of every file). Rebuilds are byte-identical.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path

from sieveqa.data.records import RankingExample
from sieveqa.data.squad import read_squad
from sieveqa.data.squad_as2 import (
    SPLIT_SEED,
    SUBSET_SEED,
    build_splits,
    cached_manifest,
    retrieval_params,
)
from sieveqa.errors import ConfigError, DatasetNotFoundError
from sieveqa.io import file_sha256
from sieveqa.paths import cache_root, data_root

__all__ = [
    "SPLITS",
    "build_squad_train_as2",
    "ensure_squad_train_as2",
    "gold_paragraph_view",
    "split_train_articles",
]

NAME = "squad-train-as2"
BUILDER_VERSION = 1
MANIFEST = "manifest.json"
_FILES = {"train": "train.jsonl.gz", "dev": "dev-all.jsonl.gz"}
_DEV_SUBSET = "dev.jsonl.gz"
#: Articles held out for dev (the first after the seeded shuffle).
DEV_ARTICLES = 12
#: Names the dataset registry accepts; each also as ``-qnli`` (gold paragraph only).
SPLITS = ("train", "dev", "dev-all")


def default_train_path() -> Path:
    """SQuAD v1.1 train under :func:`~sieveqa.paths.data_root`."""
    return data_root() / "squad" / "train-v1.1.json.gz"


def train_source(squad_path: Path | None) -> tuple[Path, dict[str, str]]:
    """SQuAD v1.1 train's path (the default one unless given) and its identity for a manifest;
    a missing file is one line naming it."""
    path = Path(squad_path) if squad_path is not None else default_train_path()
    if not path.is_file():
        raise DatasetNotFoundError(f"{path}: no such SQuAD file (SIEVEQA_DATA names the data folder)")
    return path, {"file": path.name, "sha256": file_sha256(path)}


def split_train_articles(
    titles: Iterable[str], dev_articles: int, seed: int = SPLIT_SEED
) -> dict[str, list[str]]:
    """Split titles into train and dev (the first ``dev_articles`` after a seeded shuffle)."""
    order = sorted(titles)
    if not 1 <= dev_articles < len(order):
        raise ConfigError(f"need 1 <= dev_articles < {len(order)} articles, got {dev_articles}")
    random.Random(seed).shuffle(order)
    return {"train": order[dev_articles:], "dev": order[:dev_articles]}


def gold_paragraph_view(examples: Iterable[RankingExample]) -> list[RankingExample]:
    """QNLI's view: each question with the sentences of its gold paragraph only (questions without a
    positive, whose gold paragraph is unknown, are left out)."""
    out = []
    for ex in examples:
        gold = {c.passage_id for c in ex.candidates if c.label == 1}
        if gold:
            out.append(RankingExample(ex.question, [c for c in ex.candidates if c.passage_id in gold]))
    return out


def build_squad_train_as2(
    out_dir: Path | None = None,
    force: bool = False,
    progress: bool = True,
    *,
    squad_path: Path | None = None,
    train_top_k: int = 5,
    dev_top_k: int = 25,
    dev_articles: int = DEV_ARTICLES,
    dev_size: int = 300,
    max_articles: int | None = None,
) -> dict:
    """Build squad-train-as2 into ``out_dir`` (default ``cache_root()/squad-train-as2``); return its
    manifest. Skips the work when the manifest there has the same parameters and every file still
    matches its sha256, unless ``force``. ``max_articles`` keeps the first articles only (tests)."""
    out_dir = Path(out_dir) if out_dir is not None else cache_root() / NAME
    if min(train_top_k, dev_top_k) < 1:
        raise ConfigError(f"--top-k must be >= 1, got train {train_top_k} / dev {dev_top_k}")
    squad_path, source = train_source(squad_path)
    params = {
        "builder_version": BUILDER_VERSION,
        "source": source,
        "top_k": {"train": train_top_k, "dev": dev_top_k},
        "dev_articles": dev_articles,
        "max_articles": max_articles,
        "split_seed": SPLIT_SEED,
        "subset_size": dev_size,
        "subset_seed": SUBSET_SEED,
        **retrieval_params(),
    }
    if not force and (manifest := cached_manifest(out_dir, params, {*_FILES.values(), _DEV_SUBSET})):
        return manifest

    articles = read_squad(squad_path)[:max_articles]
    splits = split_train_articles((a.title for a in articles), dev_articles)
    plan = {
        "train": (_FILES["train"], train_top_k, None),
        "dev": (_FILES["dev"], dev_top_k, (_DEV_SUBSET, dev_size)),
    }
    return build_splits(out_dir, NAME, params, articles, splits, plan, progress)


def ensure_squad_train_as2() -> Path:
    """The default squad-train-as2 folder, built first when missing or stale."""
    out_dir = cache_root() / NAME
    build_squad_train_as2(out_dir)
    return out_dir
