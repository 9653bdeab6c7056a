"""Property tests (hypothesis): the validators take arbitrary text and numbers and either accept them
or raise the library's own one-line errors, never anything else."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sieveqa.data.jsonl import iter_json_lines, parse_example
from sieveqa.errors import SieveQAError
from sieveqa.fields import typed
from sieveqa.runtime.answer.confidence import Confidence
from sieveqa.runtime.answer.reader_policy import ReaderPolicy
from sieveqa.runtime.answer.schedulers import Schedule
from sieveqa.training.config import TrainConfig

NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**30), 10**30))
JSON = st.recursive(
    st.none() | st.booleans() | NUMBERS.filter(lambda x: x == x) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FAST
@given(st.binary(max_size=200))
def test_any_bytes_as_a_jsonl_file_read_or_refused_by_line(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    try:
        for where, obj in iter_json_lines(path):
            assert where.startswith(f"{path}:")
            parse_example(obj, where)
    except SieveQAError as err:
        assert str(err).startswith(str(path))


@FAST
@given(st.dictionaries(st.sampled_from(["qid", "question", "candidates", "x"]), JSON, max_size=4))
def test_any_json_object_is_an_example_or_a_named_error(obj: dict) -> None:
    try:
        parse_example(obj, "f:1")
    except SieveQAError as err:
        assert str(err).startswith("f:1: ")


@FAST
@given(budget=NUMBERS, threshold=NUMBERS, m=st.integers(-5, 50), weight=NUMBERS)
def test_schedules_and_reader_policies_take_any_number_or_name_it(budget, threshold, m, weight) -> None:
    for build in (
        lambda: Schedule("skyline", budget=budget, threshold=threshold, m=m, has_weight=weight),
        lambda: ReaderPolicy(budget=budget, threshold=threshold, skyline_m=m, has_weight=weight),
    ):
        try:
            build()
        except SieveQAError as err:
            assert any(
                name in str(err)
                for name in ("budget", "threshold", "m ", "--m", "_m", "has-weight", "has_weight")
            )


@pytest.mark.slow
@FAST
@given(
    st.dictionaries(
        st.sampled_from(["epochs", "lr", "batch_size", "max_pairs", "precision"]), JSON, max_size=3
    )
)
def test_train_settings_from_a_file_are_checked_by_name(values: dict) -> None:
    try:
        TrainConfig(**typed(TrainConfig, values, "config.json"))
    except SieveQAError as err:
        assert "config.json: field" in str(err) or "invalid --" in str(err)


@FAST
@given(scale=st.floats(-1e6, 1e6), bias=st.floats(-1e6, 1e6), score=NUMBERS)
def test_a_confidence_is_a_probability_for_any_score(scale: float, bias: float, score: float) -> None:
    p = Confidence(scale, bias)(float(score))
    assert 0.0 <= p <= 1.0


def test_confidence_refuses_what_is_not_a_probability() -> None:
    with pytest.raises(SieveQAError, match="--min-confidence must be a probability"):
        Confidence(1.0, 0.0, min_confidence=1.5)
