"""The training loop learns, keeps the best model, and resumes exactly after a kill."""

import copy
import json
import random
import signal
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import ConfigError
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.zoo import load_model
from sieveqa.training.batches import PairTensors
from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import PointwiseBCE
from sieveqa.training.pairs import make_pairs
from sieveqa.training.trainer import Trainer, train_precision


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


@pytest.mark.slow
def test_loss_goes_down(tiny_model, tmp_path: Path) -> None:
    pairs = make_pairs(_toy_examples())
    feats = tiny_model.featurize(pairs.questions, pairs.texts)
    from sieveqa.batching import collate

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


class _Sampling(PointwiseBCE):
    """An objective that draws from Python's generator each batch (as exit or negative sampling may)."""

    def __call__(self, model, batch):
        return super().__call__(model, batch) * (0.5 + random.random())


def _assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=1e-6, msg=name)


@pytest.mark.parametrize(
    ("precision", "grad_accum"),
    [
        ("fp32", 1),
        pytest.param("bf16", 1, marks=pytest.mark.slow),
        pytest.param("fp32", 4, marks=pytest.mark.slow),
    ],
)
def test_resume_after_kill_matches_uninterrupted_run(
    tiny_model, tmp_path: Path, precision: str, grad_accum: int
) -> None:
    # With 4 batches a step, epochs of 6 batches end mid-step: the kill after 7 batches resumes from
    # an epoch-end checkpoint, which must hold no half-accumulated step.
    settings = dict(epochs=3, checkpoint_every=2, seed=5, precision=precision, grad_accum=grad_accum)
    whole = copy.deepcopy(tiny_model)
    _trainer(whole, tmp_path / "a", objective=_Sampling(), **settings).train()

    killed = copy.deepcopy(tiny_model)
    killer = _Killer(7)
    killer.inner = _Sampling()
    with pytest.raises(KeyboardInterrupt):
        _trainer(killed, tmp_path / "b", objective=killer, **settings).train()
    assert (tmp_path / "b" / "checkpoint" / "trainer_state.json").is_file()
    resumed = copy.deepcopy(tiny_model)
    state = _trainer(resumed, tmp_path / "b", objective=_Sampling(), **settings).train()
    assert state.step == (18 if grad_accum == 1 else 6)
    _assert_same_weights(whole, resumed)


@pytest.mark.slow
def test_stop_after_pauses_and_the_same_settings_continue(tiny_model, tmp_path: Path) -> None:
    settings = dict(epochs=2, checkpoint_every=4, seed=3)
    whole = copy.deepcopy(tiny_model)
    _trainer(whole, tmp_path / "a", **settings).train()

    paused = copy.deepcopy(tiny_model)
    state = _trainer(paused, tmp_path / "b", stop_after=5, **settings).train()
    assert state.step == 5 and state.paused  # between two checkpoints: the pause writes its own
    assert not (tmp_path / "b" / "best").exists()  # no end-of-run evaluation at a pause
    again = _trainer(copy.deepcopy(tiny_model), tmp_path / "b", stop_after=5, **settings).train()
    assert again.step == 5  # already there: nothing more runs
    resumed = copy.deepcopy(tiny_model)
    assert _trainer(resumed, tmp_path / "b", **settings).train().step == 12
    _assert_same_weights(whole, resumed)
    assert resumed_seconds(tmp_path / "b") > 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_run_at_a_steps_end_with_its_checkpoint(
    tiny_model, tmp_path: Path, signum: int
) -> None:
    """Ctrl-C (or a session's SIGTERM) mid-step lost every step since the last checkpoint (up to 199
    by default); now the step under way ends, its checkpoint is written, and the run resumes there as
    if it had never stopped."""
    settings = dict(epochs=2, checkpoint_every=100, seed=3)
    whole = copy.deepcopy(tiny_model)
    _trainer(whole, tmp_path / "a", **settings).train()
    calls = 0

    def signalled(model, batch):
        nonlocal calls
        calls += 1
        if calls == 3:
            signal.raise_signal(signum)  # arrives mid-step, before the backward pass
        return PointwiseBCE()(model, batch)

    stopped, before = copy.deepcopy(tiny_model), signal.getsignal(signum)
    with pytest.raises(KeyboardInterrupt):
        _trainer(stopped, tmp_path / "b", signalled, **settings).train()
    assert resumed_step(tmp_path / "b") == 3  # the step under way, finished and kept
    assert signal.getsignal(signum) is before and calls == 3  # the handler is gone with the run
    resumed = copy.deepcopy(tiny_model)
    assert _trainer(resumed, tmp_path / "b", **settings).train().step == 12
    _assert_same_weights(whole, resumed)


