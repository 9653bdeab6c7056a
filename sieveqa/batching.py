"""Tokenized pair features and length-bucketed batches (little padding, for training and inference)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase


@dataclass
class PairFeatures:
    """Token ids of (question, candidate) pairs, unpadded; ``lengths[i]`` is row i's token count."""

    input_ids: list[list[int]]
    token_type_ids: list[list[int]]

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def lengths(self) -> list[int]:
        return [len(ids) for ids in self.input_ids]


def tokenize_pairs(
    tokenizer: PreTrainedTokenizerBase, questions: Sequence[str], texts: Sequence[str], max_length: int
) -> PairFeatures:
    """Tokenize pairs, truncating the candidate side first so the question is never cut short."""
    if len(questions) != len(texts):
        raise ValueError(f"{len(questions)} questions but {len(texts)} candidate texts")
    if not questions:
        return PairFeatures([], [])
    enc = tokenizer(
        list(questions),
        list(texts),
        truncation="longest_first",
        max_length=max_length,
        return_token_type_ids=True,
        return_attention_mask=False,
    )
    return PairFeatures(enc["input_ids"], enc["token_type_ids"])


def tokenize_texts(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], max_length: int) -> PairFeatures:
    """Tokenize single texts (one segment each) for models that encode questions and answers apart."""
    if not texts:
        return PairFeatures([], [])
    enc = tokenizer(
        list(texts),
        truncation=True,
        max_length=max_length,
        return_token_type_ids=True,
        return_attention_mask=False,
    )
    return PairFeatures(enc["input_ids"], enc["token_type_ids"])


def collate(features: PairFeatures, rows: Sequence[int], pad_id: int) -> dict[str, Tensor]:
    """Right-pad the chosen rows into ``input_ids``, ``attention_mask`` and ``token_type_ids`` tensors."""
    width = max(len(features.input_ids[i]) for i in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    types = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for j, i in enumerate(rows):
        n = len(features.input_ids[i])
        ids[j, :n] = torch.tensor(features.input_ids[i])
        types[j, :n] = torch.tensor(features.token_type_ids[i])
        mask[j, :n] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def length_batches(
    lengths: Sequence[int], batch_size: int, rng: random.Random | None = None, pool_batches: int = 64
) -> list[list[int]]:
    """Group row indices into batches of similar length.

    Without ``rng`` (inference) rows are sorted by length once. With ``rng`` (training) rows are
    shuffled, then sorted within pools of ``pool_batches`` batches, and the batches shuffled: little
    padding, yet a different mix of rows every epoch.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = list(range(len(lengths)))
    if rng is None:
        order.sort(key=lambda i: lengths[i])
        return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    rng.shuffle(order)
    batches: list[list[int]] = []
    pool = batch_size * pool_batches
    for s in range(0, len(order), pool):
        chunk = sorted(order[s : s + pool], key=lambda i: lengths[i])
        batches.extend(chunk[t : t + batch_size] for t in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches
