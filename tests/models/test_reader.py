"""The anytime reader: heads after every exit, span decoding by character offsets, windows, saving."""

from pathlib import Path

import pytest
import torch

from sieveqa.errors import ConfigError
from sieveqa.models.reader import ReaderConfig, ReaderModel, SpanGuess, combine, span_scores
from sieveqa.models.zoo import load_model

QUESTION = "What is the capital of France?"
LONG = "The capital of France is Paris, a city on the Seine river with many museums and old bridges."


@pytest.fixture(scope="module")
def reader() -> ReaderModel:
    torch.manual_seed(0)
    return ReaderModel(ReaderConfig(backbone="tiny", max_length=24, stride=4))


def test_span_scores_respect_the_band_and_the_passage() -> None:
    start = torch.tensor([[9.0, 0.0, 5.0, 0.0, 0.0]])
    end = torch.tensor([[9.0, 0.0, 0.0, 1.0, 6.0]])
    context = torch.tensor([[False, True, True, True, True]])  # token 0 is the question
    i, j, _ = span_scores(start, end, context, max_tokens=2)
    assert (int(i), int(j)) == (2, 3)  # (2, 4) is three tokens long
    i, j, score = span_scores(start, end, context, max_tokens=3)
    assert (int(i), int(j)) == (2, 4)
    expected = start[0, 1:].log_softmax(0)[1] + end[0, 1:].log_softmax(0)[3]
    assert float(score) == pytest.approx(float(expected), abs=1e-5)


def test_every_exit_reads_and_long_passages_are_windowed(reader: ReaderModel) -> None:
    assert reader.exits == [1, 2, 3, 4]
    features = reader.featurize([QUESTION], [LONG])
    assert len(features) > 1 and set(features.source) == {0}  # windows, not a cut
    (readings,), cost = reader.read([QUESTION], [[LONG, "Rome."]])
    assert len(readings) == 2 and all(len(r) == 4 for r in readings)
    assert cost.layer_units == 4 * (len(features) + 1)
    for guess in readings[0]:
        assert 0 <= guess.start < guess.end <= len(LONG)
    covered = " ".join(LONG[g.start : g.end] for g in readings[0])
    assert covered.strip()


def test_a_passage_combines_its_windows() -> None:
    a, b = SpanGuess(2.0, 0, 3, -5.0), SpanGuess(-1.0, 10, 12, -0.5)
    best = combine([a, b])
    assert (best.start, best.end, best.has_logit) == (10, 12, 2.0)


def test_temperatures_scale_only_the_has_answer_logit(reader: ReaderModel) -> None:
    (raw,), _ = reader.read([QUESTION], [[LONG]], calibrated=False)
    hot = ReaderModel(ReaderConfig(backbone="tiny", max_length=24, stride=4, temperatures=[2.0] * 4))
    hot.load_state_dict(reader.state_dict())
    (scaled,), _ = hot.eval().read([QUESTION], [[LONG]])
    for r, s in zip(raw[0], scaled[0], strict=True):
        assert s.has_logit == pytest.approx(r.has_logit / 2, abs=1e-5)
        assert (s.start, s.end, s.span) == (r.start, r.end, pytest.approx(r.span, abs=1e-5))


def test_saved_reader_loads_with_its_temperatures(reader: ReaderModel, tmp_path: Path) -> None:
    reader.config.temperatures = [1.5, 1.0, 0.8, 1.2]
    try:
        reader.save_pretrained(tmp_path / "r")
    finally:
        reader.config.temperatures = None
    loaded = load_model(tmp_path / "r")
    assert isinstance(loaded, ReaderModel) and loaded.temperature(0) == 1.5
    (a,), _ = loaded.read([QUESTION], [[LONG]], calibrated=False)
    (b,), _ = reader.read([QUESTION], [[LONG]], calibrated=False)
    assert [(g.start, g.end) for g in a[0]] == [(g.start, g.end) for g in b[0]]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"exits": [2, 1, 4]}, "exits"),
        ({"exits": [1, 2]}, "ending at 4"),
        ({"temperatures": [1.0]}, "temperatures"),
        ({"has_answer_pooling": "max"}, "has_answer_pooling"),
    ],
)
def test_bad_configs_are_refused(settings: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ReaderModel(ReaderConfig(backbone="tiny", **settings))


def test_a_reader_starts_from_a_ranker_body(tiny_model) -> None:
    reader = ReaderModel.start_from(tiny_model, ReaderConfig(max_length=32))
    for (name, a), b in zip(
        reader.encoder.state_dict().items(), tiny_model.encoder.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), name


def test_an_efficient_reader_keeps_the_first_layers_of_a_body(tiny_model) -> None:
    reader = ReaderModel.start_from(tiny_model, ReaderConfig(max_length=32, num_layers=2))
    assert reader.exits == [1, 2] and reader.encoder.num_layers == 2
    ours, theirs = reader.encoder.state_dict(), tiny_model.encoder.state_dict()
    assert all(torch.equal(v, theirs[k]) for k, v in ours.items())
