"""Training a multi-head student (MHS) or a single-teacher distilled student: KD from cached scores.

``sieveqa train --arch mhs --teachers T1,T2,T3`` gives head ``i`` the teacher ``Ti``: a model (a
shipped name or a folder; or ``embedder:BACKBONE``, a bi-encoder's cosine: ``teachers.py``), whose
scores on the training pairs are computed once and cached under ``cache_root()/teacher-scores``, or
a file written by ``TeacherScores.save`` (scores brought from another machine). Either way the
scores are checked against the pairs being trained on before any step runs. The loss is the
paper's eq. 1 per head, summed (eq. 4).

``--pool NAMES`` adds pairs whose labels are not read (datasets, or ``pairs:FILE``: your own traffic
as ``{"query", "text"}`` lines): up to ``--max-negatives + 1`` candidates of each question, at most
``--pool-pairs`` in all (default: as many as the labelled pairs). Their label is unknown (NaN), so they
teach through the teachers' soft targets only (the hard term of eq. 1 is left out for them), and a
teacher whose scores are made logits (``bm25``, ``embedder:``) is calibrated on the labelled pairs.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from tqdm.auto import tqdm

from sieveqa.data.records import RankingExample
from sieveqa.errors import ConfigError, DataFormatError
from sieveqa.io import atomic_write_json
from sieveqa.models.encoder_model import EncoderModel
from sieveqa.models.multihead import MultiHeadStudent
from sieveqa.models.pair_model import PairModel
from sieveqa.models.zoo import load_model
from sieveqa.paths import cache_root
from sieveqa.training.batches import Objective, PairTensors, TrainData
from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import Distillation
from sieveqa.training.options import DistillOptions
from sieveqa.training.pairs import LabelledPairs, PointwiseRecipe, every_pair
from sieveqa.training.teachers import (
    POOL_PREFIX,
    TeacherScores,
    is_model_free_teacher,
    model_free_teacher,
    texts_digest,
    weights_digest,
)

log = logging.getLogger(__name__)


def _is_scores_file(spec: str) -> bool:
    return spec.endswith(".json.gz")


def teacher_scores(
    spec: str,
    dataset: str,
    pairs: LabelledPairs,
    progress: bool = True,
    option: str = "--teachers",
    partial: Path | None = None,
    **settings: Any,
) -> TeacherScores:
    """Teacher ``spec``'s scores of ``pairs``: read from a scores file, or computed once by the model
    (in fp32 unless ``settings`` say another ``precision``; other ``configure`` options too, e.g.
    ``device``) and cached; refused unless they were computed on exactly these pairs and texts.
    ``option`` names the flag that gave ``spec`` in errors; a model's scores so far are kept in
    ``partial`` (default: beside the cached file) while it scores."""
    texts = texts_digest(pairs)
    if _is_scores_file(spec):
        scores = TeacherScores.load(spec)
        scores.check(dataset, pairs.ids, texts=texts)
        return scores
    if is_model_free_teacher(spec):
        digest, score = model_free_teacher(spec, option)
    else:
        teacher = load_model(spec, PairModel, option, "a model that scores pairs")
        teacher.windows = False  # the student reads each pair cut to its input: so does its teacher
        digest = weights_digest(teacher)
    precision = settings.get("precision", "fp32")  # scores of another precision are other scores
    parts = [digest, dataset, *pairs.ids, texts] + ([f"precision:{precision}"] if precision != "fp32" else [])
    if not is_model_free_teacher(spec):  # how it reads (max_length, ...): the same weights, other scores
        parts.append(json.dumps(dataclasses.asdict(teacher.config), sort_keys=True, default=str))
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]
    path = cache_root() / "teacher-scores" / f"{key}.json.gz"
    so_far = partial or path.with_name(f"{key}.partial.json")
    if path.is_file():
        scores = TeacherScores.load(path)
    else:
        if is_model_free_teacher(spec):  # made logits (teachers.py)
            values = score(pairs, progress, **settings)
        else:
            teacher.configure(**{"precision": "fp32", **settings})  # bf16 would round the soft targets
            score = functools.partial(teacher.score_pairs, progress=False)
            values = scored_in_parts(score, pairs, so_far, progress, key)
        scores = TeacherScores(spec, digest, dataset, list(pairs.ids), values, texts)
        scores.save(path)
        if partial is None:  # the caller's own file of scores so far is removed by it, after its save
            so_far.unlink(missing_ok=True)
    scores.check(dataset, pairs.ids, digest, texts)
    return scores


#: Pairs a model teacher scores between two saves of its scores so far (a killed run resumes there).
PART = 2048


def scored_in_parts(
    score: Callable[[list[str], list[str]], list[float]],
    pairs: LabelledPairs,
    partial: Path,
    progress: bool,
    key: str = "",
) -> list[float]:
    """``score`` of every pair, in parts of ``PART`` pairs, the scores so far written to ``partial``
    (atomically, with ``key``: what they are scores of) after each part: a run killed midway resumes
    after the last part it finished (an hour of MPNet scoring is not lost to a stopped session); scores
    so far of another key (other pairs, another teacher) are not taken up."""
    try:
        done = json.loads(partial.read_text()) if partial.is_file() else {}
        kept = done.get("scores", []) if isinstance(done, dict) and done.get("key") == key else []
        values = [float(v) for v in kept] if len(kept) <= len(pairs) else []
    except (ValueError, TypeError, AttributeError):  # a damaged file of scores so far: made again
        values = []
    if partial.is_file() and not values:
        log.warning("%s: scores so far of other pairs, another teacher or damaged: scoring anew", partial)
    bar = tqdm(total=len(pairs), initial=len(values), desc="scoring", unit="pair", disable=not progress)
    for lo in range(len(values), len(pairs), PART):
        hi = min(lo + PART, len(pairs))
        values += score(list(pairs.questions[lo:hi]), list(pairs.texts[lo:hi]))
        atomic_write_json(partial, {"key": key, "scores": values}, indent=None)  # rewritten each part
        bar.update(hi - lo)
    bar.close()
    return values


def pooled(
    pairs: LabelledPairs,
    source: str,
    config: TrainConfig,
    options: DistillOptions,
    load: Callable[[str], Sequence[RankingExample]],
) -> tuple[LabelledPairs, str]:
    """``pairs`` with ``options.pool``'s (``with_pool``) and the name their scores are kept under."""
    if not options.pool:
        return pairs, source
    return with_pool(pairs, load(options.pool), config, options), f"{source}+pool:{options.pool}"


