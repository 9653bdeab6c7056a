"""The score cache: computed once, read back identically, invalidated when the weights change."""

from pathlib import Path

import torch

from sieveqa.evaluation.score_cache import cached_scores
from tests.runtime.test_cascade import _examples


def test_scores_are_cached_and_refreshed_with_new_weights(tiny_cascade, tmp_path: Path) -> None:
    examples = _examples([4, 3])
    folder = tiny_cascade.save_pretrained(tmp_path / "m")
    first = cached_scores(str(folder), "toy", examples, cache_dir=tmp_path / "cache")
    assert first.shape == (7, 4) and len(list((tmp_path / "cache").glob("*.pt"))) == 1
    again = cached_scores(str(folder), "toy", examples, cache_dir=tmp_path / "cache")
    assert torch.equal(first, again) and len(list((tmp_path / "cache").glob("*.pt"))) == 1
    with torch.no_grad():
        tiny_cascade.heads[0].output.bias += 1.0
    tiny_cascade.save_pretrained(folder)
    changed = cached_scores(str(folder), "toy", examples, cache_dir=tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("*.pt"))) == 2
    assert torch.allclose(changed[:, 0], first[:, 0] + 1.0, atol=1e-2)


def test_a_changed_text_under_the_same_ids_is_scored_again(tiny_cascade, tmp_path: Path) -> None:
    """The key held the candidate ids only: a file of one's own edited in place got stale scores."""
    from dataclasses import replace

    from sieveqa.data.records import RankingExample

    examples = _examples([3])
    folder = tiny_cascade.save_pretrained(tmp_path / "m")
    first = cached_scores(str(folder), "mine", examples, cache_dir=tmp_path / "cache")
    edited = [
        RankingExample(ex.question, [replace(c, text=c.text + " Edited.") for c in ex.candidates])
        for ex in examples
    ]
    again = cached_scores(str(folder), "mine", edited, cache_dir=tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("*.pt"))) == 2 and not torch.equal(first, again)
