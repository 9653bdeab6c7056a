"""Teacher scores for distillation, computed once and cached beside the run (MHS, issue 13).

A student never runs its teachers inside its training loop: each teacher scores the training pairs
once, and the scores are stored with what they belong to (the dataset, every pair's id in order and
the teacher's weights digest). A cache that does not match the pairs being trained on is refused
with an error that names the first difference, so scores of other data, another order or another
teacher are never silently mixed in.

A teacher of another kind (issue 65): a sentence embedder's cosine, as a logit a student can learn.

``embedder:BACKBONE`` (``embedder:mpnet-12``: all-mpnet-base-v2 as sentence-transformers runs it, mean
of the token states, normalised) scores a pair by the cosine of the question's and the text's
vectors. A cosine is not a logit: the distillation loss softens logits by a temperature, and a
cosine's range (about 0 to 1) would make every soft target flat. So the cosines are turned into
log-odds by a logistic regression fitted on the same labelled pairs (two numbers: ``a·cos + b``),
which keeps the teacher's order and gives its scores the scale a cross-encoder teacher's have: at the
fit, the mean probability equals the share of right pairs.

Two more kinds, made logits the same way: ``bm25`` (BM25 of each candidate for its question, the
question's candidates being the corpus: the first stage's view, no model at all) and
``reader:NAME`` (a span reader's has-answer logit of the pair at its last exit, ``reader:reader`` for
the shipped one: whether the text holds an answer span, a reader's view rather than a ranker's; already
a logit, kept as it is).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from sieveqa.errors import ConfigError, DataFormatError
from sieveqa.io import atomic_open
from sieveqa.models.embedder import EmbedderConfig, SentenceEmbedder
from sieveqa.training.pairs import LabelledPairs

FORMAT = "sieveqa-teacher-scores/1"


def weights_digest(model: nn.Module) -> str:
    """sha256 over a model's parameters and buffers (names, shapes and fp32 bytes), in state-dict order."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(f"{name}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


@dataclass
class TeacherScores:
    """One teacher's logit for every training pair, and what they were computed on."""

    teacher: str  # the name or folder the teacher was loaded from
    teacher_digest: str  # weights_digest of the teacher
    dataset: str  # the training set's name
    pair_ids: list[str]  # "qid/candidate id" of each pair, in training order
    scores: list[float]
    #: ``texts_digest`` of the pairs (None in files written before it was kept).
    texts: str | None = None

    def __post_init__(self) -> None:
        if len(self.pair_ids) != len(self.scores):
            raise DataFormatError(
                f"teacher scores of {self.teacher}: {len(self.scores)} scores for {len(self.pair_ids)} pairs"
            )

    def save(self, path: str | Path) -> Path:
        """Write gzipped JSON atomically (a killed write leaves no file)."""
        path = Path(path)
        with atomic_open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(json.dumps({"format": FORMAT, **asdict(self)}).encode("utf-8"))
        return path

    @classmethod
    def load(cls, path: str | Path) -> TeacherScores:
        """Read a file written by :meth:`save`; anything else is refused naming the file."""
        try:
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                raw: Any = json.load(handle)
        except EOFError:  # click would take it for Ctrl-D and say "interrupted"
            raise DataFormatError(f"{path}: the gzip stream ends early (a truncated file)") from None
        except (OSError, ValueError) as err:
            raise DataFormatError(f"{path}: not a teacher-scores file ({err})") from None
        if not isinstance(raw, dict) or raw.pop("format", None) != FORMAT:
            raise DataFormatError(f"{path}: not a teacher-scores file (format {FORMAT} expected)")
        try:
            return cls(**raw)
        except TypeError as err:
            raise DataFormatError(f"{path}: {err}") from None

    def check(
        self,
        dataset: str,
        pair_ids: Sequence[str],
        teacher_digest: str | None = None,
        texts: str | None = None,
    ) -> None:
        """Refuse these scores unless they were computed on exactly ``pair_ids`` of ``dataset`` (and,
        given, by the teacher with ``teacher_digest``, on pairs whose ``texts_digest`` is ``texts``);
        the error names the first difference."""
        where = f"teacher scores of {self.teacher}"
        if dataset != self.dataset:
            raise DataFormatError(f"{where} are for dataset {self.dataset!r}, not {dataset!r}")
        if teacher_digest is not None and teacher_digest != self.teacher_digest:
            raise DataFormatError(
                f"{where} come from other weights (digest {self.teacher_digest[:12]}, "
                f"this teacher's is {teacher_digest[:12]})"
            )
        for i, (cached, wanted) in enumerate(zip(self.pair_ids, pair_ids, strict=False)):
            if cached != wanted:
                raise DataFormatError(
                    f"{where}: pair {i} is {cached!r} in the cache but {wanted!r} in the training pairs "
                    "(other data or another order)"
                )
        if len(self.pair_ids) != len(pair_ids):
            raise DataFormatError(
                f"{where} cover {len(self.pair_ids)} pairs; the training pairs are {len(pair_ids)}"
            )
        if texts is not None and self.texts is not None and texts != self.texts:
            raise DataFormatError(
                f"{where}: the same pairs by id, but their questions or texts have changed since the "
                "scores were computed (a file edited in place?)"
            )


