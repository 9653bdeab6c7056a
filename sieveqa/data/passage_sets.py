"""Passage-level benchmarks for PEASI: questions, retrieved passages, and labelled sentences in place.

``squad-passages``: each SQuAD-AS2 article split's paragraphs are indexed (a :class:`CorpusIndex`,
passages of at most 200 tokens), and BM25 retrieves the top-K (K=20) passages of the question's own
split. Candidates are the sentences of those passages, in retrieval-rank then sentence order, with
``passage_id`` ``{paragraph id}#{n}`` (the n-th passage of the paragraph). A sentence is correct by
the ASNQ rule of SQuAD-AS2 (it lies in the question's paragraph and holds a gold answer verbatim); a
passage is correct when one of its sentences is (PEASI, section 3.1). Training questions also get
their correct passages appended when BM25 missed them; dev and test keep what retrieval found, so
their scores include retrieval's misses. ``dev`` and ``test`` are SQuAD-AS2's fixed subsets (the
same questions); ``dev-all`` and ``test-all`` every question. Cached like SQuAD-AS2, byte-identical
on rebuild.

``squad-train-passages``: the same recipe on SQuAD v1.1 train, over squad-train-as2's article split:
``train`` retrieves the top 5 passages per question (correct ones appended), ``dev`` is squad-train-as2's
300 dev questions over their top 20. PEASI's retrained reranker learned from it.

``wikiqa-passages``: WikiQA's candidate sentences in document order, cut into passages of at most
200 tokens (``{document id}#{n}``), questions with at least one correct sentence.

Names: ``FAMILY:SPLIT`` has passages as candidates (text = its sentences joined, label = any correct),
for a passage reranker; ``FAMILY:SPLIT-sentences`` has the sentences, each with its ``passage_id``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from sieveqa.data.corpus import CorpusIndex, CorpusOptions, IndexedPassage
from sieveqa.data.documents import squad_document
from sieveqa.data.jsonl import read_jsonl
from sieveqa.data.passages import count_tokens, pack_windows
from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.data.squad import SquadArticle, SquadParagraph, default_squad_path, read_squad
from sieveqa.data.squad_as2 import (
    ExampleStats,
    cached_manifest,
    ensure_squad_as2,
    split_articles,
    write_examples,
)
from sieveqa.errors import ConfigError
from sieveqa.io import atomic_write_json, file_sha256
from sieveqa.paths import cache_root

__all__ = [
    "build_squad_passages",
    "build_squad_train_passages",
    "group_passages",
    "passage_names",
    "to_passages",
    "wikiqa_passages",
    "write_passage_set",
]

BUILDER_VERSION = 1
TOP_K = 20
PASSAGE_TOKENS = 200
MANIFEST = "manifest.json"
HITS_AT = (1, 5, 10, 20)
_FILES: dict[str, tuple[str, str | None]] = {
    "train": ("train", None),
    "dev-all": ("dev", None),
    "test-all": ("test", None),
    "dev": ("dev", "dev"),
    "test": ("test", "test"),
}
TRAIN_TOP_K = 5
_TRAIN_FILES: dict[str, tuple[str, str | None]] = {"train": ("train", None), "dev": ("dev", "dev")}


def group_passages(example: RankingExample) -> list[tuple[str, list[Candidate]]]:
    """An example's sentences grouped by ``passage_id`` (``doc_id`` when unset), in first-seen order."""
    groups: dict[str, list[Candidate]] = {}
    for cand in example.candidates:
        key = cand.passage_id or cand.doc_id or ""
        groups.setdefault(key, []).append(cand)
    return list(groups.items())


def to_passages(examples: Sequence[RankingExample]) -> list[RankingExample]:
    """Sentence candidates → passage candidates: text joined, label 1 when any sentence is correct."""
    out = []
    for ex in examples:
        cands = []
        for pid, sents in group_passages(ex):
            labels = [c.label for c in sents if c.label is not None]
            label = max(labels) if labels else None
            cands.append(Candidate(pid, " ".join(c.text for c in sents), label, pid, sents[0].doc_id))
        out.append(RankingExample(ex.question, cands))
    return out


def passage_names(passages: Sequence[IndexedPassage]) -> dict[str, str]:
    """Index row id → ``{document id}#{n}``, n counting a document's passages from 0."""
    seen: dict[str, int] = {}
    names = {}
    for p in sorted(passages, key=lambda p: int(p.id)):
        n = seen.get(p.doc_id, 0)
        seen[p.doc_id] = n + 1
        names[p.id] = f"{p.doc_id}#{n}"
    return names


