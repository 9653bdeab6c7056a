"""Models that score a (question, candidate) pair jointly: the cross-encoder and the cascade.

They differ only in their heads: a pair model says how one batch becomes logits (one column, or one
per exit); featurizing, length-sorted batching, and turning the logits into a ``RankResult`` with
its cost live here once.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence

import torch
from torch import Tensor

from sieveqa.batching import on_device
from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost
from sieveqa.features import Features
from sieveqa.models.base import Ranker, RankResult, flatten_pairs, regroup
from sieveqa.models.encoder_model import EncoderModel

#: Pairs tokenized at a time: with a thread making batches ahead (on CUDA), the next chunk is
#: tokenized while the model reads this one.
CHUNK = 4096


class PairModel(EncoderModel, Ranker):
    """Base of the pair rankers: ``batch_logits`` per batch, everything else shared."""

    #: How :meth:`run` and :meth:`score_pairs` read a text longer than ``max_length``: in overlapping
    #: windows, keeping the best window's score (True: a model trained on answer sentences reads a
    #: passage as such pieces; 0.71 -> 0.88 nDCG@10 on documentation passages, docs/RESULTS.md issue
    #: 65), or its first ``max_length`` tokens only (False).
    windows: bool = True

    def featurize(self, questions: Sequence[str], texts: Sequence[str]) -> Features:
        """Pair rows ``[CLS] question [SEP] candidate [SEP]``, candidates truncated to ``max_length``."""
        return self.featurizer.pairs(questions, texts, self.config.max_length)

    def pair_rows(self, questions: Sequence[str], texts: Sequence[str], windows: bool) -> Features:
        """The rows the model reads: each pair cut to ``max_length`` (``featurize``), or with ``windows``
        a longer text in overlapping windows of ``max_length`` (a quarter shared), each a row whose
        ``source`` is its pair."""
        if not windows:
            return self.featurize(questions, texts)
        size = self.config.max_length
        return self.featurizer.pairs(questions, texts, size, stride=size // 4)

    @property
    def n_scores(self) -> int:
        """How many scores each pair gets (1, or one per exit)."""
        return 1

    @abstractmethod
    def batch_logits(self, batch: dict[str, Tensor], cost: Cost, last_only: bool) -> Tensor:
        """Logits of one collated batch, rows × ``n_scores`` (rows × 1 with ``last_only``);
        ``cost`` meters the call."""

    def score_matrix(
        self,
        questions: Sequence[str],
        texts: Sequence[str],
        progress: bool = False,
        last_only: bool = False,
        windows: bool = False,
    ) -> tuple[Tensor, Cost]:
        """Every score of every pair, nothing pruned: pairs × ``n_scores`` in input order (pairs × 1
        with ``last_only``), and what computing them cost (tokenization included in the seconds).

        With ``windows`` a text longer than ``max_length`` is read in overlapping windows (a quarter
        of ``max_length`` shared) and keeps its best score, instead of being truncated."""
        started = time.perf_counter()
        cost = Cost()
        rows_made = [0]  # windows are counted as each chunk is read (the progress bar's total)

        def made() -> Iterator[tuple[list[int], dict[str, Tensor]]]:
            for lo in range(0, len(questions), CHUNK):
                q, t = questions[lo : lo + CHUNK], texts[lo : lo + CHUNK]
                features = self.pair_rows(q, t, windows)
                rows_made[0] += len(features)
                for rows, batch in self.host_batches(features):
                    yield [lo + features.source[r] for r in rows], batch

        out = torch.full((len(questions), 1 if last_only else self.n_scores), float("-inf"))
        total: int | Callable[[], int] = (lambda: rows_made[0]) if windows else len(questions)
        with self.inference() as model:
            for pairs, batch in on_device(
                made(), self.device, total, progress, cost=cost, overlap=self.overlap
            ):
                logits = model.batch_logits(batch, cost, last_only)[: len(pairs)].float().cpu()
                index = torch.tensor(pairs).unsqueeze(1).expand_as(logits)
                out.scatter_reduce_(0, index, logits, "amax")  # a text's windows keep their best score
        cost.seconds = time.perf_counter() - started
        return out, cost

    def score_pairs(
        self, questions: Sequence[str], texts: Sequence[str], progress: bool = False
    ) -> list[float]:
        """The final score of each pair, in input order."""
        matrix, _ = self.score_matrix(questions, texts, progress, last_only=True, windows=self.windows)
        return matrix[:, 0].tolist()

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        """Score every candidate with the final head, nothing pruned."""
        pairs = flatten_pairs(examples)
        matrix, cost = self.score_matrix(*pairs, progress=progress, last_only=True, windows=self.windows)
        return RankResult(regroup(examples, matrix[:, 0].tolist()), cost)
