"""Cascade objectives (random exit, all exits, self-distillation) and the retrofit recipe."""

import json
from pathlib import Path

import pytest
import torch

from sieveqa.batching import collate
from sieveqa.data.jsonl import example_dict, write_jsonl
from sieveqa.models.cascade import CascadeTransformer
from sieveqa.training.cascade import retrofit_cascade
from sieveqa.training.config import TrainConfig
from sieveqa.training.objectives import CascadeBCE, ExitDistillation
from sieveqa.training.run import train_model
from tests.training.test_trainer import _toy_examples


def _batch(model) -> dict[str, torch.Tensor]:
    examples = _toy_examples(4)
    q = [e.question.text for e in examples for _ in e.candidates]
    t = [c.text for e in examples for c in e.candidates]
    batch = collate(model.featurize(q, t), list(range(len(q))), model.tokenizer.pad_token_id)
    batch["labels"] = torch.tensor([float(c.label) for e in examples for c in e.candidates])
    return batch


def _heads_with_grad(model) -> list[int]:
    return [
        i
        for i, h in enumerate(model.heads)
        if any(p.grad is not None and p.grad.abs().sum() > 0 for p in h.parameters())
    ]


@pytest.mark.slow
def test_random_exit_trains_one_exit_per_batch_uniformly(tiny_cascade) -> None:
    objective, batch = CascadeBCE(4, "random"), _batch(tiny_cascade)
    torch.manual_seed(0)
    chosen = []
    for _ in range(200):
        tiny_cascade.zero_grad()
        objective(tiny_cascade, batch).backward()
        heads = _heads_with_grad(tiny_cascade)
        assert len(heads) == 1
        chosen.append(heads[0])
        # The loss reaches the embeddings whatever the exit (section 4.3.1).
        assert tiny_cascade.encoder.backbone.embeddings.position_embeddings.weight.grad.abs().sum() > 0
    counts = [chosen.count(i) for i in range(4)]
    assert min(counts) > 30, counts  # 50 expected each


def test_all_exits_trains_every_head(tiny_cascade) -> None:
    tiny_cascade.zero_grad()
    CascadeBCE(4, "all")(tiny_cascade, _batch(tiny_cascade)).backward()
    assert _heads_with_grad(tiny_cascade) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="'random' or 'all'"):
        CascadeBCE(4, "first")


def test_self_distillation_leaves_body_and_last_head_alone(tiny_model) -> None:
    cascade = CascadeTransformer.from_cross_encoder(tiny_model)
    cascade.freeze_body()
    cascade.train()
    ExitDistillation("self")(cascade, _batch(cascade)).backward()
    assert _heads_with_grad(cascade) == [0, 1, 2]
    assert all(p.grad is None for p in cascade.encoder.parameters())


def _write_toy(tmp_path: Path) -> str:
    path = tmp_path / "toy.jsonl"
    write_jsonl(path, (example_dict(e) for e in _toy_examples()))
    return f"jsonl:{path}"


def test_retrofit_fits_new_exits_and_keeps_the_final_scores(tiny_model, tmp_path: Path) -> None:
    base = tiny_model.save_pretrained(tmp_path / "base")
    data = _write_toy(tmp_path)
    config = TrainConfig(progress=False, batch_size=8, lr=1e-2, epochs=3, metric="map@mean")
    state = retrofit_cascade(str(base), data, tmp_path / "retro", exits=[2, 4], dev=data, config=config)
    assert state.step == 9
    cascade = CascadeTransformer.from_pretrained(tmp_path / "retro" / "best")
    examples = _toy_examples()
    q = [e.question.text for e in examples for _ in e.candidates]
    t = [c.text for e in examples for c in e.candidates]
    original = type(tiny_model).from_pretrained(base)
    assert torch.allclose(
        cascade.exit_scores(q, t)[:, -1], torch.tensor(original.score_pairs(q, t)), atol=1e-4
    )
    log = json.loads((tmp_path / "retro" / "train_log.json").read_text())
    assert {"map@L2", "map@L4", "map@mean"} <= set(log[-1])


@pytest.mark.slow
def test_cascade_training_runs_through_the_one_trainer(tmp_path: Path) -> None:
    data = _write_toy(tmp_path)
    config = TrainConfig(progress=False, batch_size=8, lr=1e-3, epochs=1)
    train_model(
        "cascade",
        data,
        tmp_path / "ct",
        init="tiny",
        dev=data,
        config=config,
        settings={"max_length": 32, "exits": [2, 4]},
        options={"exit_sampling": "all"},
    )
    saved = json.loads((tmp_path / "ct" / "best" / "config.json").read_text())
    assert saved["sieveqa_model"] == "cascade" and saved["config"]["exits"] == [2, 4]
    assert saved["training"]["exit_sampling"] == "all"


@pytest.mark.slow
def test_a_retrofit_refuses_low_rank_rather_than_ignoring_it(tiny_model, tmp_path: Path) -> None:
    from sieveqa.errors import ConfigError

    base = tiny_model.save_pretrained(tmp_path / "base")
    config = TrainConfig(progress=False, low_rank=2)
    with pytest.raises(ConfigError, match="a retrofit trains exit heads only"):
        retrofit_cascade(str(base), _write_toy(tmp_path), tmp_path / "retro", exits=[2], config=config)


def test_a_foreign_reranker_is_retrofitted_from_unlabelled_pairs(tmp_path: Path) -> None:
    """Issue 45: exits over a Hugging Face ELECTRA from {"query", "text"} lines, no label anywhere;
    the cascade stores its heads only, reads the body from the user's folder, and runs pruned."""
    from sieveqa.models.zoo import load_model
    from sieveqa.runtime.cascade import CascadeRanker
    from tests.models.hf_tiny import tiny_hf_cross_encoder

    folder = tiny_hf_cross_encoder("electra", tmp_path / "mine")
    examples = _toy_examples()
    pairs = tmp_path / "traffic.jsonl"
    pairs.write_text(
        "".join(
            json.dumps({"query": e.question.text, "text": c.text}) + "\n"
            for e in examples
            for c in e.candidates
        )
    )
    config = TrainConfig(progress=False, batch_size=8, lr=1e-2, epochs=2)
    state = retrofit_cascade(
        str(folder), f"pairs:{pairs}", tmp_path / "retro", exits=[1, 2, 3], dev=None, config=config
    )
    assert state.step == 2 * -(-sum(len(e.candidates) for e in examples) // 8)
    cascade = load_model(tmp_path / "retro" / "best")
    assert isinstance(cascade, CascadeTransformer) and cascade.body_from == str(folder.resolve())
    assert cascade.config.final_head_activation == "gelu"  # ELECTRA's head, kept as the last exit
    q = [e.question.text for e in examples for _ in e.candidates]
    t = [c.text for e in examples for c in e.candidates]
    own = torch.tensor(load_model(folder).score_pairs(q, t))
    last = cascade.exit_scores(q, t)[:, -1]  # its own head, stored in fp16: within fp16's rounding
    assert (last - own).abs().max() < 2e-3 * own.abs().max()
    ranked = CascadeRanker(cascade, drop_ratios=0.5).rank_examples(examples)
    assert [len(r) for r in ranked] == [len(e.candidates) for e in examples]
