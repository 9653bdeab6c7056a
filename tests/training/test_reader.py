"""Reader training: token targets from character spans, sampled rows, a loss that teaches."""

import dataclasses
import itertools
from pathlib import Path

import pytest
import torch

from sieveqa.data.open_qa import OpenExample, RetrievedPassage, write_open_jsonl
from sieveqa.errors import DataFormatError
from sieveqa.evaluation.odqa import evaluate_reader
from sieveqa.models.reader import ReaderConfig, ReaderModel
from sieveqa.training.config import TrainConfig
from sieveqa.training.reader import make_sample, token_targets
from sieveqa.training.run import train_model

CITIES = [("Paris", "France"), ("Berlin", "Germany"), ("Rome", "Italy"), ("Madrid", "Spain")]


def _examples(n: int) -> list[OpenExample]:
    out = []
    for i in range(n):
        city, country = CITIES[i % 4]
        passages = [
            RetrievedPassage("a", f"The capital of {country} is {city}, a large city."),
            RetrievedPassage("b", "Bananas are yellow fruit that grow in warm places."),
            RetrievedPassage("c", "Cats sleep a lot."),
        ]
        out.append(OpenExample(f"q{i}", f"What is the capital of {country}?", [city], passages))
    return out


def test_token_targets_cover_the_answer_inside_the_window() -> None:
    segments = [-1, 0, 0, -1, 1, 1, 1, -1]
    offsets = [(0, 0), (0, 4), (5, 7), (0, 0), (0, 3), (4, 9), (9, 10), (0, 0)]
    assert token_targets(segments, offsets, [(4, 10)]) == ([5], [6])
    assert token_targets(segments, offsets, [(4, 20)]) == ([], [])  # ends beyond the window
    assert token_targets(segments, offsets, [(0, 3), (4, 9)]) == ([4, 5], [4, 5])


def test_sample_keeps_answers_and_caps_negatives() -> None:
    sample = make_sample(_examples(8), passages=3, max_negatives=1, max_rows=None, seed=0)
    assert len(sample) == 16 and sum(1 for s in sample.spans if s) == 8
    assert make_sample(_examples(8), passages=1, max_negatives=None, max_rows=5, seed=0).summary.startswith(
        "5 "
    )


def test_an_unanswerable_question_keeps_its_best_retrieved_passages() -> None:
    passages = [RetrievedPassage(str(k), f"Passage {k} about Paris.") for k in range(5)]
    impossible = OpenExample("u", "Who founded Paris in 1900?", [], passages, impossible=True)
    for seed in range(4):
        sample = make_sample([impossible], passages=5, max_negatives=2, max_rows=None, seed=seed)
        assert sample.texts == ["Passage 0 about Paris.", "Passage 1 about Paris."]
        assert sample.spans == [[], []]


def _unanswerable(n: int) -> list[OpenExample]:
    passages = [
        RetrievedPassage("b", "Bananas are yellow fruit that grow in warm places."),
        RetrievedPassage("c", "Cats sleep a lot."),
    ]
    return [OpenExample(f"u{c}", f"What is the capital of {c}?", [], passages, True) for c in "XY"[:n]]


@pytest.mark.slow
def test_the_reader_learns_spans_at_every_exit(tmp_path: Path) -> None:
    examples = _examples(8) + _unanswerable(2)
    write_open_jsonl(tmp_path / "train.jsonl", examples)
    torch.manual_seed(0)
    before = ReaderModel(ReaderConfig(backbone="tiny", max_length=32))
    train_model(
        "reader",
        str(tmp_path / "train.jsonl"),
        tmp_path / "out",
        init="tiny",
        dev=None,
        config=TrainConfig(epochs=25, batch_size=8, lr=3e-3, warmup_ratio=0.0, progress=False, seed=3),
        settings={"max_length": 32},
        options={"passages": 2},
    )
    after = ReaderModel.from_pretrained(tmp_path / "out" / "best")
    assert evaluate_reader(before, examples, passages=2)["em"] < 100
    scores = evaluate_reader(after, examples, passages=2)  # EM of the answerable ones
    assert scores["em"] == 100.0 and scores["f1"] == 100.0
    assert scores["has_auc"] == 1.0  # and it learned which questions its passages do not answer
    assert "has_auc" not in evaluate_reader(after, examples[:8], passages=2)
    assert after.exits == [1, 2, 3, 4]