def test_a_signal_its_launcher_ignores_stays_ignored() -> None:
    """A background job starts with SIGINT ignored: the run took it over, and a SIGINT then stopped it."""
    from sieveqa.training.checkpoint import StopRequest

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with StopRequest().installed():
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_IGN, signal.SIG_DFL)  # caught
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.slow
def test_a_stop_at_the_last_step_finishes_the_run(tiny_model, tmp_path: Path) -> None:
    state = _trainer(tiny_model, tmp_path, epochs=1, stop_after=6).train()
    assert state.step == 6 and not state.paused
    assert [h["when"] for h in state.history] == ["epoch 1"] and (tmp_path / "best").is_dir()


def resumed_step(out: Path) -> int:
    import json

    return json.loads((out / "checkpoint" / "trainer_state.json").read_text())["step"]


def resumed_seconds(out: Path) -> float:
    import json

    return json.loads((out / "checkpoint" / "trainer_state.json").read_text())["seconds"]


@pytest.mark.parametrize(("native", "expected"), [(True, "bf16"), (False, "fp32")])
def test_auto_precision_is_bf16_only_where_native(monkeypatch, native: bool, expected: str) -> None:
    monkeypatch.setattr("sieveqa.device.native_bf16", lambda: native)
    assert train_precision("auto", torch.device("cpu")) == expected
    assert train_precision("fp32", torch.device("cpu")) == "fp32"
    assert train_precision("bf16", torch.device("cpu")) == "bf16"


