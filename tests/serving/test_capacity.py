"""What one /rerank request may hold: texts, and with long texts read in windows, their windows."""

from __future__ import annotations

from fastapi.testclient import TestClient

from sieveqa.serving import Limits, Service, create_app
from sieveqa.serving.capacity import full_length_rate, over_capacity, rows_of

QUERY = "who wrote hamlet?"


def test_a_short_text_is_one_input_and_a_long_one_about_one_a_window(tiny_model) -> None:
    """The estimate (four characters a token) against the windows the model really reads."""
    short, long = "shakespeare wrote it", "word " * 400
    assert rows_of(QUERY, [short, short], tiny_model) == 2
    estimated = rows_of(QUERY, [long], tiny_model)
    features = tiny_model.featurizer.pairs(
        [QUERY], [long], tiny_model.config.max_length, stride=tiny_model.config.max_length // 4
    )
    assert len(features.lengths) <= estimated <= 1.5 * len(features.lengths)  # on the safe side
    tiny_model.windows = False
    assert rows_of(QUERY, [long], tiny_model) == 1 and rows_of(QUERY, [long], None) == 1


def test_long_texts_are_refused_up_front_when_their_windows_would_run_past_the_deadline(tiny_model) -> None:
    """Read whole, 1,000 texts of 200 words are ~3,500 windows: refused at once, saying why and what
    to do, where 5 short ones pass; cut to their first tokens they count one each."""
    long = ["word " * 200] * 8
    assert over_capacity("texts", QUERY, ["a"] * 5, tiny_model, 5) is None
    assert "6 texts, more than the 5 allowed" in (
        over_capacity("texts", QUERY, ["a"] * 6, tiny_model, 5) or ""
    )
    why = over_capacity("texts", QUERY, long, tiny_model, 10) or ""
    assert why.startswith("texts: 8 texts read whole as about") and "--long-texts cut" in why
    service = Service(tiny_model, limits=Limits(max_texts=10, max_chars=5000))
    with TestClient(create_app(service)) as http:
        r = http.post("/rerank", json={"query": QUERY, "texts": long})
        assert r.status_code == 413 and "read whole as about" in r.json()["error"]
        tiny_model.windows = False
        assert http.post("/rerank", json={"query": QUERY, "texts": long}).status_code == 200


def test_the_rate_at_load_counts_the_windows_read(tiny_model, monkeypatch) -> None:
    """A full-length text is read in two windows: the rate is in inputs, the limit's unit."""
    from types import SimpleNamespace

    from sieveqa.serving import capacity

    clock = iter(range(1000))  # each reading of capacity's clock: one second later
    monkeypatch.setattr(capacity, "time", SimpleNamespace(perf_counter=lambda: float(next(clock))))
    assert full_length_rate(tiny_model, pairs=8) == 16.0
    tiny_model.windows = False
    assert full_length_rate(tiny_model, pairs=8) == 8.0