def texts_digest(pairs: LabelledPairs) -> str:
    """sha256 of every pair's question and text, in order: what ids alone do not pin (``pairs:FILE``
    numbers its lines, so a file edited in place keeps its ids)."""
    digest = hashlib.sha256()
    for question, text in zip(pairs.questions, pairs.texts, strict=True):
        digest.update(f"{len(question)}:{question}{len(text)}:{text}".encode())
    return digest.hexdigest()


PREFIX = "embedder:"
READER_PREFIX = "reader:"
#: What a pool pair's id starts with (``distill.with_pool``).
POOL_PREFIX = "pool:"
#: A made-logit teacher's scores of some pairs: ``scorer(pairs, progress, **configure_settings)``.
Scorer = Callable[..., list[float]]
BM25 = "bm25"


def is_model_free_teacher(spec: str) -> bool:
    """A teacher whose scores come from elsewhere than a pair model's logit (``teacher_scores``)."""
    return spec == BM25 or spec.startswith((PREFIX, READER_PREFIX))


def model_free_teacher(spec: str, option: str = "--teachers") -> tuple[str, Scorer]:
    """An ``embedder:``, ``bm25`` or ``reader:`` teacher (module docstring): what identifies its scores
    (the cache key), and what computes them for some pairs (its model loaded once, here); ``option``
    names the flag that gave it in errors."""
    if spec == BM25:
        return "bm25:lucene", lambda pairs, progress, **_: calibrated_logits(
            bm25_by_question(pairs), pairs.labels
        )
    if spec.startswith(READER_PREFIX):
        reader = _reader(spec, option)
        return f"{spec}:{weights_digest(reader)}", functools.partial(has_answer_logits, reader)
    embedder = load_embedder_teacher(spec)

    def cosine_logits(pairs: LabelledPairs, progress: bool, **settings: Any) -> list[float]:
        embedder.configure(**{"precision": "fp32", **settings})
        return calibrated_logits(cosines(embedder, pairs.questions, pairs.texts, progress), pairs.labels)

    return f"{spec}:{embedder.signature()['fingerprint']}", cosine_logits


def own_scores(spec: str, pairs: LabelledPairs, progress: bool = True) -> list[float]:
    """A model-free teacher's own scores of ``pairs``, before they are made logits: the order it ranks
    by (a table of rankers reads these; no labels are read)."""
    if spec == BM25:
        return bm25_by_question(pairs).tolist()
    if spec.startswith(READER_PREFIX):
        return has_answer_logits(_reader(spec, "--row"), pairs, progress)
    return cosines(load_embedder_teacher(spec), pairs.questions, pairs.texts, progress).tolist()


def _reader(spec: str, option: str) -> Any:
    """The span reader a ``reader:NAME`` spec names."""
    from sieveqa.models.reader import ReaderModel
    from sieveqa.models.zoo import load_model

    name = spec.removeprefix(READER_PREFIX)
    if not name:
        raise ConfigError(f"{spec!r}: name the reader, e.g. reader:reader")
    return load_model(name, ReaderModel, option, "a span reader")


