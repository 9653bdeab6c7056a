"""SQuAD 2.0's human-written unanswerable questions, asked over an index of their articles.

Source: ``squad/dev-v2.0-no-test-articles.json.gz`` in the data folder, SQuAD 2.0 dev's 28 articles
that SQuAD-AS2 puts in its train (24) and dev (4) splits: 9,373 questions, 4,788 of them unanswerable,
written to look answerable from the very paragraph they are about. The v2.0 questions of the 7
test-split articles are not in the file (an independent check keeps them).

``squad2-open`` (open-domain examples, :mod:`sieveqa.data.open_qa`): every paragraph of the 28 articles
is a document of one corpus index, cut into passages of at most 200 tokens as ``sieveqa index corpus``
cuts them (kept in ``index/``, so ``sieveqa answer --index`` asks it too), and each question comes with
BM25's top 20 passages. Splits: ``train`` (the train-split articles' 8,093 questions), ``dev-all`` (the
dev-split articles' 1,280) and ``dev``: dev-all's 563 answerable questions and as many of its
unanswerable ones (``random.Random(7)``), so always abstaining scores 50, as in the issue that asked
for it. An unanswerable question has no answers and ``impossible`` set. ``test-made`` is a held-out
stand-in with *made* unanswerable questions (``sieveqa.data.unanswerable``: entity swaps and
negations) on SQuAD-AS2's test articles, asked of an index of those articles (``index-test/``):
SQuAD-AS2's fixed 500 test questions and 500 made from the same articles. Made questions are easier to
spot than human ones, so its numbers are an optimistic check, not SQuAD 2.0's.

``squad2-passages:train`` (``squad-passages``' format, for a passage reranker): the train-split
articles' questions over BM25's top 2 passages of those articles, the question's own paragraph's
passages appended when BM25 missed them: for an answerable question those holding the answer, for an
unanswerable one all of them, labelled 0: the on-topic negatives a reranker had never seen.
``squad2-passages:own`` keeps only those: each question over its own paragraph (the passages holding
its answer, or for an unanswerable question all of them): whether a passage on the topic answers.

Rebuilding gives byte-identical files (the manifests record every sha256).
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from sieveqa.data.corpus import CorpusIndex, CorpusOptions
from sieveqa.data.documents import squad_document
from sieveqa.data.jsonl import read_jsonl
from sieveqa.data.open_qa import OpenExample, RetrievedPassage, read_open_jsonl
from sieveqa.data.passage_sets import passage_names, write_passage_set
from sieveqa.data.squad import SquadArticle, SquadQuestion, default_squad_path, read_squad
from sieveqa.data.squad_as2 import SUBSET_SEED, cached_manifest, ensure_squad_as2, split_articles
from sieveqa.data.squad_open import write_open_files
from sieveqa.errors import DataFormatError, DatasetNotFoundError
from sieveqa.io import atomic_dir, file_sha256
from sieveqa.paths import cache_root, data_root

__all__ = [
    "OPEN_SPLITS",
    "build_squad2_open",
    "build_squad2_passages",
    "squad2_articles",
    "squad2_open",
    "squad2_path",
]

OPEN_NAME = "squad2-open"
PASSAGES_NAME = "squad2-passages"
BUILDER_VERSION = 1
TOP_K = 20
TRAIN_TOP_K = 2
OPEN_SPLITS = ("train", "dev", "dev-all", "test-made")
INDEX = "index"
TEST_INDEX = "index-test"


def squad2_path() -> Path:
    """The SQuAD 2.0 file under :func:`~sieveqa.paths.data_root`."""
    return data_root() / "squad" / "dev-v2.0-no-test-articles.json.gz"


def squad2_articles() -> dict[str, list[SquadArticle]]:
    """The v2.0 articles by the SQuAD-AS2 split they belong to (``train``, ``dev``); an article of the
    test split, or of none, is refused (it would leak into a held-out set)."""
    path = squad2_path()
    if not path.is_file():
        raise DatasetNotFoundError(f"{path}: no such file (SQuAD 2.0 dev without the test articles)")
    splits = split_articles(a.title for a in read_squad(default_squad_path()))
    where = {title: split for split, titles in splits.items() for title in titles}
    out: dict[str, list[SquadArticle]] = {"train": [], "dev": []}
    for article in read_squad(path):
        split = where.get(article.title)
        if split not in out:
            split = split or "no"
            raise DataFormatError(f"{path}: article {article.title!r} is in SQuAD-AS2's {split} split")
        out[split].append(article)
    return out


def _params(top_k: int) -> dict[str, Any]:
    path = squad2_path()
    return {
        "builder_version": BUILDER_VERSION,
        "source": {"file": path.name, "sha256": file_sha256(path)},
        "top_k": top_k,
        "subset_seed": SUBSET_SEED,
        "passage_tokens": CorpusOptions().passage_tokens,
    }


def _ask(by_split: dict[str, list[SquadArticle]], folder: Path, top_k: int) -> dict[str, list[OpenExample]]:
    """Every split's questions with BM25's top passages of one index of all their paragraphs, built
    at ``folder`` (atomically)."""
    articles = [a for group in by_split.values() for a in group]
    docs = [squad_document(p, a.title) for a in articles for p in a.paragraphs]
    built = {}
    with atomic_dir(folder) as tmp:
        index = CorpusIndex.build(docs, tmp, CorpusOptions())
        stored = {p.id: p for p in index.passages([str(i) for i in range(1, len(index) + 1)])}
        named = passage_names(list(stored.values()))
        for split, group in by_split.items():
            questions = [q for a in group for p in a.paragraphs for q in p.questions]
            hits = index.search_many([q.question for q in questions], top_k, matching_only=False)
            built[split] = [
                OpenExample(
                    q.qid,
                    q.question,
                    list(q.answers),
                    [RetrievedPassage(named[i], stored[i].text, stored[i].title, s) for i, s in found],
                    q.impossible,
                )
                for q, found in zip(questions, hits, strict=True)
            ]
        index.close()
    return built


def _balanced(examples: list[OpenExample], answerable: set[str] | None = None) -> list[OpenExample]:
    """The answerable questions (those named, or all) and as many unanswerable ones, drawn at random
    (seed 7), in file order."""
    can = [ex.qid for ex in examples if not ex.impossible and (answerable is None or ex.qid in answerable)]
    cannot = sorted(ex.qid for ex in examples if ex.impossible)
    keep = set(can) | set(random.Random(SUBSET_SEED).sample(cannot, min(len(can), len(cannot))))
    return [ex for ex in examples if ex.qid in keep]


def _test_made() -> list[SquadArticle]:
    """SQuAD-AS2's test articles with the questions made unanswerable from theirs (entity swaps and
    negations: a question asked of another paragraph would find its own one in this index)."""
    from sieveqa.data.unanswerable import made_questions

    articles = read_squad(default_squad_path())
    test = set(split_articles(a.title for a in articles)["test"])
    articles = [a for a in articles if a.title in test]
    made: dict[str, list[SquadQuestion]] = {}
    for m in made_questions(articles):
        if m.kind != "other":
            made.setdefault(m.paragraph, []).append(SquadQuestion(m.qid, m.question, [], True))
    return [
        SquadArticle(a.title, [replace(p, questions=p.questions + made.get(p.pid, [])) for p in a.paragraphs])
        for a in articles
    ]


def build_squad2_open(out_dir: Path | None = None, top_k: int = TOP_K) -> dict[str, Any]:
    """Build (or find cached) ``squad2-open`` and its indexes into ``out_dir``; return the manifest."""
    out_dir = Path(out_dir) if out_dir is not None else cache_root() / OPEN_NAME
    params = _params(top_k)
    names = {f"{s}.jsonl.gz" for s in OPEN_SPLITS}
    indexes = (out_dir / INDEX, out_dir / TEST_INDEX)
    if (manifest := cached_manifest(out_dir, params, names)) is not None and all(i.is_dir() for i in indexes):
        return manifest
    out_dir.mkdir(parents=True, exist_ok=True)
    built = _ask(squad2_articles(), out_dir / INDEX, top_k)
    test = _ask({"test": _test_made()}, out_dir / TEST_INDEX, top_k)["test"]
    fixed = {ex.qid for ex in read_jsonl(ensure_squad_as2() / "test.jsonl.gz")}
    files = {
        "train": built["train"],
        "dev": _balanced(built["dev"]),
        "dev-all": built["dev"],
        "test-made": _balanced(test, fixed),
    }
    return write_open_files(out_dir, OPEN_NAME, params, files)


def squad2_open(split: str) -> list[OpenExample]:
    """The examples of one ``squad2-open`` split (built on first use)."""
    out_dir = cache_root() / OPEN_NAME
    build_squad2_open(out_dir)
    return read_open_jsonl(out_dir / f"{split}.jsonl.gz")


def squad2_index() -> Path:
    """The corpus index every ``squad2-open`` question was asked of (built on first use)."""
    out_dir = cache_root() / OPEN_NAME
    build_squad2_open(out_dir)
    return out_dir / INDEX


def build_squad2_passages(out_dir: Path | None = None, top_k: int = TRAIN_TOP_K) -> dict[str, Any]:
    """Build (or find cached) ``squad2-passages`` into ``out_dir``; return its manifest."""
    out_dir = Path(out_dir) if out_dir is not None else cache_root() / PASSAGES_NAME
    params = _params(top_k)
    if (manifest := cached_manifest(out_dir, params, {"train.jsonl.gz", "own.jsonl.gz"})) is not None:
        return manifest
    train = squad2_articles()["train"]
    pars = [(a.title, p) for a in train for p in a.paragraphs]
    files = {"train": ("train", None), "own": ("own", None)}
    with tempfile.TemporaryDirectory(prefix="sieveqa-squad2-") as tmp:
        return write_passage_set(
            out_dir, PASSAGES_NAME, params, {"train": pars, "own": pars}, files,
            {"train": top_k, "own": 0}, Path(tmp), appended=("train", "own"),
        )  # fmt: skip