def _split_examples(
    pars: list[tuple[str, SquadParagraph]], top_k: int, train: bool, hits: dict[int, int]
) -> Iterator[RankingExample]:
    docs = [squad_document(par, title) for title, par in pars]
    with tempfile.TemporaryDirectory(prefix="sieveqa-passages-") as tmp:
        # The published passages: SQuAD-AS2's sentences, a longer sentence a passage of its own.
        index = CorpusIndex.build(docs, Path(tmp) / "index", CorpusOptions(cut_sentences=False))
        passages = {p.id: p for p in index.passages([str(i) for i in range(1, len(index) + 1)])}
        questions = [(q, par.pid) for _, par in pars for q in par.questions]
        texts = [q.question for q, _ in questions]
        ranked = index.search_many(texts, top_k, matching_only=False) if top_k else [[] for _ in texts]
    names = passage_names(list(passages.values()))
    by_doc: dict[str, list[str]] = {}
    for pid in sorted(passages, key=int):
        by_doc.setdefault(passages[pid].doc_id, []).append(pid)
    for (q, gold), hits_q in zip(questions, ranked, strict=True):
        answers = {a.strip() for a in q.answers} - {""}

        def labels(pid: str, gold: str = gold, answers: set[str] = answers) -> list[int]:
            own = passages[pid].doc_id == gold
            return [int(own and any(a in s for a in answers)) for s in passages[pid].sentences]

        pids = [pid for pid, _ in hits_q]
        first = next((r for r, pid in enumerate(pids, start=1) if any(labels(pid))), None)
        for k in HITS_AT:
            hits[k] = hits.get(k, 0) + int(first is not None and first <= k)
        if train:  # correct passages BM25 missed go last, so ties never favour them; an unanswerable
            # question gets its whole paragraph, the on-topic passages that do not answer it
            pids += [pid for pid in by_doc[gold] if pid not in pids and (q.impossible or any(labels(pid)))]
        cands = [
            Candidate(f"{names[pid]}:{i}", sent, label, names[pid], passages[pid].doc_id)
            for pid in pids
            for i, (sent, label) in enumerate(zip(passages[pid].sentences, labels(pid), strict=True))
        ]
        yield RankingExample(Question(q.qid, q.question), cands)


def write_passage_set(
    out_dir: Path,
    name: str,
    params: dict[str, Any],
    pars_of: dict[str, list[tuple[str, SquadParagraph]]],
    files: dict[str, tuple[str, str | None]],
    top_k: dict[str, int],
    subsets_dir: Path,
    progress: bool = True,
    appended: Sequence[str] = ("train",),
) -> dict[str, Any]:
    """Write each file of ``files`` (name → article split, optional subset of ``subsets_dir``) from
    the paragraphs ``pars_of`` each split, then the manifest; return the manifest. The splits in
    ``appended`` get the passages retrieval missed appended (the correct ones; an unanswerable
    question's whole paragraph)."""
    written: dict[str, dict[str, Any]] = {}
    retrieval: dict[str, dict[str, float]] = {}
    cache: dict[str, list[RankingExample]] = {}
    for fname, (split, subset) in tqdm(files.items(), desc=name, disable=not progress):
        if split not in cache:
            hits: dict[int, int] = {}
            cache[split] = list(_split_examples(pars_of[split], top_k[split], split in appended, hits))
            n = len(cache[split])
            retrieval[split] = {
                f"hits@{k}": round(hits.get(k, 0) / n, 4) for k in HITS_AT if k <= top_k[split]
            }
        examples = cache[split]
        if subset is not None:
            keep = {ex.qid for ex in read_jsonl(subsets_dir / f"{subset}.jsonl.gz")}
            examples = [ex for ex in examples if ex.qid in keep]
        stats = ExampleStats()
        path = out_dir / f"{fname}.jsonl.gz"
        write_examples(path, examples, stats)
        written[path.name] = {**stats.as_dict(), "bytes": path.stat().st_size, "sha256": file_sha256(path)}
    manifest = {
        "name": name,
        "params": params,
        "bm25_hits_at_k": retrieval,
        "files": dict(sorted(written.items())),
    }
    atomic_write_json(out_dir / MANIFEST, manifest)
    return manifest


def _paragraphs(
    articles: Sequence[SquadArticle], splits: dict[str, list[str]]
) -> dict[str, list[tuple[str, SquadParagraph]]]:
    by_title = {a.title: a for a in articles}
    return {
        split: [(t, p) for t in titles for p in by_title[t].paragraphs] for split, titles in splits.items()
    }


