"""Reader training: token targets from character spans, sampled rows, a loss that teaches."""

from pathlib import Path

import pytest
import torch

from sieveqa.data.open_qa import OpenExample, RetrievedPassage, write_open_jsonl
from sieveqa.errors import DataFormatError
from sieveqa.evaluation.odqa import evaluate_reader
from sieveqa.models.reader import ReaderConfig, ReaderModel
from sieveqa.training.config import TrainConfig
from sieveqa.training.reader import make_sample, token_targets
from sieveqa.training.recipes import train_model

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


def test_the_reader_learns_spans_at_every_exit(tmp_path: Path) -> None:
    examples = _examples(8)
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
    scores = evaluate_reader(after, examples, passages=2)
    assert scores["em"] == 100.0 and scores["f1"] == 100.0
    assert after.exits == [1, 2, 3, 4]


def test_training_without_any_answer_is_refused(tmp_path: Path) -> None:
    ex = OpenExample("q", "?", ["zzz"], [RetrievedPassage("a", "nothing here")])
    write_open_jsonl(tmp_path / "t.jsonl", [ex])
    with pytest.raises(DataFormatError, match="no retrieved passage holds a gold answer"):
        train_model("reader", str(tmp_path / "t.jsonl"), tmp_path / "o", init="tiny", dev=None)
