"""The training loop learns, keeps the best model, and resumes exactly after a kill."""

import copy
from pathlib import Path

import pytest
import torch

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import ConfigError
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import PointwiseBCE
from sieveqa.training.pairs import make_pairs
from sieveqa.training.trainer import PairTensors, Trainer


def _toy_examples(n: int = 12) -> list[RankingExample]:
    # Learnable by a tiny random model: correct candidates carry their own marker words.
    words = [
        "apple",
        "river",
        "stone",
        "cloud",
        "piano",
        "tiger",
        "lemon",
        "ocean",
        "forest",
        "silver",
        "candle",
        "rocket",
    ]
    out = []
    for i in range(n):
        w, other = words[i % len(words)], words[(i + 5) % len(words)]
        out.append(
            RankingExample(
                Question(f"q{i}", f"tell me about {w}"),
                [Candidate(f"q{i}-p", f"yes indeed {w}", 1), Candidate(f"q{i}-n", f"no never {other}", 0)],
            )
        )
    return out


def _trainer(model: CrossEncoder, out: Path, objective=None, **cfg) -> Trainer:
    pairs = make_pairs(_toy_examples())
    config = TrainConfig(progress=False, batch_size=4, lr=3e-3, warmup_ratio=0.0, **cfg)
    data = PairTensors(
        model.featurize(pairs.questions, pairs.texts),
        torch.tensor(pairs.labels, dtype=torch.float32),
        model.tokenizer.pad_token_id,
    )
    return Trainer(model, objective or PointwiseBCE(), data, config, out)


def test_loss_goes_down(tiny_model, tmp_path: Path) -> None:
    pairs = make_pairs(_toy_examples())
    feats = tiny_model.featurize(pairs.questions, pairs.texts)
    from sieveqa.features import collate

    batch = collate(feats, list(range(len(pairs))), tiny_model.tokenizer.pad_token_id)
    batch["labels"] = torch.tensor(pairs.labels, dtype=torch.float32)
    tiny_model.eval()
    before = PointwiseBCE()(tiny_model, batch).item()
    _trainer(tiny_model, tmp_path, epochs=8).train()
    tiny_model.eval()
    after = PointwiseBCE()(tiny_model, batch).item()
    assert after < before * 0.7
    assert (tmp_path / "best" / "config.json").is_file()
    assert (tmp_path / "train_log.json").is_file()


class _Killer:
    """Wraps an objective and raises after N calls, like a process killed mid-run."""

    def __init__(self, n: int) -> None:
        self.n, self.inner = n, PointwiseBCE()

    def __call__(self, model, batch):
        self.n -= 1
        if self.n < 0:
            raise KeyboardInterrupt
        return self.inner(model, batch)


def test_resume_after_kill_matches_uninterrupted_run(tiny_model, tmp_path: Path) -> None:
    settings = dict(epochs=3, checkpoint_every=2, seed=5)
    whole = copy.deepcopy(tiny_model)
    _trainer(whole, tmp_path / "a", **settings).train()

    killed = copy.deepcopy(tiny_model)
    with pytest.raises(KeyboardInterrupt):
        _trainer(killed, tmp_path / "b", objective=_Killer(7), **settings).train()
    assert (tmp_path / "b" / "checkpoint" / "trainer_state.json").is_file()
    resumed = copy.deepcopy(tiny_model)
    state = _trainer(resumed, tmp_path / "b", **settings).train()
    assert state.step == 18
    for (name, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6, msg=name)


def test_resume_refuses_other_settings(tiny_model, tmp_path: Path) -> None:
    _trainer(copy.deepcopy(tiny_model), tmp_path, epochs=1).train()
    with pytest.raises(ConfigError, match=r"other settings \(epochs 1 -> 2\)"):
        _trainer(copy.deepcopy(tiny_model), tmp_path, epochs=2).train()


def test_make_pairs_caps_negatives() -> None:
    ex = RankingExample(Question("q", "?"), [Candidate(str(i), "t", int(i == 0)) for i in range(10)])
    pairs = make_pairs([ex], max_negatives=3, seed=1)
    assert pairs.labels == [1, 0, 0, 0]
    assert make_pairs([ex], max_negatives=3, seed=1).texts == pairs.texts


def test_bad_config_names_the_field() -> None:
    with pytest.raises(ValueError, match="batch_size=0"):
        TrainConfig(batch_size=0)


def test_labels_must_match_the_pairs(tiny_model) -> None:
    feats = tiny_model.featurize(["q", "q"], ["a", "b"])
    with pytest.raises(ValueError, match="need one label per training pair, got 2 pairs / 1 labels"):
        PairTensors(feats, torch.tensor([1.0]))