def build_squad_passages(
    out_dir: Path | None = None, top_k: int = TOP_K, progress: bool = True
) -> dict[str, Any]:
    """Build (or find cached) ``squad-passages`` into ``out_dir`` and return its manifest."""
    out_dir = Path(out_dir) if out_dir is not None else cache_root() / "squad-passages"
    squad_path = default_squad_path()
    as2 = ensure_squad_as2()
    params = {
        "builder_version": BUILDER_VERSION,
        "source": {"file": squad_path.name, "sha256": file_sha256(squad_path)},
        "subsets_from": {n: file_sha256(as2 / f"{n}.jsonl.gz") for n in ("dev", "test")},
        "top_k": top_k,
        "passage_tokens": PASSAGE_TOKENS,
    }
    names = {f"{name}.jsonl.gz" for name in _FILES}
    if (manifest := cached_manifest(out_dir, params, names)) is not None:
        return manifest
    articles = read_squad(squad_path)
    splits = split_articles(a.title for a in articles)
    top = dict.fromkeys(splits, top_k)
    return write_passage_set(
        out_dir, "squad-passages", params, _paragraphs(articles, splits), _FILES, top, as2, progress
    )


def build_squad_train_passages(
    out_dir: Path | None = None,
    top_k: int = TRAIN_TOP_K,
    progress: bool = True,
    *,
    squad_path: Path | None = None,
    max_articles: int | None = None,
    dev_articles: int | None = None,
    dev_size: int = 300,
) -> dict[str, Any]:
    """Build (or find cached) ``squad-train-passages``: squad-passages' recipe on squad-train-as2's
    article split of SQuAD v1.1 train. ``train`` retrieves ``top_k`` passages per question (correct ones
    appended when missed); ``dev`` is squad-train-as2's dev subset over its top 20. ``max_articles``,
    ``dev_articles`` and ``dev_size`` make a slice (tests); its squad-train-as2 goes under ``out_dir``."""
    from sieveqa.data import squad_train_as2 as as2

    out_dir = Path(out_dir) if out_dir is not None else cache_root() / "squad-train-passages"
    if top_k < 1:  # before the data folder is looked for: a bad setting is named first
        raise ConfigError(f"--top-k must be >= 1, got {top_k}")
    squad_path = Path(squad_path) if squad_path is not None else as2.default_train_path()
    dev_articles = dev_articles or as2.DEV_ARTICLES
    sliced = max_articles is not None
    as2_dir = out_dir / "squad-train-as2" if sliced else cache_root() / "squad-train-as2"
    slice_opts = {"max_articles": max_articles, "dev_articles": dev_articles, "dev_size": dev_size}
    as2_manifest = as2.build_squad_train_as2(
        as2_dir, progress=progress, squad_path=squad_path, **(slice_opts if sliced else {})
    )
    params = {
        "builder_version": BUILDER_VERSION,
        "source": as2_manifest["params"]["source"],
        "subsets_from": {"dev": as2_manifest["files"]["dev.jsonl.gz"]["sha256"]},
        "top_k": {"train": top_k, "dev": TOP_K},
        "passage_tokens": PASSAGE_TOKENS,
        **({"slice": slice_opts} if sliced else {}),
    }
    if (manifest := cached_manifest(out_dir, params, {f"{n}.jsonl.gz" for n in _TRAIN_FILES})) is not None:
        return manifest
    articles = read_squad(squad_path)[:max_articles]
    splits = as2.split_train_articles((a.title for a in articles), dev_articles)
    pars = _paragraphs(articles, splits)
    return write_passage_set(
        out_dir, "squad-train-passages", params, pars, _TRAIN_FILES, params["top_k"], as2_dir, progress
    )


def wikiqa_passages(
    examples: Sequence[RankingExample], max_tokens: int = PASSAGE_TOKENS
) -> list[RankingExample]:
    """WikiQA examples with their sentences (in document order) grouped into passages."""
    out = []
    for ex in examples:
        cands = sorted(ex.candidates, key=lambda c: int(c.id.rsplit("-", 1)[1]))
        windows = pack_windows(count_tokens([c.text for c in cands]), max_tokens)
        grouped = [
            Candidate(c.id, c.text, c.label, f"{c.passage_id}#{w}", c.doc_id)
            for w, (lo, hi) in enumerate(windows)
            for c in cands[lo:hi]
        ]
        out.append(RankingExample(ex.question, grouped))
    return out
