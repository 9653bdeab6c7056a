import random

import torch

from sieveqa.batching import PairFeatures, collate, length_batches


def test_inference_batches_sorted_and_complete() -> None:
    lengths = [5, 1, 9, 3, 7, 2, 8]
    batches = length_batches(lengths, 3)
    assert sorted(i for b in batches for i in b) == list(range(7))
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(lengths)
    assert [len(b) for b in batches] == [3, 3, 1]


def test_training_batches_cover_every_row_once_and_depend_on_seed() -> None:
    lengths = [random.Random(0).randint(5, 60) for _ in range(500)]
    a = length_batches(lengths, 16, rng=random.Random(1), pool_batches=4)
    b = length_batches(lengths, 16, rng=random.Random(1), pool_batches=4)
    c = length_batches(lengths, 16, rng=random.Random(2), pool_batches=4)
    assert a == b and a != c
    assert sorted(i for batch in a for i in batch) == list(range(500))
    # Bucketing: the mean padding per row is far below that of random batches.
    pad = sum(max(lengths[i] for i in batch) * len(batch) - sum(lengths[i] for i in batch) for batch in a)
    assert pad / 500 < 8


def test_collate_pads_right_with_mask() -> None:
    feats = PairFeatures([[101, 7, 102], [101, 102]], [[0, 0, 1], [0, 1]])
    batch = collate(feats, [1, 0], pad_id=0)
    assert batch["input_ids"].tolist() == [[101, 102, 0], [101, 7, 102]]
    assert batch["attention_mask"].tolist() == [[1, 1, 0], [1, 1, 1]]
    assert batch["token_type_ids"].tolist() == [[0, 1, 0], [0, 0, 1]]
    assert batch["input_ids"].dtype == torch.long
