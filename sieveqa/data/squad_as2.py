"""SQuAD-AS2: a many-candidate answer sentence selection benchmark built from SQuAD v1.1 dev (ASNQ's role).

Split, by article: the titles are sorted, shuffled with ``random.Random(2024)``, then cut into
``n_train = min(round(0.7 n), n - n_dev - 1)``, ``n_dev = max(1, round(0.1 n))`` and the rest for test.
For the 48 articles of SQuAD v1.1 dev that is 34 / 5 / 9 articles, 7,725 / 760 / 2,085 questions.

Candidates: for each question, BM25 (:class:`~sieveqa.retrieval.BM25Index` over title + paragraph
of its own split only) retrieves the top-K paragraphs (K=25); the gold paragraph is appended after
them when BM25 missed it. Every sentence (pysbd) of those paragraphs is a candidate, id
``{pid}:{sentence_index}``, in retrieval-rank then sentence order. Label 1 iff the sentence is in the
question's own paragraph and contains a gold answer text verbatim (the ASNQ rule).

Files (generic JSONL, gzipped) in ``cache_root()/squad-as2/``: ``train``, ``dev-all``, ``test-all``
(every question of the split), ``dev`` / ``test`` (300 / 500 questions with at least one positive,
``random.Random(7).sample`` over their sorted qids, kept in ``-all`` order) and ``manifest.json``
(parameters, counts and sha256 of every file). Output is byte-identical across rebuilds.

Full build (K=25, ~50 s): 127.4 candidates per question (train 122.1, dev 140.6, test 142.3; min 71,
max 275), 1.26 positives per question; 10,567 of 10,570 questions (99.97%) have a positive (the other 3
lose their answer to a pysbd mis-split); BM25's top 25 holds the gold paragraph for 97.2% of them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bm25s
import pysbd
from tqdm.auto import tqdm

from sieveqa.data.jsonl import example_dict, write_jsonl
from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.data.sentences import split_sentences
from sieveqa.data.squad import SquadArticle, SquadParagraph, default_squad_path, read_squad
from sieveqa.errors import ConfigError, DatasetNotFoundError
from sieveqa.io import atomic_write_json, file_sha256
from sieveqa.paths import cache_root
from sieveqa.retrieval import BM25Index

__all__ = [
    "BUILDER_VERSION",
    "ArticleSplit",
    "ExampleStats",
    "build_splits",
    "build_squad_as2",
    "cached_manifest",
    "ensure_squad_as2",
    "retrieval_params",
    "split_articles",
    "write_examples",
    "write_split",
]

BUILDER_VERSION = 1
SPLIT_SEED = 2024
SUBSET_SEED = 7
MANIFEST = "manifest.json"
_FILES = {"train": "train.jsonl.gz", "dev": "dev-all.jsonl.gz", "test": "test-all.jsonl.gz"}
_SUBSETS = {"dev": "dev.jsonl.gz", "test": "test.jsonl.gz"}


def split_articles(titles: Iterable[str], seed: int = SPLIT_SEED) -> dict[str, list[str]]:
    """Split article titles into train/dev/test (≈70/10/20) by the rule in the module docstring."""
    order = sorted(titles)
    n = len(order)
    if n < 3:
        raise ValueError(f"need at least 3 articles to split, got {n}")
    random.Random(seed).shuffle(order)
    n_dev = max(1, round(0.1 * n))
    n_train = min(round(0.7 * n), n - n_dev - 1)
    return {
        "train": order[:n_train],
        "dev": order[n_train : n_train + n_dev],
        "test": order[n_train + n_dev :],
    }


@dataclass
class ExampleStats:
    """Counts of one written file of examples."""

    questions: int = 0
    candidates: int = 0
    positives: int = 0
    with_positive: int = 0
    min_candidates: int | None = None
    max_candidates: int = 0

    def add(self, ex: RankingExample) -> None:
        n = len(ex.candidates)
        self.questions += 1
        self.candidates += n
        self.positives += ex.n_positive
        self.with_positive += ex.has_positive()
        self.min_candidates = n if self.min_candidates is None else min(self.min_candidates, n)
        self.max_candidates = max(self.max_candidates, n)

    def as_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "candidates": self.candidates,
            "positives": self.positives,
            "questions_with_positive": self.with_positive,
            "mean_candidates": round(self.candidates / max(self.questions, 1), 3),
            "min_candidates": self.min_candidates or 0,
            "max_candidates": self.max_candidates,
        }


@dataclass
class ArticleSplit:
    """The paragraphs of one split, its BM25 ranking per question and its sentence cache."""

    articles: list[SquadArticle]
    sentences: dict[str, list[str]]
    ranking: dict[str, list[str]] = field(default_factory=dict)
    gold_retrieved: int = 0

    def paragraphs(self) -> Iterator[tuple[str, SquadParagraph]]:
        for article in self.articles:
            for par in article.paragraphs:
                yield article.title, par

    def retrieve(self, top_k: int) -> None:
        pars = list(self.paragraphs())
        # Titles use underscores; as spaces they become searchable words ("Super Bowl 50").
        texts = [f"{title.replace('_', ' ')}\n{par.context}" for title, par in pars]
        index = BM25Index.build([par.pid for _, par in pars], texts)
        questions = [(q, par.pid) for _, par in pars for q in par.questions]
        hits = index.search_many([q.question for q, _ in questions], top_k)
        for (question, gold), ranked in zip(questions, hits, strict=True):
            pids = [pid for pid, _ in ranked]
            if gold in pids:
                self.gold_retrieved += 1
            else:
                pids.append(gold)  # last, so ties in a ranker's scores never favour it
            self.ranking[question.qid] = pids

    def examples(self, keep: set[str] | None = None) -> Iterator[RankingExample]:
        doc_of = {par.pid: title for title, par in self.paragraphs()}
        for _, par in self.paragraphs():
            for q in par.questions:
                if keep is not None and q.qid not in keep:
                    continue
                answers = {a.strip() for a in q.answers} - {""}
                cands = []
                for pid in self.ranking[q.qid]:
                    own = pid == par.pid
                    for i, sent in enumerate(self.sentences[pid]):
                        label = int(own and any(a in sent for a in answers))
                        cands.append(Candidate(f"{pid}:{i}", sent, label, pid, doc_of[pid]))
                yield RankingExample(Question(q.qid, q.question), cands)


def write_examples(path: Path, examples: Iterable[RankingExample], stats: ExampleStats) -> None:
    def rows() -> Iterator[dict[str, Any]]:
        for ex in examples:
            stats.add(ex)
            yield example_dict(ex)

    write_jsonl(path, rows())


def write_split(
    out_dir: Path,
    split: ArticleSplit,
    top_k: int,
    fname: str,
    subset: tuple[str, int] | None,
    files: dict[str, dict[str, Any]],
) -> float:
    """Retrieve and write every question of ``split`` to ``fname``; with ``subset = (name, size)``
    also a fixed random subset of ``size`` questions that have a positive. Adds each file's counts,
    size and sha256 to ``files``; returns the share of questions whose gold paragraph BM25 found."""
    split.retrieve(top_k)
    stats = ExampleStats()
    positive: list[str] = []

    def examples() -> Iterator[RankingExample]:
        for ex in split.examples():
            if ex.has_positive():
                positive.append(ex.qid)
            yield ex

    written = [fname]
    write_examples(out_dir / fname, examples(), stats)
    files[fname] = stats.as_dict()
    if subset is not None:
        name, size = subset
        # min(): a small test build cannot have 300 positive questions; the manifest says how many.
        keep = set(random.Random(SUBSET_SEED).sample(sorted(positive), min(size, len(positive))))
        stats = ExampleStats()
        write_examples(out_dir / name, split.examples(keep), stats)
        files[name] = stats.as_dict()
        written.append(name)
    for name in written:
        path = out_dir / name
        files[name].update(bytes=path.stat().st_size, sha256=file_sha256(path))
    return round(split.gold_retrieved / max(len(split.ranking), 1), 4)


def _params(squad_path: Path, top_k: int, dev_size: int, test_size: int, max_articles: int | None) -> dict:
    return {
        "builder_version": BUILDER_VERSION,
        # Name and hash, not the absolute path, so the same data built elsewhere gives the same manifest.
        "source": {"file": squad_path.name, "sha256": file_sha256(squad_path)},
        "top_k": top_k,
        "max_articles": max_articles,
        "split_seed": SPLIT_SEED,
        "subset_seed": SUBSET_SEED,
        "subset_sizes": {"dev": dev_size, "test": test_size},
        **retrieval_params(),
    }


def retrieval_params() -> dict[str, Any]:
    """How candidates are retrieved and split, as a manifest records it."""
    return {
        "retrieval": {"method": "bm25s lucene", "k1": 1.5, "b": 0.75, "stopwords": "en", "stemmer": None},
        # Library versions can change tokens or sentence boundaries, hence the files.
        "versions": {"bm25s": bm25s.__version__, "pysbd": pysbd.__version__},
    }


def cached_manifest(out_dir: Path, params: dict, names: set[str]) -> dict | None:
    """The manifest in ``out_dir`` if it has ``params`` and the files ``names``, each still matching
    its recorded sha256; None when anything must be rebuilt."""
    try:
        manifest = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(manifest, dict) or manifest.get("params") != params:
        return None
    files = manifest.get("files")
    if not isinstance(files, dict) or set(files) != names:
        return None
    for name, info in files.items():
        path = out_dir / name
        if not path.is_file() or file_sha256(path) != info.get("sha256"):
            return None
    return manifest


def build_squad_as2(
    out_dir: Path | None = None,
    top_k: int = 25,
    force: bool = False,
    progress: bool = True,
    *,
    squad_path: Path | None = None,
    max_articles: int | None = None,
    dev_size: int = 300,
    test_size: int = 500,
) -> dict:
    """Build SQuAD-AS2 into ``out_dir`` (default ``cache_root()/squad-as2``) and return its manifest.

    Skips the work when the manifest there has the same parameters and every file's sha256 still
    matches, unless ``force``. ``max_articles`` keeps only the first articles of the file (for tests).
    """
    out_dir = Path(out_dir) if out_dir is not None else cache_root() / "squad-as2"
    squad_path = Path(squad_path) if squad_path is not None else default_squad_path()
    if top_k < 1:
        raise ConfigError(f"--top-k must be >= 1, got {top_k}")
    if not squad_path.is_file():
        raise DatasetNotFoundError(f"{squad_path}: no such SQuAD file (SIEVEQA_DATA names the data folder)")
    params = _params(squad_path, top_k, dev_size, test_size, max_articles)
    if (
        not force
        and (manifest := cached_manifest(out_dir, params, {*_FILES.values(), *_SUBSETS.values()})) is not None
    ):
        return manifest

    articles = read_squad(squad_path)[:max_articles]
    splits = split_articles(a.title for a in articles)
    sizes = {"dev": dev_size, "test": test_size}
    plan = {
        name: (fname, top_k, (_SUBSETS[name], sizes[name]) if name in _SUBSETS else None)
        for name, fname in _FILES.items()
    }
    return build_splits(out_dir, "squad-as2", params, articles, splits, plan, progress)


def build_splits(
    out_dir: Path,
    name: str,
    params: dict[str, Any],
    articles: list[SquadArticle],
    splits: dict[str, list[str]],
    plan: dict[str, tuple[str, int, tuple[str, int] | None]],
    progress: bool,
) -> dict:
    """Write each split of ``plan`` (split → file, BM25 depth, optional fixed subset) from the articles
    ``splits`` names, then the manifest; return the manifest."""
    by_title = {a.title: a for a in articles}
    pars = [p for a in articles for p in a.paragraphs]
    sentences = {
        p.pid: split_sentences(p.context, guard=False)  # SQuAD-AS2's sentences as published
        for p in tqdm(pars, desc=f"{name}: sentences", unit="par", disable=not progress)
    }
    files: dict[str, dict[str, Any]] = {}
    retrieval: dict[str, float] = {}
    for split_name in tqdm(plan, desc=f"{name}: splits", disable=not progress):
        fname, top_k, subset = plan[split_name]
        split = ArticleSplit([by_title[t] for t in splits[split_name]], sentences)
        retrieval[split_name] = write_split(out_dir, split, top_k, fname, subset, files)
    manifest = {
        "name": name,
        "params": params,
        "splits": {split_name: {"articles": splits[split_name]} for split_name in plan},
        "gold_paragraph_recall_at_k": retrieval,
        "files": dict(sorted(files.items())),
    }
    atomic_write_json(out_dir / MANIFEST, manifest)
    return manifest


def ensure_squad_as2() -> Path:
    """Return the default SQuAD-AS2 folder, building it first when missing or stale."""
    out_dir = cache_root() / "squad-as2"
    build_squad_as2(out_dir)
    return out_dir
