"""Hashing based answer selection (HAS, Xu & Li, AAAI 2020) and its two BERT baselines, in one model.

Questions and answers are encoded apart by the same backbone. The question is max-pooled into u_q.
An answer keeps its token matrix V, which the hashing layer turns into B = tanh(βV) while training and
sign(V) at test time: one bit per value, so answer matrices can be computed once and stored (see
``sieveqa.runtime.store.answer_store``). The answer vector is attention over B conditioned on the question,

    α_i ∝ exp(mᵀ tanh(W1 b_i + W2 u_q)),   v_a = Σ α_i b_i,   s(q, a) = cos(u_q, v_a),

trained with the triplet hinge loss (margin 0.1) plus δ·‖B − sign(B)‖² (``training.objectives``).

``composition="attention", hashing=False`` is BERT-attention (float matrices, recomputed per question
or stored as floats); ``composition="pooling"`` is BERT-pooling (both sides pooled, answer vectors
stored). The kind of stored representation follows from the config (``store_kind``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sieveqa.backbones import Backbone
from sieveqa.data.records import RankingExample
from sieveqa.encoder import Cost, pool
from sieveqa.features import Features
from sieveqa.models.base import Ranker, RankResult, SimilarityResult
from sieveqa.models.configs import HashingConfig
from sieveqa.models.encoder_model import EncoderModel

#: Floats of logits, weights or answer vectors one ragged attention block may hold (question blocks are
#: cut to fit, at most _QUESTION_BLOCK questions), and of tanh inputs one logit block holds (~4 MB).
_RAGGED_FLOATS = 1 << 22
_QUESTION_BLOCK = 64
_LOGIT_BLOCK = 1 << 20

#: The paper's three models as (composition, hashing).


def binarize(values: Tensor) -> Tensor:
    """sign(V) with sign(0) = +1, so every value is exactly ±1 (and fits one bit)."""
    return torch.where(values >= 0, 1.0, -1.0).to(values.dtype)


class QuestionAttention(nn.Module):
    """α_i ∝ exp(mᵀ tanh(W1 b_i + W2 u_q)); returns Σ α_i b_i (padding gets no weight)."""

    def __init__(self, hidden: int, attention_hidden: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(hidden, attention_hidden, bias=False)
        self.w2 = nn.Linear(hidden, attention_hidden, bias=False)
        self.m = nn.Linear(attention_hidden, 1, bias=False)

    def forward(self, tokens: Tensor, mask: Tensor, question: Tensor) -> Tensor:
        """``tokens`` rows × L × D, ``mask`` rows × L, ``question`` rows × D (or 1 × D for all rows)."""
        logits = self.m(torch.tanh(self.w1(tokens) + self.w2(question).unsqueeze(1))).squeeze(-1)
        weights = logits.masked_fill(~mask.bool(), float("-inf")).softmax(dim=-1)
        return torch.einsum("rl,rld->rd", weights, tokens)

    def ragged(self, tokens: Tensor, lengths: Tensor, questions: Tensor) -> Iterator[tuple[Tensor, Tensor]]:
        """The same Σ α_i b_i for every question and every answer, the answers' token rows given one
        after another (``tokens`` T × D, ``lengths`` N answers), as ``(questions, q × N × D)`` blocks
        of questions cut so that a block holds at most ``_RAGGED_FLOATS`` floats.

        No padding is computed, and W1·b_i, the costly product, is computed once for all questions.
        For inference (it writes into reused buffers, which autograd does not allow).
        """
        count, total = len(lengths), len(tokens)
        if count == 0:
            return
        keys = self.w1(tokens)  # T × M
        owner = torch.repeat_interleave(torch.arange(count, device=tokens.device), lengths)
        starts = torch.cat([lengths.new_zeros(1), lengths.cumsum(0)])
        size = max(1, min(_QUESTION_BLOCK, _RAGGED_FLOATS // max(total, count * tokens.shape[1], 1)))
        for block in questions.split(size):
            logits = self._logits(keys, self.w2(block))  # q × T
            index = owner.expand_as(logits)
            top = logits.new_full((len(block), count), float("-inf"))
            top = top.scatter_reduce(1, index, logits, "amax", include_self=True)
            weights = (logits - top.gather(1, index)).exp()
            weights = weights / weights.new_zeros(top.shape).scatter_add(1, index, weights).gather(1, index)
            # Σ α_i b_i per (question, answer) is a sparse (q·N × T) by dense (T × D) product.
            rows = torch.cat(
                [(starts[:-1] + q * total) for q in range(len(block))]
                + [starts.new_full((1,), len(block) * total)]
            )
            cols = torch.arange(total, device=tokens.device).repeat(len(block))
            with warnings.catch_warnings():  # "sparse CSR support is in beta": it is exact here
                warnings.simplefilter("ignore", UserWarning)
                shape = (len(block) * count, total)
                mix = torch.sparse_csr_tensor(rows, cols, weights.reshape(-1), shape, check_invariants=False)
                yield block, (mix @ tokens).view(len(block), count, tokens.shape[1])

    def _logits(self, keys: Tensor, queries: Tensor) -> Tensor:
        """mᵀ tanh(k_i + W2 u_q) for every question (``queries`` q × M) and token (``keys`` T × M):
        q × T, computed a cache-sized block of tokens at a time into one reused buffer (the tanh over
        q × T × M values is most of a full scan's time; blocks halve it against one pass)."""
        out = keys.new_empty((len(queries), len(keys)))
        step = max(1, _LOGIT_BLOCK // (len(queries) * keys.shape[1]))
        buffer = keys.new_empty((len(queries), min(step, len(keys)), keys.shape[1]))
        for start in range(0, len(keys), step):
            part = buffer[:, : min(step, len(keys) - start)]
            torch.add(keys[start : start + step].unsqueeze(0), queries.unsqueeze(1), out=part)
            out[:, start : start + part.shape[1]] = part.tanh_() @ self.m.weight[0]
        return out


class HashingModel(EncoderModel, Ranker):
    """HAS / BERT-attention / BERT-pooling over a shared backbone (``HashingConfig.variant``)."""

    kind = "hashing"
    config_class = HashingConfig
    config: HashingConfig

    def __init__(self, config: HashingConfig | None = None, backbone: Backbone | None = None) -> None:
        super().__init__(config or HashingConfig(), backbone)
        self.attention = (
            QuestionAttention(self.encoder.hidden_size, self.config.attention_hidden)
            if self.config.composition == "attention"
            else None
        )
        self.batch_size = 128
        self.eval()

    # -- the two sides ------------------------------------------------------------------------------

    def question_vectors(
        self, input_ids: Tensor, attention_mask: Tensor, cost: Cost | None = None, **_: Tensor
    ) -> Tensor:
        """u_q: the pooled token encodings of each question, rows × D."""
        return pool(self.encoder(input_ids, attention_mask, cost=cost), attention_mask, self.config.pooling)

    def answer_tokens(
        self, input_ids: Tensor, attention_mask: Tensor, cost: Cost | None = None, **_: Tensor
    ) -> Tensor:
        """The answers' token matrices as a store would keep them (sign(V) for HAS at test time;
        tanh(βV) while training; V for BERT-attention; pooled vectors rows × D for BERT-pooling)."""
        hidden = self.encoder(input_ids, attention_mask, cost=cost)
        if self.config.composition == "pooling":
            return pool(hidden, attention_mask, self.config.pooling)
        if not self.config.hashing:
            return hidden
        return torch.tanh(self.config.beta * hidden) if self.training else binarize(hidden)

    def similarity(self, question: Tensor, answers: Tensor, mask: Tensor | None = None) -> Tensor:
        """cos(u_q, v_a) for answer representations from ``answer_tokens`` (or a store).

        ``question`` is rows × D, or 1 × D to score every answer row against one question.
        """
        if self.attention is None:
            vectors = answers
        else:
            if mask is None:
                raise ValueError("attention composition needs the answers' token mask")
            vectors = self.attention(answers, mask, question)
        return F.cosine_similarity(question, vectors, dim=-1)

    def forward(
        self,
        q_input_ids: Tensor,
        q_attention_mask: Tensor,
        a_input_ids: Tensor,
        a_attention_mask: Tensor,
        **_: Tensor,
    ) -> Tensor:
        """s(q, a) for aligned rows of questions and answers."""
        question = self.question_vectors(q_input_ids, q_attention_mask)
        answers = self.answer_tokens(a_input_ids, a_attention_mask)
        return self.similarity(question, answers, a_attention_mask)

    # -- inference ----------------------------------------------------------------------------------

    def featurize_questions(self, texts: Sequence[str]) -> Features:
        return self.featurizer.texts(texts, self.config.question_max_length)

    def featurize_answers(self, texts: Sequence[str]) -> Features:
        return self.featurizer.texts(texts, self.config.max_length)

    def encode_questions(
        self, texts: Sequence[str], progress: bool = False, cost: Cost | None = None
    ) -> Tensor:
        """u_q for each question: rows × D."""
        features = self.featurize_questions(texts)
        out = torch.empty((len(features), self.encoder.hidden_size))
        with self.inference() as model:
            for rows, batch in self.batches(features, progress, "questions", cost=cost):
                out[rows] = model.question_vectors(**batch, cost=cost)[: len(rows)].float().cpu()
        return out

    def encode_answers(
        self, texts: Sequence[str], progress: bool = False, cost: Cost | None = None
    ) -> list[Tensor]:
        """What a store keeps per answer, in input order: an L × D matrix (±1 for HAS; padding
        removed), or a D vector for BERT-pooling."""
        out: list[Tensor] = [torch.empty(0)] * len(texts)
        with self.inference() as model:
            for rows, batch in self.batches(self.featurize_answers(texts), progress, "answers", cost=cost):
                values = model.answer_tokens(**batch, cost=cost).float().cpu()
                lengths = batch["attention_mask"].sum(1).tolist()
                for j, i in enumerate(rows):
                    out[i] = (values[j] if values.dim() == 2 else values[j, : lengths[j]]).clone()
        return out

    def score_encoded(self, question: Tensor, answers: Sequence[Tensor]) -> Tensor:
        """Scores of one question vector (D) against encoded answers (from ``encode_answers``)."""
        if not answers:
            return torch.empty(0)
        if self.config.composition == "pooling":
            return self.score_stored(question, torch.stack(list(answers)), None)
        return self.score_stored(question, *pad_matrices(answers))

    def score_stored(self, question: Tensor, answers: Tensor, mask: Tensor | None) -> Tensor:
        """cos(u_q, v_a) of one question vector (D) against stacked answer representations (rows × L
        × D with their mask, or rows × D), on the model's device; the scores come back on the CPU."""
        device = self.device
        with torch.inference_mode():
            mask = None if mask is None else mask.to(device)
            return self.similarity(question.to(device).unsqueeze(0), answers.to(device), mask).float().cpu()

    def score_ragged(self, questions: Tensor, answers: Tensor, lengths: Tensor | None) -> Tensor:
        """cos(u_q, v_a) of Q question vectors (Q × D) against N stored answers: their token rows one
        after another (T × D, with ``lengths``), or their vectors (N × D, ``lengths`` None) for
        BERT-pooling. Returns Q × N scores on the CPU, computed in fp32 on the model's device, a block
        of questions at a time so that no Q × N × D tensor is ever held whole."""
        device = self.device
        with torch.inference_mode():
            questions, answers = questions.to(device).float(), answers.to(device).float()
            if self.attention is None:
                return (F.normalize(questions, dim=-1) @ F.normalize(answers, dim=-1).T).cpu()
            if lengths is None:
                raise ValueError("attention composition needs the answers' token lengths")
            out = [
                F.cosine_similarity(block.unsqueeze(1), vectors, dim=-1).cpu()
                for block, vectors in self.attention.ragged(answers, lengths.to(device), questions)
            ]
            return torch.cat(out) if out else torch.empty((len(questions), len(lengths)))

    def run(self, examples: Sequence[RankingExample], progress: bool = False) -> RankResult:
        """Scores with each distinct question and answer encoded once (as with a store)."""
        started = time.perf_counter()
        cost = Cost()
        questions = sorted({ex.question.text for ex in examples})
        answers = sorted({c.text for ex in examples for c in ex.candidates})
        q_vec = dict(zip(questions, self.encode_questions(questions, cost=cost), strict=True))
        a_rep = dict(zip(answers, self.encode_answers(answers, progress, cost), strict=True))
        scores = [
            self.score_encoded(q_vec[ex.question.text], [a_rep[c.text] for c in ex.candidates]).tolist()
            for ex in examples
        ]
        cost.seconds = time.perf_counter() - started
        return SimilarityResult(scores, cost)


def pad_matrices(matrices: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
    """Stack L_i × D matrices into rows × max L × D with a rows × max L mask."""
    width = max(len(m) for m in matrices)
    tokens = matrices[0].new_zeros((len(matrices), width, matrices[0].shape[-1]))
    mask = torch.zeros((len(matrices), width), dtype=torch.bool)
    for i, matrix in enumerate(matrices):
        tokens[i, : len(matrix)] = matrix
        mask[i, : len(matrix)] = True
    return tokens, mask
