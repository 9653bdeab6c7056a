"""The α/τ study resumes from its SQLite file and refuses a study of another search."""

from __future__ import annotations

from pathlib import Path

import pytest

from sieveqa.data.jsonl import example_dict, write_jsonl
from sieveqa.errors import ConfigError
from sieveqa.training.config import TrainConfig
from sieveqa.training.kd_search import search_kd
from sieveqa.training.pairs import make_pairs
from sieveqa.training.teachers import TeacherScores

from .test_trainer import _toy_examples

SPACE = {"alpha": [0.0, 0.5], "tau": [1.0]}
CONFIG = TrainConfig(progress=False, batch_size=8, lr=3e-3, warmup_ratio=0.0, epochs=1, seed=3)


@pytest.mark.slow
def test_the_study_resumes_and_refuses_another_search(tmp_path: Path) -> None:
    path = tmp_path / "toy.jsonl"
    write_jsonl(path, map(example_dict, _toy_examples()))
    dataset = f"jsonl:{path}"
    pairs = make_pairs(_toy_examples())
    scores = [3.0 if y else -3.0 for y in pairs.labels]
    teacher = TeacherScores("t", "n/a", dataset, pairs.ids, scores).save(tmp_path / "t.json.gz")
    args = ("mhs", dataset, dataset, "tiny", tmp_path / "kd", [str(teacher)])
    settings = {"heads": 1, "max_length": 64}
    first = search_kd(*args, trials=1, config=CONFIG, settings=settings, space=SPACE)
    assert len(first["trials"]) == 1 and (tmp_path / "kd" / "study.sqlite").is_file()
    second = search_kd(*args, trials=2, config=CONFIG, settings=settings, space=SPACE)
    assert [t["number"] for t in second["trials"]] == [0, 1]  # one more, the first not redone
    assert sorted(t["alpha"] for t in second["trials"]) == [0.0, 0.5]
    assert second["best_metric"] == max(t["metric"] for t in second["trials"])
    with pytest.raises(ConfigError, match="another search \\(its 'space' differs\\)"):
        search_kd(*args, trials=3, config=CONFIG, settings=settings, space={"alpha": [0.1], "tau": [1.0]})


def test_a_stopped_trial_is_tried_again_by_the_next_search(tmp_path: Path, monkeypatch) -> None:
    """A signal stops training with KeyboardInterrupt; Optuna marked the trial failed and its grid
    took the failed point as visited: that alpha was never tried."""
    from sieveqa.training import kd_search
    from sieveqa.training.trainer import TrainState

    tried: list[float] = []

    def train_model(arch, train, out, init, dev, config, settings, options, resume):
        tried.append(options["alpha"])
        if len(tried) == 1:
            raise KeyboardInterrupt
        return TrainState(best_metric=options["alpha"], best_step=1)

    monkeypatch.setattr(kd_search, "train_model", train_model)
    args = ("mhs", "x", "x", "tiny", tmp_path / "kd", ["t.json.gz"])
    with pytest.raises(KeyboardInterrupt):
        search_kd(*args, trials=2, config=CONFIG, settings={}, space=SPACE)
    found = search_kd(*args, trials=2, config=CONFIG, settings={}, space=SPACE)
    assert sorted(t["alpha"] for t in found["trials"]) == [0.0, 0.5] and tried[1] == tried[0]