def bm25_by_question(pairs: LabelledPairs) -> np.ndarray:
    """BM25 of each pair's text for its question, over the texts of the pairs of that question (a
    pool's pairs apart from the labelled ones: adding a pool leaves the labelled pairs' BM25 as it was)."""
    from sieveqa.models.fusion import lexical_scores

    groups: dict[tuple[bool, str], list[int]] = {}
    ids = pairs.ids or [""] * len(pairs)
    for i, (question, pair_id) in enumerate(zip(pairs.questions, ids, strict=True)):
        groups.setdefault((pair_id.startswith(POOL_PREFIX), question), []).append(i)
    out = np.zeros(len(pairs), dtype=np.float64)
    for rows in groups.values():
        out[rows] = lexical_scores(pairs.questions[rows[0]], [pairs.texts[i] for i in rows])
    return out


def has_answer_logits(reader: Any, pairs: LabelledPairs, progress: bool, **settings: Any) -> list[float]:
    """A span reader's has-answer logit of each pair, at its last exit (uncalibrated)."""
    reader.configure(**{"precision": "fp32", **settings})
    read, _ = reader.read(pairs.questions, [[t] for t in pairs.texts], progress, calibrated=False)
    return [float(guesses[0][-1].has_logit) for guesses in read]


def load_embedder_teacher(spec: str) -> SentenceEmbedder:
    """The embedder an ``embedder:BACKBONE`` spec names (a backbone the project has: mpnet-12, ...)."""
    backbone = spec.removeprefix(PREFIX)
    if not backbone:
        raise ConfigError(f"{spec!r}: name the embedder's backbone, e.g. embedder:mpnet-12")
    return SentenceEmbedder(EmbedderConfig(backbone=backbone))


def cosines(
    embedder: SentenceEmbedder, questions: Sequence[str], texts: Sequence[str], progress: bool
) -> np.ndarray:
    """The cosine of each (question, text) pair; every distinct text is embedded once."""
    unique = list(dict.fromkeys([*questions, *texts]))
    at = {t: i for i, t in enumerate(unique)}
    vectors = embedder.embed(unique, progress=progress)  # unit vectors
    q = vectors[[at[t] for t in questions]]
    t = vectors[[at[x] for x in texts]]
    return np.einsum("ij,ij->i", q, t).astype(np.float64)


def calibrated_logits(values: np.ndarray, labels: Sequence[float], steps: int = 200) -> list[float]:
    """``a·value + b`` with ``a >= 0`` and ``b`` the logistic regression of ``labels`` on ``values``
    (maximum likelihood, LBFGS; a tiny ridge on ``a`` keeps a separable set finite). ``a`` is kept
    from going negative: the teacher's order is its knowledge, and a cosine that ranks right pairs
    lower than wrong ones teaches nothing (its logits are then all ``b``)."""
    x = torch.tensor(values, dtype=torch.float64)
    y = torch.tensor(list(labels), dtype=torch.float64).clamp(0, 1)
    known = ~torch.isnan(y)  # pool pairs (unknown labels) take the fit made on the labelled ones
    if not 0 < float(y[known].sum()) < int(known.sum()):
        raise ConfigError(
            "a cosine or BM25 teacher is calibrated on right and wrong pairs: these have one kind only"
        )
    mean, spread = x[known].mean(), x[known].std().clamp_min(1e-12)  # as without a pool
    z = (x - mean) / spread
    params = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([params], max_iter=steps, line_search_fn="strong_wolfe")

    def logits() -> torch.Tensor:
        return torch.nn.functional.softplus(params[0]) * z + params[1]

    def loss() -> torch.Tensor:
        optimizer.zero_grad()
        slope = torch.nn.functional.softplus(params[0])
        fitted = torch.nn.functional.binary_cross_entropy_with_logits(logits()[known], y[known])
        value = fitted + 1e-6 * slope**2
        value.backward()
        return value

    optimizer.step(loss)
    with torch.no_grad():
        return logits().tolist()
