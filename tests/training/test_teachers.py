"""Cached teacher scores: written atomically, read back, and refused when they do not match."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import DataFormatError
from sieveqa.training.pairs import make_pairs
from sieveqa.training.teachers import TeacherScores, weights_digest


def _examples() -> list[RankingExample]:
    candidates = [Candidate(f"c{j}", f"text {j}", j % 2) for j in range(3)]
    return [RankingExample(Question(f"q{i}", f"question {i}"), list(candidates)) for i in range(2)]


def _scores(ids: list[str]) -> TeacherScores:
    return TeacherScores("teacher-a", "ab" * 32, "wikiqa:train", ids, [float(i) for i in range(len(ids))])


def test_pairs_carry_their_ids_and_scores_round_trip(tmp_path: Path) -> None:
    pairs = make_pairs(_examples())
    assert pairs.ids == ["q0/c1", "q0/c0", "q0/c2", "q1/c1", "q1/c0", "q1/c2"]  # positives first
    path = _scores(pairs.ids).save(tmp_path / "t.json.gz")
    loaded = TeacherScores.load(path)
    assert loaded == _scores(pairs.ids)
    loaded.check("wikiqa:train", pairs.ids, "ab" * 32)  # matches: no error


@pytest.mark.parametrize(
    ("dataset", "ids", "digest", "message"),
    [
        ("trecqa:train", None, None, "are for dataset 'wikiqa:train', not 'trecqa:train'"),
        ("wikiqa:train", None, "cd" * 32, "come from other weights"),
        ("wikiqa:train", ["q0/c0", "q0/c2", "q0/c1"], None, "pair 1 is 'q0/c1' in the cache but 'q0/c2'"),
        ("wikiqa:train", ["q0/c0", "q0/c1"], None, "cover 3 pairs; the training pairs are 2"),
    ],
)
def test_mismatched_scores_are_refused_naming_the_difference(dataset, ids, digest, message) -> None:
    cached = _scores(["q0/c0", "q0/c1", "q0/c2"])
    with pytest.raises(DataFormatError, match=message):
        cached.check(dataset, ids or cached.pair_ids, digest)


def test_other_files_are_refused_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "x.json.gz"
    bad.write_text("not gzip")
    with pytest.raises(DataFormatError, match=r"x\.json\.gz: not a teacher-scores file"):
        TeacherScores.load(bad)
    with pytest.raises(DataFormatError, match="2 scores for 1 pairs"):
        TeacherScores("t", "d", "s", ["a"], [1.0, 2.0])


def test_a_truncated_or_foreign_gzip_is_refused_naming_the_file(tmp_path: Path) -> None:
    # Issue 30: a JSON list in valid gzip was a TypeError; a cut gzip read as Ctrl-D ("interrupted").
    listed = tmp_path / "list.json.gz"
    with gzip.open(listed, "wt", encoding="utf-8") as handle:
        json.dump([1, 2, 3], handle)
    with pytest.raises(DataFormatError, match=r"list\.json\.gz: not a teacher-scores file"):
        TeacherScores.load(listed)
    whole = _scores(["q0/c0", "q0/c1"]).save(tmp_path / "t.json.gz").read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DataFormatError, match=r"cut\.json\.gz: the gzip stream ends early"):
        TeacherScores.load(cut)


def test_the_digest_follows_the_weights() -> None:
    a, b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    b.load_state_dict(a.state_dict())
    assert weights_digest(a) == weights_digest(b)
    with torch.no_grad():
        b.bias[0] += 1e-3
    assert weights_digest(a) != weights_digest(b)
