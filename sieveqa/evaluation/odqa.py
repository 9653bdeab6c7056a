"""Open-domain QA evaluation: EM/F1 of answers read from retrieved passages, what it cost, and the
adaptive computation paper's analysis of how a scheduler spent its layers (its Table 3).

A :class:`ReadTable` is every passage of every question read to full depth once, each exit's raw
reading kept; replaying a schedule over it (:func:`replay`) gives what a live run would (the towers
are the same; see ``sieveqa.runtime.answer.towers``) without running the reader again, so budgets and
thresholds can be swept and the learned scheduler trained.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from sieveqa.data.open_qa import OpenExample, answer_spans
from sieveqa.errors import ConfigError
from sieveqa.evaluation.extractive import exact_match, f1_score
from sieveqa.io import atomic_open
from sieveqa.models.reader import ReaderModel, SpanGuess
from sieveqa.models.skyline_policy import SkylinePolicy, load_scheduler
from sieveqa.models.zoo import load_model
from sieveqa.paths import cache_root
from sieveqa.runtime.answer.schedulers import Outcome, Schedule, answer, run_schedule
from sieveqa.runtime.answer.towers import LiveTowers, ReplayTowers, Towers

TABLE_VERSION = 1

__all__ = [
    "ReadTable",
    "analyse",
    "answer_reward",
    "cached_table",
    "evaluate_reader",
    "evaluate_schedule",
    "load_policy",
    "load_reader",
    "read_table",
    "replay",
    "score_outcomes",
]


@dataclass
class ReadTable:
    """Raw readings ``guesses[question][passage][exit]``, windows per passage, and which passages
    hold a gold answer; ``depth`` and ``exits`` of the reader that read them."""

    qids: list[str]
    guesses: list[list[list[SpanGuess]]]
    rows: list[list[int]]
    has_answer: list[list[bool]]
    depth: int
    exits: list[int]

    def towers(self, q: int, temperatures: Sequence[float] | None = None) -> ReplayTowers:
        """Question ``q``'s towers, has-answer logits divided by ``temperatures`` (one per exit)."""
        table = self.guesses[q]
        if temperatures is not None:
            table = [[g.scaled(t) for g, t in zip(p, temperatures, strict=True)] for p in table]
        return ReplayTowers(table, self.depth, self.exits, self.rows[q])


def read_table(
    model: ReaderModel, examples: Sequence[OpenExample], passages: int | None = None, progress: bool = False
) -> ReadTable:
    """Read the top ``passages`` (all by default) of every question to full depth, uncalibrated."""
    texts = [[p.text for p in ex.passages[:passages]] for ex in examples]
    guesses, _ = model.read([ex.question for ex in examples], texts, progress, calibrated=False)
    flat_q = [ex.question for ex, ps in zip(examples, texts, strict=True) for _ in ps]
    features = model.featurize(flat_q, [p for ps in texts for p in ps])
    per_pair = [0] * len(flat_q)
    for src in features.source:
        per_pair[src] += 1
    rows, at = [], 0
    for ps in texts:
        rows.append(per_pair[at : at + len(ps)])
        at += len(ps)
    labels = [[bool(answer_spans(p, ex.answers)) for p in ps] for ex, ps in zip(examples, texts, strict=True)]
    return ReadTable(
        [ex.qid for ex in examples], guesses, rows, labels, model.encoder.num_layers, model.exits
    )


def load_reader(name: str) -> ReaderModel:
    """A saved reader; any other kind of model is refused naming what it is."""
    return load_model(name, ReaderModel, "--reader", "a reader (train one with --arch reader)")


def load_policy(path: str | None, method: str) -> SkylinePolicy | None:
    """The learned scheduler a method needs (only ``learned`` takes one)."""
    if method != "learned":
        if path is not None:
            raise ConfigError(f"--scheduler is for --method learned, not {method!r}")
        return None
    if path is None:
        raise ConfigError("--method learned needs --scheduler (a folder written by train-scheduler)")
    return load_scheduler(path)