def with_pool(
    pairs: LabelledPairs, pool: Sequence[RankingExample], config: TrainConfig, options: DistillOptions
) -> LabelledPairs:
    """``pairs`` followed by the pool's (labels unknown: NaN; ids ``pool:QID/CID``), sampled as the
    module docstring says; a pool question the labelled pairs already ask is left out (TrecQA's
    train-all holds train: its pairs would count twice, once without their labels)."""
    per_question = (config.max_negatives or 20) + 1
    asked = set(pairs.questions)
    fresh = [ex for ex in pool if ex.question.text not in asked]
    extra = every_pair(fresh, options.pool_pairs or len(pairs), seed=config.seed, per_question=per_question)
    if not len(extra):
        raise DataFormatError(f"--pool {options.pool}: no candidates to learn from")
    return LabelledPairs(
        pairs.questions + extra.questions,
        pairs.texts + extra.texts,
        pairs.labels + [math.nan] * len(extra),
        pairs.ids + [f"{POOL_PREFIX}{i}" for i in extra.ids],
    )


@dataclass
class DistillTensors(PairTensors):
    """Pairs with their labels and one teacher logit per head."""

    teacher: Tensor = field(default_factory=lambda: torch.empty(0))

    def batch(self, rows: Sequence[int]) -> dict[str, Tensor]:
        return {**super().batch(rows), "teacher": self.teacher[rows]}


class DistillRecipe(PointwiseRecipe):
    """Pointwise pairs; each head learns from its own teacher's cached scores (KD, eq. 1)."""

    options_class = DistillOptions
    options: DistillOptions

    def prepare(self, model: EncoderModel) -> None:
        heads = model.config.heads if isinstance(model, MultiHeadStudent) else 1
        if len(self.options.teachers) != heads:
            raise ConfigError(
                f"--teachers gives {len(self.options.teachers)} teacher(s) for {heads} head(s); one per head"
            )
        for spec in self.options.teachers:
            if _is_scores_file(spec) and not Path(spec).is_file():
                raise ConfigError(f"--teachers {spec}: no such file")

    def sample(self, examples: Sequence[RankingExample], config: TrainConfig, source: str) -> LabelledPairs:
        pairs = super().sample(examples, config, source)
        pairs, source = pooled(pairs, source, config, self.options, self.load)
        self.scores = [teacher_scores(t, source, pairs, config.progress) for t in self.options.teachers]
        return pairs

    def targets(self) -> list[list[float]]:
        return [s.scores for s in self.scores]

    def tensors(self, model: EncoderModel, sample: LabelledPairs) -> TrainData:
        base = super().tensors(model, sample)
        assert isinstance(base, PairTensors)
        teacher = torch.tensor([s.scores for s in self.scores], dtype=torch.float32).T.contiguous()
        return DistillTensors(base.features, base.labels, base.pad_id, teacher)

    def objective(self, model: EncoderModel) -> Objective:
        return Distillation(self.options.alpha, self.options.tau)
