"""EM and F1 with SQuAD's normalisation; expected calibration error."""

import pytest

from sieveqa.evaluation.extractive import exact_match, expected_calibration_error, f1_score


def test_exact_match_normalises_case_punctuation_and_articles() -> None:
    assert exact_match("the Eiffel Tower.", ["Eiffel tower"]) == 1.0
    assert exact_match("Eiffel", ["Eiffel tower", "Paris"]) == 0.0
    assert exact_match("", []) == 0.0


def test_f1_is_token_overlap_against_the_best_answer() -> None:
    assert f1_score("Eiffel", ["Eiffel tower"]) == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert f1_score("in Paris France", ["Paris", "Paris, France"]) == pytest.approx(0.8)
    assert f1_score("London", ["Paris"]) == 0.0


def test_ece_of_perfect_and_overconfident_probabilities() -> None:
    assert expected_calibration_error([0.0, 1.0, 1.0], [0, 1, 1]) == 0.0
    # all at 0.95 but only half right: gap 0.45
    assert expected_calibration_error([0.95] * 4, [1, 0, 1, 0]) == pytest.approx(0.45)
    with pytest.raises(ValueError):
        expected_calibration_error([0.5], [])