def _table_key(model: ReaderModel, examples: Sequence[OpenExample], passages: int | None) -> str:
    # Tables hold raw logits: the temperatures do not change them, so a calibrated copy reuses them.
    settings = {k: v for k, v in asdict(model.config).items() if k != "temperatures"}
    digest = hashlib.sha256(json.dumps([TABLE_VERSION, passages, settings], sort_keys=True).encode())
    for tensor in model.state_dict().values():
        digest.update(tensor.detach().float().cpu().numpy().tobytes())
    for ex in examples:
        digest.update(json.dumps([ex.qid, ex.question, ex.answers, [p.text for p in ex.passages]]).encode())
    return digest.hexdigest()[:24]


def cached_table(
    model: ReaderModel, examples: Sequence[OpenExample], passages: int | None = None, progress: bool = False
) -> ReadTable:
    """:func:`read_table`, kept under ``cache_root()/reader-tables`` keyed by the model's weights and
    settings and the questions and passages, so a sweep or a second command reads nothing again."""
    path = cache_root() / "reader-tables" / f"{_table_key(model, examples, passages)}.json.gz"
    if path.is_file():
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            raw = json.load(handle)
        guesses = [[[SpanGuess(*g) for g in p] for p in q] for q in raw.pop("guesses")]
        return ReadTable(guesses=guesses, **raw)
    table = read_table(model, examples, passages, progress)
    data = asdict(table)
    data["guesses"] = [[[[g.has_logit, g.start, g.end, g.span] for g in p] for p in q] for q in table.guesses]
    with atomic_open(path, "wb") as raw_out, gzip.GzipFile(fileobj=raw_out, mode="wb", mtime=0) as gz:
        gz.write(json.dumps(data).encode("utf-8"))
    return table


def evaluate_schedule(
    model: ReaderModel,
    examples: Sequence[OpenExample],
    schedule: Schedule,
    policy: SkylinePolicy | None = None,
    live: bool = False,
    passages: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """EM/F1 and cost of ``schedule``; ``live`` builds the towers on the encoder one step at a time
    and times each question (tokenization included), else it replays a cached table."""
    examples = [OpenExample(ex.qid, ex.question, ex.answers, ex.passages[:passages]) for ex in examples]
    temps = model.config.temperatures
    if not live:
        table = cached_table(model, examples, None, progress)
        outcomes, built = replay(table, schedule, temps, policy)
        return score_outcomes(examples, outcomes) | analyse(table, built)
    outcomes, seconds = [], []
    with model.inference() as reader:
        for ex in tqdm(examples, desc="questions", unit="q", disable=not progress):
            started = time.perf_counter()
            towers = LiveTowers(reader, ex.question, [p.text for p in ex.passages])
            outcomes.append(run_schedule(towers, schedule, policy))
            seconds.append(time.perf_counter() - started)
    report: dict[str, Any] = score_outcomes(examples, outcomes)
    ms = np.asarray(seconds) * 1000
    report |= {
        "ms_mean": float(ms.mean()),
        "ms_p50": float(np.percentile(ms, 50)),
        "ms_p95": float(np.percentile(ms, 95)),
    }
    report["threads"] = torch.get_num_threads()
    return report


def replay(
    table: ReadTable,
    schedule: Schedule,
    temperatures: Sequence[float] | None = None,
    policy: SkylinePolicy | None = None,
) -> tuple[list[Outcome], list[Towers]]:
    """Run ``schedule`` on every question of ``table``; the outcomes and the built towers."""
    outcomes, built = [], []
    for q in range(len(table.qids)):
        towers = table.towers(q, temperatures)
        outcomes.append(run_schedule(towers, schedule, policy))
        built.append(towers)
    return outcomes, built


def answer_reward(examples: Sequence[OpenExample], schedule: Schedule) -> Callable[[int, Towers], float]:
    """``(question, towers) -> EM`` of the answer ``schedule`` gives from the towers built so far
    (it finishes the kept towers under the last-layer strategy): the learned scheduler's reward."""

    def reward(q: int, towers: Towers) -> float:
        return exact_match(answer_text(examples[q], answer(towers, schedule)), examples[q].answers)

    return reward


def answer_text(example: OpenExample, outcome: Outcome) -> str:
    """The answer string an outcome points at ('' when it has none)."""
    if outcome.tower < 0:
        return ""
    return example.passages[outcome.tower].text[outcome.start : outcome.end]


def score_outcomes(examples: Sequence[OpenExample], outcomes: Sequence[Outcome]) -> dict[str, float]:
    """EM and F1 (percent), average layers per passage and layer-units per question."""
    n = len(examples)
    if n == 0 or n != len(outcomes):
        raise ValueError(f"need one outcome per example, got {len(outcomes)} for {n}")
    answers = [answer_text(ex, o) for ex, o in zip(examples, outcomes, strict=True)]
    return {
        "em": 100 * sum(exact_match(a, ex.answers) for a, ex in zip(answers, examples, strict=True)) / n,
        "f1": 100 * sum(f1_score(a, ex.answers) for a, ex in zip(answers, examples, strict=True)) / n,
        "layers_per_passage": sum(
            o.tower_layers / max(1, len(ex.passages)) for o, ex in zip(outcomes, examples, strict=True)
        )
        / n,
        "layer_units": sum(o.layer_units for o in outcomes) / n,
    }


def evaluate_reader(model: ReaderModel, dev: Sequence[OpenExample], passages: int = 5) -> dict[str, float]:
    """The static reader on the top ``passages``: EM and F1 at the last exit, EM after every exit, of
    the answerable questions; with unanswerable ones in ``dev`` too, ``has_auc``: the AUROC of the
    best passage's last-exit has-answer logit between answerable and unanswerable questions."""
    from sieveqa.evaluation.open_answers import auroc

    examples = [OpenExample(ex.qid, ex.question, ex.answers, ex.passages[:passages]) for ex in dev]
    table = read_table(model, examples)
    out: dict[str, float] = {}
    if any(ex.impossible for ex in dev):
        top = [max((p[-1].has_logit for p in g), default=-math.inf) for g in table.guesses]
        can = [b for b, ex in zip(top, dev, strict=True) if not ex.impossible]
        cannot = [b for b, ex in zip(top, dev, strict=True) if ex.impossible]
        if (value := auroc(can, cannot)) is not None:  # None when no question is answerable
            out["has_auc"] = value
    keep = [q for q, ex in enumerate(dev) if not ex.impossible]
    examples, guesses = [examples[q] for q in keep], [table.guesses[q] for q in keep]
    for e, layer in enumerate(model.exits):
        outcomes = []
        for q in range(len(examples)):
            best = max(range(len(guesses[q])), key=lambda p, q=q, e=e: guesses[q][p][e].score, default=-1)
            g = guesses[q][best][e] if best >= 0 else None
            outcomes.append(
                Outcome(best, g.start if g else -1, g.end if g else -1, g.score if g else 0.0, 0, 0)
            )
        scores = score_outcomes(examples, outcomes)
        out[f"em@{layer}"] = scores["em"]
        if layer == model.exits[-1]:
            out["em"], out["f1"] = scores["em"], scores["f1"]
    return out


def analyse(table: ReadTable, built: Sequence[Towers]) -> dict[str, float]:
    """The paper's Table 3: variance of tower heights, average rank of the towers built, flips (how
    often the next layer goes to another tower), mean height of towers with and without an answer,
    and HAP (share of layers spent on towers with an answer)."""
    variance, ranks, flips, with_, without, hap = [], [], [], [], [], []
    for labels, towers in zip(table.has_answer, built, strict=True):
        variance.append(statistics.pvariance(towers.height) if towers.height else 0.0)
        steps = towers.steps
        ranks.extend(t + 1 for t in steps)
        flips.append(sum(a != b for a, b in itertools.pairwise(steps)))
        with_.extend(h for h, y in zip(towers.height, labels, strict=True) if y)
        without.extend(h for h, y in zip(towers.height, labels, strict=True) if not y)
        hap.extend(labels[t] for t in steps)
    mean = statistics.fmean
    return {
        "height_variance": mean(variance),
        "average_rank": mean(ranks) if ranks else 0.0,
        "flips": mean(flips),
        "height_with_answer": mean(with_) if with_ else 0.0,
        "height_without_answer": mean(without) if without else 0.0,
        "hap": 100 * mean(hap) if hap else 0.0,
    }
