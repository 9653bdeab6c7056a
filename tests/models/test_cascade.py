"""The multi-exit model: exit placement, heads, forward depth, persistence, retrofit construction."""

import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from torch import nn

from sieveqa.batching import collate
from sieveqa.encoder import Cost
from sieveqa.errors import ModelFormatError
from sieveqa.models.cascade import CascadeConfig, CascadeTransformer, default_exits
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.heads import ClassifierHead

QUESTIONS = ["who wrote hamlet?"] * 3 + ["how tall is everest?"] * 2
TEXTS = [
    "Hamlet is a tragedy by William Shakespeare.",
    "It is set in Denmark.",
    "Shakespeare wrote it around 1600.",
    "Everest is 8,849 metres tall.",
    "It lies in the Himalayas on the border of Nepal and China.",
]


def _batch(model):
    features = model.featurize(QUESTIONS, TEXTS)
    return collate(features, list(range(len(features))), model.tokenizer.pad_token_id)


@pytest.mark.parametrize(
    ("depth", "exits"),
    [(12, [4, 6, 8, 10, 12]), (6, [2, 3, 4, 5, 6]), (4, [1, 2, 3, 4]), (1, [1]), (24, [8, 12, 16, 20, 24])],
)
def test_default_exits_follow_the_papers_rule(depth: int, exits: list[int]) -> None:
    assert default_exits(depth) == exits


def test_exit_head_is_the_papers_three_layer_tanh_network() -> None:
    head = ClassifierHead(hidden=8, layers=3, pooling="mean", dropout=0.1)
    linears = [m for m in head if isinstance(m, nn.Linear)]
    assert [(lin.in_features, lin.out_features) for lin in linears] == [(8, 8), (8, 8), (8, 1)]
    assert sum(isinstance(m, nn.Tanh) for m in head) == 2


def test_the_cross_encoder_head_and_the_exits_are_one_class(tiny_model, tiny_cascade) -> None:
    assert type(tiny_model.head) is type(tiny_cascade.heads[0]) is ClassifierHead
    # Parameter names are those saved before the head was shared: old folders keep loading.
    assert [n for n, _ in tiny_model.head.named_parameters()] == ["1.weight", "1.bias"]


def test_mean_head_ignores_padding_and_cls_head_reads_the_first_token() -> None:
    torch.manual_seed(0)
    hidden = torch.randn(1, 3, 8)
    padded = torch.cat([hidden, torch.randn(1, 2, 8) * 100], dim=1)
    mean_head = ClassifierHead(8, 3, "mean", 0.0).eval()
    cls_head = ClassifierHead(8, 1, "cls", 0.0).eval()
    assert torch.allclose(
        mean_head(hidden, torch.ones(1, 3)), mean_head(padded, torch.tensor([[1, 1, 1, 0, 0]]))
    )
    changed = hidden.clone()
    changed[0, 1:] += 5.0
    assert torch.equal(cls_head(hidden, torch.ones(1, 3)), cls_head(changed, torch.ones(1, 3)))


def test_forward_gives_one_logit_per_exit_and_stops_at_the_deepest_one_asked(tiny_cascade) -> None:
    model = tiny_cascade.eval()
    batch = _batch(model)
    cost = Cost()
    with torch.no_grad():
        every = model(**batch)
        second = model(**batch, exits=[1], cost=cost)
    assert every.shape == (5, 4)
    assert torch.allclose(second[:, 0], every[:, 1], atol=1e-6)
    # Exit index 1 sits after layer 2: layers 3 and 4 never ran.
    assert cost.per_layer == {("body", 0): 5, ("body", 1): 5}


def test_score_is_the_last_exit_without_pruning(tiny_cascade) -> None:
    from sieveqa.data.records import Candidate, Question, RankingExample

    model = tiny_cascade
    examples = [
        RankingExample(Question("q1", QUESTIONS[0]), [Candidate(f"c{i}", TEXTS[i], 0) for i in range(3)]),
        RankingExample(Question("q2", QUESTIONS[3]), [Candidate(f"c{i}", TEXTS[i], 0) for i in (3, 4)]),
    ]
    all_exits = model.exit_scores(QUESTIONS, TEXTS)
    flat = [s for scores in model.score(examples) for s in scores]
    assert torch.allclose(torch.tensor(flat), all_exits[:, -1], atol=1e-5)