def test_a_bucketed_training_batch_teaches_as_the_exact_one() -> None:
    from sieveqa.batching import bucket_width
    from sieveqa.training.reader import ReaderLoss, ReaderRecipe

    torch.manual_seed(0)
    model = ReaderModel(ReaderConfig(backbone="tiny", max_length=40, has_answer_pooling="mean")).eval()
    sample = make_sample(_examples(4) + _unanswerable(1), passages=3, max_negatives=2, max_rows=None, seed=0)
    data = ReaderRecipe().tensors(model, sample)
    assert data.features.max_length == 40
    rows = list(range(len(data)))
    batch = data.batch(rows)
    longest = max(data.lengths)
    assert batch["input_ids"].shape[1] == bucket_width(longest, 40) > longest  # padded up to its bucket
    exact = {k: v[:, :longest] for k, v in batch.items()}  # the same rows, padded to the longest only
    assert exact["starts"].any() and not batch["starts"][:, longest:].any()
    loss = ReaderLoss(exit_distill=0.5)
    assert torch.allclose(loss(model, batch), loss(model, exact), atol=1e-5)


def test_rows_built_a_chunk_at_a_time_are_the_rows_built_at_once(monkeypatch) -> None:
    from array import array

    from sieveqa.training.reader import ReaderRecipe

    model = ReaderModel(ReaderConfig(backbone="tiny", max_length=18, stride=4))
    sample = make_sample(_examples(5) + _unanswerable(2), passages=3, max_negatives=2, max_rows=None, seed=0)
    whole = ReaderRecipe().tensors(model, sample)
    monkeypatch.setattr("sieveqa.training.reader.TOKENIZE_CHUNK", 2)
    chunked = ReaderRecipe().tensors(model, sample)
    assert len(whole) > len(sample) and any(whole.starts)  # passages spanning windows; answers found
    assert (chunked.starts, chunked.ends) == (whole.starts, whole.ends)
    assert chunked.features.source == whole.features.source
    assert chunked.features.offsets is None and isinstance(chunked.features.input_ids[0], array)
    rows = list(range(len(whole)))
    for name, tensor in whole.batch(rows).items():
        assert torch.equal(chunked.batch(rows)[name], tensor), name
    with pytest.raises(DataFormatError, match="no training examples"):
        ReaderRecipe().tensors(model, make_sample([], passages=3, max_negatives=2, max_rows=None, seed=0))


def test_training_without_any_answer_is_refused(tmp_path: Path) -> None:
    ex = OpenExample("q", "?", ["zzz"], [RetrievedPassage("a", "nothing here")])
    write_open_jsonl(tmp_path / "t.jsonl", [ex])
    with pytest.raises(DataFormatError, match="no retrieved passage holds a gold answer"):
        train_model("reader", str(tmp_path / "t.jsonl"), tmp_path / "o", init="tiny", dev=None)


class FixedOutputs(torch.nn.Module):
    """A 'model' that returns given (has, start, end) logits: exits × rows (× tokens)."""

    def __init__(self, has: torch.Tensor, start: torch.Tensor, end: torch.Tensor) -> None:
        super().__init__()
        self.outputs = (has, start, end)

    def forward(self, **_: torch.Tensor):
        return self.outputs


def _batch(rows: int = 3, width: int = 6) -> dict[str, torch.Tensor]:
    segments = torch.tensor([[0, 0, 1, 1, 1, 1]] * rows)
    starts = torch.zeros(rows, width, dtype=torch.bool)
    ends = torch.zeros(rows, width, dtype=torch.bool)
    starts[0, 2], ends[0, 3] = True, True  # row 0 has an answer; the others none
    zeros = torch.zeros(rows, width, dtype=torch.long)
    return {"input_ids": zeros, "attention_mask": zeros + 1, "token_type_ids": zeros, "segment_ids": segments,
            "starts": starts, "ends": ends}  # fmt: skip


def _outputs(exits: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(exits, 3, generator=g),
        torch.randn(exits, 3, 6, generator=g),
        torch.randn(exits, 3, 6, generator=g),
    )


def test_the_default_loss_is_the_mean_over_exits_as_before() -> None:
    from torch.nn.functional import binary_cross_entropy_with_logits

    from sieveqa.models.reader import NEG
    from sieveqa.training.reader import ReaderLoss

    has, start, end = _outputs(3)
    batch = _batch()
    context = batch["segment_ids"] == 1
    expected = binary_cross_entropy_with_logits(has, torch.tensor([1.0, 0, 0]).expand_as(has))
    for logits, target in ((start, batch["starts"]), (end, batch["ends"])):
        masked = logits[:, :1].masked_fill(~context[:1], NEG)  # row 0, the one with an answer
        expected = (
            expected
            + (masked.logsumexp(-1) - masked.masked_fill(~target[:1], float("-inf")).logsumexp(-1)).mean()
        )
    assert torch.allclose(ReaderLoss()(FixedOutputs(has, start, end), batch), expected)


def test_early_exits_can_weigh_more() -> None:
    from sieveqa.training.reader import ReaderLoss, exit_weights

    assert torch.allclose(exit_weights(3, 3.0), torch.tensor([3.0, 2.0, 1.0]) / 6)
    assert torch.allclose(exit_weights(1, 3.0), torch.ones(1))
    has, start, end = _outputs(2, seed=1)
    batch = _batch()
    per_exit = [
        ReaderLoss()(FixedOutputs(has[i : i + 1], start[i : i + 1], end[i : i + 1]), batch) for i in range(2)
    ]
    weighted = ReaderLoss(early_weight=3.0)(FixedOutputs(has, start, end), batch)
    assert torch.allclose(weighted, 0.75 * per_exit[0] + 0.25 * per_exit[1])