@pytest.mark.slow
def test_resume_on_another_kind_of_cpu_continues_and_says_so(tiny_model, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setattr("sieveqa.device.native_bf16", lambda: True)
    _trainer(copy.deepcopy(tiny_model), tmp_path, epochs=2, stop_after=3).train()
    monkeypatch.setattr("sieveqa.device.native_bf16", lambda: False)
    trainer = _trainer(copy.deepcopy(tiny_model), tmp_path, epochs=2)
    assert trainer.precision == "fp32"
    assert trainer.train().step == 12
    assert "the checkpoint trained in bf16, this machine continues in fp32" in capsys.readouterr().out


def test_bad_precision_is_refused() -> None:
    with pytest.raises(ConfigError, match="invalid --precision 'fp16'"):
        TrainConfig(precision="fp16")


@pytest.mark.slow
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
    with pytest.raises(ValueError, match="invalid --batch-size 0"):
        TrainConfig(batch_size=0)
    # It said "see sieveqa train --help for the ranges", which the help did not show.
    says = r"^invalid --lr -1.0 \(must be above 0\); --warmup-ratio 1.0 \(must be in \[0, 1\)\)$"
    with pytest.raises(ValueError, match=says):
        TrainConfig(lr=-1.0, warmup_ratio=1.0)


def test_labels_must_match_the_pairs(tiny_model) -> None:
    feats = tiny_model.featurize(["q", "q"], ["a", "b"])
    with pytest.raises(ValueError, match="need one label per training pair, got 2 pairs / 1 labels"):
        PairTensors(feats, torch.tensor([1.0]))


def test_train_layers_changes_only_the_top_layer_and_the_head(tmp_path: Path) -> None:
    from sieveqa.models.cross_encoder import CrossEncoderConfig

    model = CrossEncoder(CrossEncoderConfig(backbone="tiny", max_length=64, train_layers=1))
    top = f"encoder.backbone.encoder.layer.{len(model.encoder.layers) - 1}."
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    _trainer(model, tmp_path, epochs=1).train()
    changed = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert changed and all(n.startswith((top, "head")) for n in changed), sorted(changed)[:3]
    assert any(n.startswith("head") for n in changed) and any(n.startswith(top) for n in changed)


def test_train_layers_beyond_the_backbone_is_refused() -> None:
    from sieveqa.models.cross_encoder import CrossEncoderConfig

    with pytest.raises(ConfigError, match=r"train_layers must be in 1\.\.\d+, got 99"):
        CrossEncoder(CrossEncoderConfig(backbone="tiny", max_length=64, train_layers=99))
    with pytest.raises(ConfigError, match="invalid train_layers=0"):
        CrossEncoderConfig(backbone="tiny", train_layers=0)


@pytest.mark.slow
def test_a_metric_the_dev_evaluation_does_not_give_is_one_line(tiny_model, tmp_path: Path) -> None:
    """A reader chosen by has_auc over a dev set without unanswerable questions was a KeyError."""
    from sieveqa.errors import ConfigError

    trainer = _trainer(tiny_model, tmp_path, epochs=1, metric="has_auc")
    trainer.evaluate = lambda model: {"em": 40.0, "f1": 50.0}
    with pytest.raises(
        ConfigError, match=r"^--metric has_auc: the dev evaluation gave none \(it gave em, f1\)$"
    ):
        trainer.train()


def _scores(model: CrossEncoder) -> torch.Tensor:
    from sieveqa.batching import collate

    pairs = make_pairs(_toy_examples())
    batch = collate(model.featurize(pairs.questions, pairs.texts), range(len(pairs)), 0)
    with torch.no_grad():
        return model.eval()(**batch)


def test_adamw_is_fused_on_a_cpu_and_steps_as_the_per_tensor_kernel(tiny_model, tmp_path: Path) -> None:
    trainer = _trainer(tiny_model, tmp_path, epochs=1)
    assert all(group["fused"] for group in trainer.optimizer.param_groups)
    torch.manual_seed(0)
    grads = [torch.randn_like(p) for p in tiny_model.parameters()]
    fused = [p.detach().clone().requires_grad_() for p in tiny_model.parameters()]
    per_tensor = [p.detach().clone().requires_grad_() for p in tiny_model.parameters()]
    optimizers = [
        torch.optim.AdamW(fused, lr=1e-3, weight_decay=0.01, fused=True),
        torch.optim.AdamW(per_tensor, lr=1e-3, weight_decay=0.01, foreach=False),
    ]
    for _ in range(3):
        for params, optimizer in zip((fused, per_tensor), optimizers, strict=True):
            for p, g in zip(params, grads, strict=True):
                p.grad = g.clone()
            optimizer.step()
    for x, y, start in zip(fused, per_tensor, tiny_model.parameters(), strict=True):
        torch.testing.assert_close(x, y, rtol=0, atol=1e-6)
        assert not torch.equal(x, start)


@pytest.mark.slow
@pytest.mark.parametrize("written_fused", [False, True])
def test_a_checkpoint_of_either_kernel_resumes_under_this_ones(
    tiny_model, tmp_path: Path, monkeypatch, written_fused: bool
) -> None:
    """Checkpoints written before the trainer fused AdamW continue fused (and the other way round)."""
    kernels = ("cpu",) if written_fused else ()
    monkeypatch.setattr("sieveqa.training.trainer.FUSED_DEVICES", kernels)
    whole = copy.deepcopy(tiny_model)
    _trainer(whole, tmp_path / "a", epochs=2, seed=3).train()
    _trainer(copy.deepcopy(tiny_model), tmp_path / "b", epochs=2, seed=3, stop_after=5).train()
    monkeypatch.setattr("sieveqa.training.trainer.FUSED_DEVICES", () if written_fused else ("cpu",))
    resumed = copy.deepcopy(tiny_model)
    trainer = _trainer(resumed, tmp_path / "b", epochs=2, seed=3)
    assert trainer.try_resume()
    assert all(bool(group["fused"]) is not written_fused for group in trainer.optimizer.param_groups)
    steps = [state["step"] for state in trainer.optimizer.state.values()]
    assert steps and all(s.dtype == torch.float32 and s.device.type == "cpu" and s.item() == 5 for s in steps)
    assert trainer.train().step == 12
    # Scores, not weights: a parameter whose gradient is rounding noise (a key bias, which the softmax
    # ignores) moves by Adam's full step either way the noise falls.
    torch.testing.assert_close(_scores(resumed), _scores(whole), rtol=0, atol=1e-4)
    assert not torch.allclose(_scores(resumed), _scores(tiny_model), atol=1e-2)


@pytest.mark.slow
def test_the_rows_a_run_holds_are_compact(tiny_model, tmp_path: Path) -> None:
    from array import array

    trainer = _trainer(tiny_model, tmp_path, epochs=1)
    features = trainer.data.features
    assert all(isinstance(r, array) for r in features.input_ids + features.token_type_ids)
    assert features.offsets is None
    assert trainer.train().step == 6


@pytest.mark.parametrize("fused", [True, None])
def test_a_loaded_step_count_is_hosted_as_the_kernel_wants(fused) -> None:
    """torch keeps a per-tensor checkpoint's step counts as saved: they come back float32 either way."""
    from sieveqa.training.trainer import _load_optimizer

    params = [torch.nn.Parameter(torch.ones(3))]
    written = torch.optim.AdamW(params, lr=0.1)
    params[0].grad = torch.ones(3)
    written.step()
    saved = written.state_dict()
    saved["state"][0]["step"] = saved["state"][0]["step"].double()
    loading = torch.optim.AdamW(params, lr=0.1, fused=fused)
    _load_optimizer(loading, saved)
    step = loading.state[params[0]]["step"]
    assert step.dtype == torch.float32 and step.device.type == "cpu" and step.item() == 1
    assert loading.param_groups[0]["fused"] is fused
    loading.step()  # and the kernel runs on it
    assert loading.state[params[0]]["step"].item() == 2


@pytest.mark.slow
def test_the_last_step_is_kept_where_dev_chose_an_earlier_one(tiny_model, tmp_path: Path) -> None:
    """TANDA's adapt step may start from the transfer's end whatever the target's dev preferred: the
    run keeps ``last/`` beside ``best/`` when they differ (and not when they are the same step)."""
    from safetensors.torch import load_file

    trainer = _trainer(tiny_model, tmp_path / "a", epochs=1, eval_every=2, metric="map")
    falling = iter([0.9, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05, 0.01])
    trainer.evaluate = lambda model: {"map": next(falling)}
    state = trainer.train()
    assert state.best_step == 2 and state.step > 2
    best, last = (load_file(tmp_path / "a" / d / "model.safetensors") for d in ("best", "last"))
    assert any(not torch.equal(best[k], last[k]) for k in best)  # trained on past the best
    saved = json.loads((tmp_path / "a" / "last" / "config.json").read_text())
    assert saved["training"]["step"] == state.step
    rising = iter([0.1 * i for i in range(1, 20)])
    again = _trainer(tiny_model, tmp_path / "b", epochs=1, eval_every=2, metric="map")
    again.evaluate = lambda model: {"map": next(rising)}
    again.train()
    assert (tmp_path / "b" / "best").is_dir() and not (tmp_path / "b" / "last").exists()


@pytest.mark.slow
def test_eval_at_start_reads_the_model_before_its_first_step(tiny_model, tmp_path: Path) -> None:
    """A student cut from a deeper model starts below it: --eval-at-start records where it started
    (step 0) before any step, and not again when the run resumes."""
    seen = []
    trainer = _trainer(tiny_model, tmp_path / "a", epochs=1, eval_at_start=True, metric="map")
    trainer.evaluate = lambda model: seen.append(trainer.state.step) or {"map": 0.5}
    trainer.train()
    log = json.loads((tmp_path / "a" / "train_log.json").read_text())
    assert seen[0] == 0 and log[0]["when"] == "start" and log[0]["step"] == 0
    assert [r["when"] for r in log].count("start") == 1


def test_low_rank_training_changes_only_the_factors_and_the_head(tiny_model, tmp_path: Path) -> None:
    start = _scores(tiny_model)
    assert tiny_model.train_low_rank(2) == 1.0
    torch.testing.assert_close(_scores(tiny_model), start)  # the change starts at zero
    before = {n: p.detach().clone() for n, p in tiny_model.named_parameters()}
    _trainer(tiny_model, tmp_path, epochs=2, checkpoint_every=3).train()
    changed = {n for n, p in tiny_model.named_parameters() if not torch.equal(p, before[n])}
    assert changed and all(n.endswith((".lr_a", ".lr_b")) or n.startswith("head") for n in changed)
    assert not torch.allclose(_scores(tiny_model), start, atol=1e-3)
    # The checkpoint holds what trains, not the frozen body; the saved model is its factors, exactly.
    stored = load_file(str(tmp_path / "checkpoint" / "model.safetensors"))
    params = dict(tiny_model.named_parameters())
    frozen = {n for n, p in params.items() if not p.requires_grad}
    assert frozen and set(stored) == set(tiny_model.state_dict()) - frozen
    folder = tiny_model.save_pretrained(tmp_path / "saved")
    assert json.loads((folder / "config.json").read_text())["low_rank"]["rank"] == 2
    torch.testing.assert_close(_scores(load_model(folder)), _scores(tiny_model), rtol=0, atol=1e-3)
    without = copy.deepcopy(tiny_model)  # a save that lost the factors would be seen at this tolerance
    with torch.no_grad():
        for name, p in without.named_parameters():
            if name.endswith(".lr_b"):
                p.zero_()
    assert not torch.allclose(_scores(without), _scores(tiny_model), atol=1e-3)


@pytest.mark.slow
def test_low_rank_training_resumes_as_an_uninterrupted_run(tiny_model, tmp_path: Path) -> None:
    settings = dict(epochs=2, checkpoint_every=4, seed=3)
    whole = copy.deepcopy(tiny_model)
    whole.train_low_rank(2)
    _trainer(whole, tmp_path / "a", **settings).train()
    paused = copy.deepcopy(tiny_model)
    paused.train_low_rank(2)
    _trainer(paused, tmp_path / "b", stop_after=5, **settings).train()
    resumed = copy.deepcopy(tiny_model)
    resumed.train_low_rank(2)
    assert _trainer(resumed, tmp_path / "b", **settings).train().step == 12
    _assert_same_weights(whole, resumed)
    # A start whose frozen weights differ is refused, not mixed in.
    other = copy.deepcopy(tiny_model)
    with torch.no_grad():
        other.encoder.backbone.encoder.layer[0].output.dense.bias.add_(0.1)  # frozen: not refactored
    other.train_low_rank(2)
    with pytest.raises(ConfigError, match="frozen are not those it started from"):
        _trainer(other, tmp_path / "b", **settings).try_resume()


def test_the_seed_draws_the_new_down_factors(tiny_model) -> None:
    """Every seed started from the same factors (seed 0 was fixed)."""

    def downs(seed: int) -> list[torch.Tensor]:
        model = copy.deepcopy(tiny_model)
        model.train_low_rank(2, seed)
        return [p.detach() for n, p in model.named_parameters() if n.endswith(".lr_b")]

    assert all(torch.equal(a, b) for a, b in zip(downs(3), downs(3), strict=True))
    assert not any(torch.equal(a, b) for a, b in zip(downs(3), downs(4), strict=True))


def test_a_model_stored_at_low_rank_continues_training_from_its_factors(tiny_model, tmp_path: Path) -> None:
    tiny_model.train_low_rank(2)
    _trainer(tiny_model, tmp_path / "a", epochs=1).train()
    loaded = load_model(tiny_model.save_pretrained(tmp_path / "saved"))  # merged: plain matrices
    assert loaded.train_low_rank(2) == pytest.approx(1.0, abs=1e-4)  # refactored: nothing cut
    torch.testing.assert_close(_scores(loaded), _scores(tiny_model), rtol=0, atol=1e-3)
    assert 0 < copy.deepcopy(load_model(tmp_path / "saved")).train_low_rank(1) < 0.99


def test_low_rank_keeps_train_layers_frozen_and_refuses_what_it_cannot_train(tmp_path: Path) -> None:
    """With --train-layers the lower layers got factors too, which the save then left out (the folder
    would not load); a second call stacked adapters; too high a rank froze the whole body in silence;
    an MHS student's branches would have trained whole (and its save crashed)."""
    from sieveqa.models.configs import MultiHeadConfig
    from sieveqa.models.cross_encoder import CrossEncoderConfig
    from sieveqa.models.multihead import MultiHeadStudent

    model = CrossEncoder(CrossEncoderConfig(backbone="tiny", max_length=64, train_layers=1))
    model.train_low_rank(2)
    top = f"encoder.backbone.encoder.layer.{len(model.encoder.layers) - 1}."
    factors = [n for n, _ in model.named_parameters() if n.endswith(".lr_a")]
    assert factors and all(n.startswith(top) for n in factors)
    _trainer(model, tmp_path / "run", epochs=1).train()
    torch.testing.assert_close(
        _scores(load_model(model.save_pretrained(tmp_path / "s"))), _scores(model), rtol=0, atol=1e-3
    )
    with pytest.raises(ConfigError, match="already trains at low rank"):
        model.train_low_rank(2)
    with pytest.raises(ConfigError, match=r"--low-rank 64: the body's matrices need a rank below"):
        CrossEncoder(CrossEncoderConfig(backbone="tiny", max_length=64)).train_low_rank(64)
    with pytest.raises(ConfigError, match="not available for a multihead model: it trains whole"):
        MultiHeadStudent(MultiHeadConfig(backbone="tiny", heads=2, head_depth=1)).train_low_rank(2)
    with pytest.raises(ConfigError, match="runs in int8 once saved"):
        model.configure(precision="int8").score_pairs(["q"], ["t"])