def test_save_and_load_round_trip(tiny_cascade, tmp_path: Path) -> None:
    path = tiny_cascade.save_pretrained(tmp_path / "c")
    loaded = CascadeTransformer.from_pretrained(path)
    assert loaded.exits == [1, 2, 3, 4] and loaded.path == path
    before = tiny_cascade.exit_scores(QUESTIONS, TEXTS)
    after = loaded.exit_scores(QUESTIONS, TEXTS)
    assert torch.allclose(before, after, atol=5e-3)  # fp16 storage
    with pytest.raises(ModelFormatError, match="holds a 'cascade' model"):
        CrossEncoder.from_pretrained(path)


@pytest.mark.parametrize("exits", [[2, 1, 4], [0, 4], [1, 5], [2, 2, 4], [1, 2]])
def test_bad_exit_lists_are_refused(exits: list[int]) -> None:
    with pytest.raises(ValueError, match="exits must be increasing"):
        CascadeTransformer(CascadeConfig(backbone="tiny", exits=exits))


def test_from_cross_encoder_keeps_the_original_scores_at_the_last_exit(tiny_model) -> None:
    cascade = CascadeTransformer.from_cross_encoder(tiny_model, exits=[2, 4])
    assert cascade.config.final_pooling == "cls" and cascade.config.final_head_layers == 1
    original = torch.tensor(tiny_model.score_pairs(QUESTIONS, TEXTS))
    assert torch.allclose(cascade.exit_scores(QUESTIONS, TEXTS)[:, -1], original, atol=1e-6)
    with pytest.raises(ValueError, match="ending at 4"):
        CascadeTransformer.from_cross_encoder(tiny_model, exits=[1, 2])


def test_freeze_body_trains_only_the_new_heads_without_dropout_in_the_body(tiny_model) -> None:
    cascade = CascadeTransformer.from_cross_encoder(tiny_model)
    cascade.freeze_body()
    cascade.train()
    trainable = {
        n.split(".")[0] + "." + n.split(".")[1] for n, p in cascade.named_parameters() if p.requires_grad
    }
    assert trainable == {"heads.0", "heads.1", "heads.2"}
    assert not cascade.encoder.training and not cascade.heads[-1].training and cascade.heads[0].training


def test_config_given_is_not_changed(tiny_cascade) -> None:
    config = CascadeConfig(backbone="tiny")
    model = CascadeTransformer(config)
    assert config.exits is None and model.config.exits == [1, 2, 3, 4]


def test_exit_scores_of_nothing_has_one_column_per_exit(tiny_cascade) -> None:
    assert tiny_cascade.exit_scores([], []).shape == (0, 4)


def test_a_retrofit_over_a_saved_body_stores_only_its_heads(tiny_model, tmp_path: Path) -> None:
    base = tiny_model.save_pretrained(tmp_path / "base")
    cascade = CascadeTransformer.from_cross_encoder(CrossEncoder.from_pretrained(base), exits=[2, 4])
    cascade.share_body(base)
    path = cascade.save_pretrained(tmp_path / "heads")
    assert {k.split(".")[0] for k in load_file(path / "model.safetensors")} == {"heads"}
    loaded = CascadeTransformer.from_pretrained(path)
    assert loaded.body_from == str(base.resolve())
    before, after = cascade.exit_scores(QUESTIONS, TEXTS), loaded.exit_scores(QUESTIONS, TEXTS)
    assert torch.allclose(before, after, atol=5e-3)
    # A body that moved is stored whole; a base that changed later is refused by name.
    with torch.no_grad():
        next(cascade.encoder.parameters()).add_(1.0)
    whole = cascade.save_pretrained(tmp_path / "whole")
    assert any(k.startswith("encoder.") for k in load_file(whole / "model.safetensors"))
    assert "body_from" not in CascadeTransformer.from_pretrained(whole).meta
    tiny_model.save_pretrained(base)  # saved again unchanged: still loads
    CascadeTransformer.from_pretrained(path)
    with torch.no_grad():
        next(tiny_model.encoder.parameters()).add_(1.0)
    tiny_model.save_pretrained(base)
    with pytest.raises(ModelFormatError, match="has changed since it was saved"):
        CascadeTransformer.from_pretrained(path)
    shutil.rmtree(base)
    with pytest.raises(ModelFormatError, match="its body comes from"):
        CascadeTransformer.from_pretrained(path)
