"""The cache ``bench/peasi_choice.py`` sweeps: for each question of a set, what every stage of PEASI
says of the passages and sentences it reads (``peasi_choice.py cache ...`` writes it; see there).

Each question's row: the passage reranker's score of every retrieved passage (in retrieval order), and
for the ``--read`` best passages, each sentence's signals (EASI's logits, the judges' logits of its
passage, the point-wise ranker's logit of it read alone, its passage's BM25) and whether it is right.
The rows so far are saved every ``SAVE_EVERY`` questions: a run killed midway resumes.
"""

from __future__ import annotations

import argparse
import json
import random
from typing import Any

from _common import finish
from tqdm.auto import tqdm

from sieveqa.data.registry import is_open_dataset, load_dataset, load_open_dataset
from sieveqa.evaluation.abstention import as_passages, is_right
from sieveqa.evaluation.answers import passages_of
from sieveqa.io import atomic_write_json
from sieveqa.models.reader import ReaderModel
from sieveqa.models.zoo import load_model
from sieveqa.runtime.answer.answerer import load_answerer
from sieveqa.runtime.answer.fusion import lexical_scores
from sieveqa.runtime.answer.judge import judged, load_judge
from sieveqa.runtime.answer.method import AnswerRun, ModelSettings
from sieveqa.runtime.answer.sentence import rank_found

SAVE_EVERY = 25  # questions between two saves of a cache's rows so far


def _questions(name: str, limit: int | None) -> list[tuple[str, Any, Any]]:
    """(question, passages, judge) where judge(found) says whether an answer is right (None: the
    question is unanswerable); ``limit`` of them drawn at random (seed 0), for a quick look."""
    if is_open_dataset(name):
        examples = load_open_dataset(name)
        if limit is not None:
            examples = random.Random(0).sample(examples, min(limit, len(examples)))
        return [(ex.question, as_passages(ex, 20), None if ex.impossible else ex.answers) for ex in examples]
    out = []
    for ex in load_dataset(name):
        passages, members = passages_of(ex)
        labels = {p.id: [c.label == 1 for c in m] for p, m in zip(passages, members, strict=True)}
        out.append((ex.question.text, passages, labels))
    return out


def _right(judge: Any, found: Any) -> bool:
    if judge is None:
        return False
    if isinstance(judge, dict):
        return judge[found.passage.id][found.sentence]
    return is_right(found, judge)


def cache(args: argparse.Namespace) -> None:
    answerer = load_answerer(
        "peasi", None, reranker=args.reranker, selector=args.selector, second_look=0, judge=args.judge
    )
    method = answerer.method
    look = ModelSettings().ranker(args.look_ranker)
    judge2 = load_judge(args.judge2, ModelSettings()) if args.judge2 else None
    reader = load_model(args.reader, ReaderModel).configure(precision="auto") if args.reader else None
    models = method.model_names | {"look": args.look_ranker} | ({"reader": args.reader} if reader else {})
    models |= {"judge2": args.judge2} if judge2 is not None else {}
    # Rows so far are saved every SAVE_EVERY questions: a run killed midway (a session's end) resumes.
    partial = args.out.with_name(args.out.name + ".partial")
    key = {"dataset": args.dataset, "models": models, "read": args.read, "limit": args.limit}
    saved = json.loads(partial.read_text()) if partial.is_file() else {}
    rows = saved["rows"] if saved.get("key") == key else []
    asked = _questions(args.dataset, args.limit)
    for question, passages, gold in tqdm(
        asked[len(rows) :], desc=args.dataset, unit="q", initial=len(rows), total=len(asked)
    ):
        if rows and len(rows) % SAVE_EVERY == 0:
            atomic_write_json(partial, {"key": key, "rows": rows})
        found, scores, _ = method.candidates(question, passages, args.read)
        found = judged(method.judge, question, AnswerRun(found, None, None), "judge", every=True).answers
        found = judged(judge2, question, AnswerRun(found, None, None), "judge2", every=True).answers
        looked, _ = rank_found(look, question, found)
        pointwise = {(f.passage.id, f.sentence): f.score for f in looked}
        lexical = lexical_scores(question, [p.text for p in passages])
        low, high = min(lexical), max(lexical)
        bm25 = {
            p.id: (x - low) / (high - low) if high > low else 0.0
            for p, x in zip(passages, lexical, strict=True)
        }
        read = [p.id for p, _ in sorted(zip(passages, scores, strict=True), key=lambda x: -x[1])]
        rank = {pid: r for r, pid in enumerate(read)}
        at = {p.id: i for i, p in enumerate(passages)}  # retrieval (BM25) order
        logits = [f.passage_score for f in found]
        has = _has_answer(reader, question, found)
        rows.append(
            {
                "answerable": gold is not None,
                "passages": len(passages),
                "candidates": [
                    {
                        "rank": rank[f.passage.id],
                        "retrieved_at": at[f.passage.id],
                        **{k: round(v, 5) for k, v in (f.signals or {}).items()},
                        "pointwise": round(pointwise[(f.passage.id, f.sentence)], 5),
                        "bm25": round(bm25[f.passage.id], 5),
                        **({"has": round(has[f.passage.id], 5)} if reader else {}),
                        "right": _right(gold, f),
                    }
                    for f in found
                ],
                "logits": [round(x, 5) for x in sorted(set(logits), reverse=True)],
                # every retrieved passage's score, in retrieval order: what reranking fewer would see
                "retrieved": [round(float(x), 5) for x in scores],
            }
        )
    payload = {"dataset": args.dataset, "models": models}
    finish(args.out, "peasi_choice cache", payload | {"read": args.read, "questions": rows})
    partial.unlink(missing_ok=True)


def _has_answer(reader: ReaderModel | None, question: str, found: list[Any]) -> dict[str, float]:
    """The reader's last-exit has-answer logit of each passage the answers come from."""
    if reader is None:
        return {}
    passages = list({f.passage.id: f.passage for f in found}.values())
    read, _ = reader.read([question] * len(passages), [[p.text] for p in passages])
    return {p.id: float(r[0][-1].has_logit) for p, r in zip(passages, read, strict=True)}
