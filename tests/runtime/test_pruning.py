import pytest
import torch

from sieveqa.errors import ConfigError
from sieveqa.runtime.pruning import cascade_order, drop_count, expected_cost, keep_top, ratio_for_budget


def test_drop_count_follows_the_papers_example() -> None:
    # Section 4.3.2: alpha = 0.3 and 128 candidates: 38 dropped, then 27 of the remaining 90.
    assert drop_count(128, 0.3) == 38
    assert drop_count(90, 0.3) == 27
    assert drop_count(100, 0.29) == 29  # 0.29 * 100 is 28.999999999999996 in floating point
    assert drop_count(1, 0.6) == 0
    assert drop_count(7, 0.0) == 0


@pytest.mark.parametrize("alpha", [-0.1, 1.0, 1.5])
def test_drop_count_rejects_bad_alpha(alpha: float) -> None:
    with pytest.raises(ValueError, match="alpha must be in"):
        drop_count(10, alpha)


def test_keep_top_prunes_each_question_separately() -> None:
    scores = torch.tensor([0.9, 0.1, 0.5, 0.3, 0.8, 0.2, 0.7, 0.4, 0.6, 0.0])
    groups = torch.tensor([0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    keep = keep_top(scores, groups, 0.4)  # ⌊0.4·5⌋ = 2 dropped per question
    assert keep.tolist() == [True, False, True, False, True, False, True, True, True, False]


def test_keep_top_breaks_ties_by_row_order() -> None:
    keep = keep_top(torch.tensor([1.0, 1.0, 1.0, 1.0]), torch.zeros(4, dtype=torch.long), 0.5)
    assert keep.tolist() == [True, True, False, False]


def test_keep_top_small_groups_keep_everything() -> None:
    keep = keep_top(torch.tensor([0.2, 0.1, 0.3]), torch.tensor([0, 1, 2]), 0.5)
    assert keep.all()


def test_cascade_order_puts_survivors_first_then_later_drops() -> None:
    # Candidate 0 dropped at exit 0, 1 and 2 survived to exit 2, 3 dropped at exit 1.
    order = cascade_order([0, 2, 2, 1], [9.0, 0.5, 0.7, -3.0])
    assert order == [2, 1, 3, 0]


def test_cascade_order_length_mismatch() -> None:
    with pytest.raises(ValueError, match="2 exits but 1 scores"):
        cascade_order([0, 1], [0.5])


def test_drop_ratio_checks() -> None:
    from sieveqa.errors import ConfigError
    from sieveqa.runtime.pruning import check_drop_ratios

    assert check_drop_ratios(0.3, 5) == [0.3] * 4
    assert check_drop_ratios([0.3], 5) == [0.3] * 4
    assert check_drop_ratios([0.5, 0.1, 0.0, 0.2], 5) == [0.5, 0.1, 0.0, 0.2]
    with pytest.raises(ConfigError, match="need 4 drop ratios"):
        check_drop_ratios([0.1, 0.2], 5)
    with pytest.raises(ConfigError, match=r"must be in \[0, 1\)"):
        check_drop_ratios([0.1, 1.0, 0.2, 0.2], 5)


def test_expected_cost_counts_the_layers_each_share_of_candidates_runs() -> None:
    assert expected_cost(0.0, [2, 4, 6]) == 1.0
    # 2 layers on all, 2 on half, 2 on a quarter: (2 + 1 + 0.5) / 6.
    assert expected_cost(0.5, [2, 4, 6]) == pytest.approx(3.5 / 6)


@pytest.mark.parametrize("budget", [1.0, 0.8, 0.6, 0.5, 0.4])
def test_ratio_for_budget_is_the_smallest_alpha_within_it(budget: float) -> None:
    exits = [2, 4, 6, 8]
    alpha = ratio_for_budget(budget, exits)
    assert expected_cost(alpha, exits) <= budget + 1e-9
    assert alpha == 0.0 or expected_cost(alpha - 1e-3, exits) > budget


def test_ratio_for_budget_refuses_what_no_ratio_reaches() -> None:
    with pytest.raises(ConfigError, match=r"below 0\.250"):
        ratio_for_budget(0.2, [2, 4, 6, 8])
    with pytest.raises(ConfigError, match=r"budget must be in \(0, 1\]"):
        ratio_for_budget(1.5, [2, 4])