def test_distillation_pulls_early_exits_towards_the_last_and_leaves_the_last_alone() -> None:
    from sieveqa.training.reader import ReaderLoss

    batch = _batch()
    has, start, end = _outputs(1, seed=2)
    same = [t.repeat(2, *([1] * (t.dim() - 1))) for t in (has, start, end)]  # two identical exits
    plain = ReaderLoss()(FixedOutputs(*same), batch)
    extra = ReaderLoss(exit_distill=1.0)(FixedOutputs(*same), batch) - plain
    # Identical exits: the KL terms vanish; the has-answer BCE against the teacher's own probability
    # is its entropy, the floor of that term.
    teacher = torch.sigmoid(has[0])
    entropy = -(teacher * teacher.log() + (1 - teacher) * (1 - teacher).log()).mean()
    assert torch.allclose(extra, entropy, atol=1e-5)
    has, start, end = (t.clone().requires_grad_() for t in _outputs(2, seed=3))
    ReaderLoss(exit_distill=1.0)(FixedOutputs(has, start, end), batch).backward()
    has2, start2, end2 = (t.detach().clone().requires_grad_() for t in (has, start, end))
    ReaderLoss()(FixedOutputs(has2, start2, end2), batch).backward()
    assert torch.allclose(start.grad[-1], start2.grad[-1])  # the teacher gets no gradient from distillation
    assert not torch.allclose(start.grad[0], start2.grad[0])


@pytest.mark.slow
def test_a_paused_reader_run_resumes_when_passages_span_several_windows(tmp_path: Path) -> None:
    # A passage longer than the window becomes several training rows: the checkpoint must compare
    # passages with passages (before tokenizing) and rows with rows, not one with the other.
    long = " ".join(f"Filler sentence number {i} says little." for i in range(12))
    examples = [
        OpenExample(e.qid, e.question, e.answers, [RetrievedPassage("x", long), *e.passages])
        for e in _examples(4)
    ]
    write_open_jsonl(tmp_path / "train.jsonl", examples)
    run = {
        "init": "tiny",
        "dev": None,
        "settings": {"max_length": 32},
        "options": {"passages": 3},
    }
    config = TrainConfig(epochs=2, batch_size=4, progress=False, seed=1, checkpoint_every=1)
    paused = train_model(
        "reader",
        str(tmp_path / "train.jsonl"),
        tmp_path / "out",
        config=dataclasses.replace(config, stop_after=1),
        **run,
    )
    assert paused.paused and paused.step == 1
    done = train_model("reader", str(tmp_path / "train.jsonl"), tmp_path / "out", config=config, **run)
    assert not done.paused and done.step > 1


def test_a_saved_reader_continues_with_wider_windows_and_keeps_its_weights(tmp_path: Path) -> None:
    """``train --init READER --max-length 64 --stride 24``: the windows change, the weights do not; a
    stride the windows cannot take, or one for a model whose config has no stride, is refused."""
    from sieveqa.errors import ConfigError
    from sieveqa.models.cross_encoder import CrossEncoder, CrossEncoderConfig
    from sieveqa.training.run import init_model

    torch.manual_seed(4)
    ReaderModel(ReaderConfig(backbone="tiny", max_length=32)).save_pretrained(tmp_path / "reader")
    wider = init_model(str(tmp_path / "reader"), "reader", {"max_length": 64, "stride": 24})
    assert isinstance(wider, ReaderModel)
    assert (wider.config.max_length, wider.config.stride) == (64, 24)
    saved = ReaderModel.from_pretrained(tmp_path / "reader").state_dict()
    assert all(torch.equal(w, saved[k]) for k, w in wider.state_dict().items())
    features = wider.featurize(["Which city?"], [" ".join(f"w{i}" for i in range(100))])
    assert len(features) > 1 and max(len(ids) for ids in features.input_ids) <= 64
    passage = [
        [t for t, s in zip(ids, segs, strict=True) if s == 1]
        for ids, segs in zip(features.input_ids, features.segment_ids, strict=True)
    ]
    assert all(a[-24:] == b[:24] for a, b in itertools.pairwise(passage))  # windows share the stride
    with pytest.raises(ConfigError, match="stride must be in"):
        init_model(str(tmp_path / "reader"), "reader", {"stride": 40})
    CrossEncoder(CrossEncoderConfig(backbone="tiny")).save_pretrained(tmp_path / "ranker")
    with pytest.raises(ConfigError, match="--stride cannot change a saved model's architecture"):
        init_model(str(tmp_path / "ranker"), "cross-encoder", {"stride": 24})
