"""On-topic unanswerable questions made from SQuAD v1.1 train: ``squad-unanswerable``.

SQuAD 2.0's human-written unanswerable questions (``sieveqa.data.squad2``) are few here (4,071 in the
training articles); these add many more of the same kind, from squad-train-as2's training articles
(SQuAD v1.1 train; its 12 dev articles are left alone). Each SQuAD question gives at most one, of a
kind drawn per question (``random.Random(seed)``) among those its text allows:

- ``swap``: an entity of the question (a year, a number, or a run of capitalised words past the first
  word) that its paragraph states is replaced by another of the same type and word count from the
  same article that the paragraph never mentions ("When did Tesla move to *Paris*?" of a paragraph
  about his move to New York): SQuAD 2.0's entity swap. Checked: the original occurs in the paragraph,
  the replacement does not (ignoring case).
- ``negation``: ``not`` after the question's first is/was/are/were ("Who was *not* the first
  emperor?"): SQuAD 2.0's negation. The paragraph still states the positive fact; that it does not
  answer the negated question is what the kind assumes (it is named, so a user may leave it out).
- ``other``: the question itself, asked of another paragraph of its article that holds none of its
  answers (checked verbatim, ignoring case): on topic, and silent.

A made question is SQuAD 2.0-shaped (``impossible``, no answers) and belongs to the paragraph it is
asked of, so ``train-v2.json.gz`` is a SQuAD 2.0 file that any SQuAD reader takes (``read_squad``).
``squad-unanswerable:train`` (``squad-passages``' format) gives each made question the passages of its
paragraph only, all labelled 0: BM25's other passages could answer a swapped question.
``squad-unanswerable:contrast`` puts each beside the question it was made from, over that one's
passages holding its answer (labelled 1): minimal pairs, where only the question differs.
``squad-unanswerable:open`` is ``train`` in the open-domain format (each made question ``impossible``
over its paragraph's passages), for the reader. Rebuilding gives byte-identical files.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from sieveqa.data.open_qa import OpenExample, RetrievedPassage
from sieveqa.data.passage_sets import write_passage_set
from sieveqa.data.squad import SquadArticle, SquadParagraph, SquadQuestion, read_squad
from sieveqa.data.squad_as2 import MANIFEST, cached_manifest
from sieveqa.io import atomic_open, atomic_write_json, file_sha256
from sieveqa.paths import cache_root

__all__ = ["KINDS", "Made", "build_squad_unanswerable", "made_questions", "perturb", "unanswerable_open"]

NAME = "squad-unanswerable"
BUILDER_VERSION = 2
SEED = 2026
KINDS = ("swap", "negation", "other")
#: How often each kind is drawn where the question allows it (the swap is SQuAD 2.0's commonest
#: kind the rules can make; negation is its rarest).
WEIGHTS = {"swap": 0.65, "negation": 0.2, "other": 0.15}
SOURCE_FILE = "train-v2.json.gz"

_YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})\b")
_NUMBER = re.compile(r"\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|\b\d+(?:\.\d+)?\b")
_CONNECT = r"(?:of|the|de|del|la|le|von|van|der|and|for|on)"
_WORD = r"[A-Z][\w'’-]*\w"
_NAME = re.compile(rf"\b{_WORD}(?:\s+(?:{_CONNECT}\s+)*{_WORD})*")
_COPULA = re.compile(r"\b(is|was|are|were)\b(?!\s+(?:not|n't)\b)", re.IGNORECASE)
#: What may come right before a word capitalised only by where it stands.
_OPENERS = set(".!?:;\"“‘'(\n")
_MONTHS = {
    *("January", "February", "March", "April", "May", "June", "July", "August", "September"),
    *("October", "November", "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
    *("Saturday", "Sunday"),
}
#: A capitalised word with one of these endings is most often an adjective (Austrian, Catholic,
#: Chinese, English): swapped only for another such word.
_ADJECTIVE = re.compile(r"(?:an|ian|ese|ish|ic|ist)$")


def _name_type(text: str) -> str:
    words = text.split()
    if len(words) > 1:
        return f"name{min(len(words), 3)}"
    if text in _MONTHS:
        return "month"
    return "adjective" if _ADJECTIVE.search(text) else "name1"


@dataclass(frozen=True)
class Made:
    """A made question: where it came from, what it is, and the paragraph it is asked of."""

    qid: str
    question: str
    kind: str
    source_qid: str
    paragraph: str


def _entities(text: str, questions: bool) -> list[tuple[str, str, int]]:
    """``(type, text, start)`` of the years, numbers and names in ``text``. A name that may be
    capitalised only by where it stands (first in a sentence, after a quote) is skipped, and so is a
    one-word name of fewer than 3 letters."""
    found = [("year", m.group(), m.start()) for m in _YEAR.finditer(text)]
    years = {start for _, _, start in found}
    found += [("number", m.group(), m.start()) for m in _NUMBER.finditer(text) if m.start() not in years]
    for m in _NAME.finditer(text):
        before = text[: m.start()].rstrip()
        if (questions and m.start() == 0) or not before or before[-1] in _OPENERS:
            continue
        if " " not in m.group() and len(m.group()) < 3:
            continue
        found.append((_name_type(m.group()), m.group(), m.start()))
    return found


def _article_entities(article: SquadArticle) -> dict[str, list[str]]:
    """The article's entities by type; a one-word name the article also writes in lower case is a
    common word, not a name."""
    lowered = " ".join(p.context for p in article.paragraphs)
    words = set(re.findall(r"\b[a-z][\w'’-]*", lowered))
    by_type: dict[str, set[str]] = {}
    for paragraph in article.paragraphs:
        for kind, text, _ in _entities(paragraph.context, questions=False):
            if " " not in text and text.lower() in words:
                continue
            by_type.setdefault(kind, set()).add(text)
    return {kind: sorted(texts) for kind, texts in by_type.items()}


def perturb(
    question: SquadQuestion, paragraph: SquadParagraph, entities: dict[str, list[str]], rng: random.Random
) -> tuple[str, str] | None:
    """``(made question, "swap")`` by the entity swap of the module docstring, or None when no
    entity of the question can be swapped."""
    context = paragraph.context.lower()
    options = [
        (kind, text, start)
        for kind, text, start in _entities(question.question, questions=True)
        if text in paragraph.context
    ]
    rng.shuffle(options)
    for kind, text, start in options:
        low = text.lower()
        pool = [e for e in entities.get(kind, []) if e.lower() not in context and e.lower() not in low]
        pool = [e for e in pool if low not in e.lower()]
        if pool:
            new = rng.choice(pool)
            q = question.question
            return q[:start] + new + q[start + len(text) :], "swap"
    return None


def negate(question: str) -> str | None:
    """The question with ``not`` after its first is/was/are/were (None without one, or when it starts
    the question: a yes/no question)."""
    m = _COPULA.search(question)
    if m is None or m.start() == 0:
        return None
    return question[: m.end()] + " not" + question[m.end() :]


def _silent_paragraph(
    question: SquadQuestion, article: SquadArticle, own: str, rng: random.Random
) -> SquadParagraph | None:
    answers = [a.strip().lower() for a in question.answers if a.strip()]
    others = [
        p for p in article.paragraphs if p.pid != own and not any(a in p.context.lower() for a in answers)
    ]
    return rng.choice(others) if others else None


def made_questions(articles: list[SquadArticle], seed: int = SEED) -> Iterator[Made]:
    """One made question per SQuAD question where its text allows one (module docstring)."""
    rng = random.Random(seed)
    for article in articles:
        entities = _article_entities(article)
        for paragraph in article.paragraphs:
            for q in paragraph.questions:
                made: dict[str, tuple[str, str]] = {}
                swapped = perturb(q, paragraph, entities, rng)
                if swapped is not None:
                    made["swap"] = (swapped[0], paragraph.pid)
                negated = negate(q.question)
                if negated is not None:
                    made["negation"] = (negated, paragraph.pid)
                silent = _silent_paragraph(q, article, paragraph.pid, rng)
                if silent is not None:
                    made["other"] = (q.question, silent.pid)
                if not made:
                    continue
                kinds = [k for k in KINDS if k in made]
                kind = rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]
                text, pid = made[kind]
                yield Made(f"{q.qid}~{kind}", text, kind, q.qid, pid)


def _as_squad(articles: list[SquadArticle], made: list[Made], sources: bool = False) -> list[SquadArticle]:
    """The made questions as SQuAD 2.0 articles: each under the paragraph it is asked of; with
    ``sources``, each next to the question it was made from, under that one's own paragraph. An
    article keeps every paragraph (without questions where none was made of it): SQuAD names a
    paragraph by its place, so ``{title}_{i}`` read back is the paragraph the passages name."""
    by_pid: dict[str, list[SquadQuestion]] = {}
    if sources:
        own = {q.qid: (p.pid, q) for a in articles for p in a.paragraphs for q in p.questions}
        for m in made:
            pid, q = own[m.source_qid]
            by_pid.setdefault(pid, []).append(q)
    for m in made:
        by_pid.setdefault(m.paragraph, []).append(SquadQuestion(m.qid, m.question, [], True))
    out = []
    for a in articles:
        if any(p.pid in by_pid for p in a.paragraphs):
            out.append(
                SquadArticle(
                    a.title, [SquadParagraph(p.pid, p.context, by_pid.get(p.pid, [])) for p in a.paragraphs]
                )
            )
    return out


def _squad_json(articles: list[SquadArticle], made: list[Made]) -> dict[str, Any]:
    kinds = {m.qid: m for m in made}
    return {
        "version": "v2.0-made",
        "data": [
            {
                "title": a.title,
                "paragraphs": [
                    {
                        "context": p.context,
                        "qas": [
                            {
                                "id": q.qid,
                                "question": q.question,
                                "answers": [],
                                "is_impossible": True,
                                "kind": kinds[q.qid].kind,
                                "source_id": kinds[q.qid].source_qid,
                            }
                            for q in p.questions
                        ],
                    }
                    for p in a.paragraphs
                ],
            }
            for a in articles
        ],
    }


def build_squad_unanswerable(
    out_dir: Path | None = None,
    seed: int = SEED,
    *,
    max_articles: int | None = None,
    squad_path: Path | None = None,
) -> dict[str, Any]:
    """Build (or find cached) ``squad-unanswerable`` into ``out_dir``; return its manifest
    (``max_articles``: from the first N training articles only, a slice for tests; ``squad_path``:
    another SQuAD v1.1 train file than the shared one)."""
    from sieveqa.data import squad_train_as2 as as2

    out_dir = Path(out_dir) if out_dir is not None else cache_root() / NAME
    squad_path, source = as2.train_source(squad_path)
    params = {"builder_version": BUILDER_VERSION, "source": source, "seed": seed, "weights": WEIGHTS}
    if max_articles is not None:
        params["max_articles"] = max_articles
    names = {SOURCE_FILE, "train.jsonl.gz", "contrast.jsonl.gz"}
    if (manifest := cached_manifest(out_dir, params, names)) is not None:
        return manifest
    articles = read_squad(squad_path)
    train_titles = set(as2.split_train_articles((a.title for a in articles), as2.DEV_ARTICLES)["train"])
    articles = [a for a in articles if a.title in train_titles][:max_articles]
    made = list(made_questions(tqdm(articles, desc=NAME, unit="article"), seed))
    squad = _as_squad(articles, made)
    out_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_squad_json(squad, made), ensure_ascii=False, indent=1)
    with atomic_open(out_dir / SOURCE_FILE, "wb") as raw:
        raw.write(gzip.compress(text.encode("utf-8"), mtime=0))
    contrast = _as_squad(articles, made, sources=True)
    pars = {
        "train": [(a.title, p) for a in squad for p in a.paragraphs],
        "contrast": [(a.title, p) for a in contrast for p in a.paragraphs],
    }
    files = {"train": ("train", None), "contrast": ("contrast", None)}
    manifest = write_passage_set(
        out_dir, NAME, params, pars, files, {"train": 0, "contrast": 0}, out_dir, appended=tuple(files)
    )
    source_file = out_dir / SOURCE_FILE
    manifest["files"][SOURCE_FILE] = {"questions": len(made), "sha256": file_sha256(source_file)}
    manifest["kinds"] = {k: sum(m.kind == k for m in made) for k in KINDS}
    atomic_write_json(out_dir / MANIFEST, manifest)
    return manifest


def unanswerable_open(out_dir: Path | None = None) -> list[OpenExample]:
    """``squad-unanswerable:open``: each made question over its own paragraph's passages, as an
    open-domain question marked ``impossible`` (the reader's format: every exit learns has-answer 0
    on it). Read from ``out_dir`` as built there, or from the cache (built on first use)."""
    from sieveqa.data.jsonl import read_jsonl
    from sieveqa.data.passage_sets import to_passages

    if out_dir is None:
        out_dir = cache_root() / NAME
        build_squad_unanswerable(out_dir)
    return [
        OpenExample(
            ex.qid,
            ex.question.text,
            [],
            [RetrievedPassage(c.id, c.text) for c in ex.candidates],
            impossible=True,
        )
        for ex in to_passages(read_jsonl(out_dir / "train.jsonl.gz"))
    ]
