"""Drop-ratio search: simulated configurations, their cost, the Pareto front, the choice and the plot."""

from pathlib import Path

import pytest
import torch

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.errors import ConfigError
from sieveqa.evaluation.cascade_search import (
    GridPoint,
    choose,
    evaluate_config,
    grid_search,
    pareto_front,
    plot_pareto,
)
from sieveqa.evaluation.metrics import evaluate_scores
from sieveqa.runtime.trace import simulate


def _two_questions() -> tuple[list[RankingExample], torch.Tensor]:
    labels = [[0, 1, 0, 0], [1, 0, 0, 0]]
    examples = [
        RankingExample(Question(f"q{q}", "?"), [Candidate(f"c{i}", "x", lab) for i, lab in enumerate(ls)])
        for q, ls in enumerate(labels)
    ]
    # Exit 0 likes the wrong candidates; exit 1 (the last) gets both questions right.
    scores = torch.tensor(
        [[0.9, 0.1], [0.1, 0.9], [0.5, 0.2], [0.6, 0.3], [0.8, 0.8], [0.9, 0.1], [0.7, 0.3], [0.1, 0.2]]
    )
    return examples, scores


def test_unpruned_point_is_the_last_exit_alone_and_pruning_can_lose_the_answer() -> None:
    examples, scores = _two_questions()
    full = evaluate_config(examples, scores, [2, 4], [0.0])
    direct = evaluate_scores(examples, [scores[:4, 1].tolist(), scores[4:, 1].tolist()]).mean
    assert full.metrics["map"] == pytest.approx(direct["map"]) and full.metrics["p@1"] == 1.0
    assert full.relative_cost == 1.0
    # α = 0.5 drops two per question at exit 0: question 0 loses its answer (c1, scored 0.1 there).
    pruned = evaluate_config(examples, scores, [2, 4], [0.5])
    assert pruned.relative_cost == pytest.approx((8 * 2 + 4 * 2) / (8 * 4))
    assert pruned.metrics["p@1"] == 0.5
    # The dropped answer still gets a rank: after the survivors c3 and c0 (in the last exit's
    # order), and after c2, which was dropped with it but scored higher (0.5 > 0.1) at exit 0.
    trace = simulate(scores, torch.tensor([0] * 4 + [1] * 4), [0.5])
    assert trace.orders()[0] == [3, 0, 2, 1]


def test_the_report_of_a_cascade_run_has_each_exit_alone_at_alpha_zero() -> None:
    from sieveqa.evaluation.report import evaluate_result
    from sieveqa.runtime.cascade import CascadePolicy, CascadeResult

    examples, scores = _two_questions()
    trace = simulate(scores, torch.tensor([0] * 4 + [1] * 4), [0.0])
    result = CascadeResult(
        [[0.0] * 4, [0.0] * 4], trace=trace, exits=[2, 4], full_depth=4, policy=CascadePolicy((0.0,))
    )
    _, report = evaluate_result(examples, result)
    first = evaluate_scores(examples, [scores[:4, 0].tolist(), scores[4:, 0].tolist()]).mean
    assert report["per_exit"]["L2"]["map"] == pytest.approx(round(first["map"], 4))
    assert report["per_exit"]["L4"]["p@1"] == 1.0
    assert report["exits"] == [2, 4] and report["survivors"] == [8, 8] and report["drop_ratios"] == [0.0]


def test_grid_search_covers_every_combination_plus_no_pruning() -> None:
    examples, scores = _two_questions()
    scores3 = torch.cat([scores[:, :1], scores], dim=1)
    points = grid_search(examples, scores3, [1, 2, 4], grid=(0.25, 0.5))
    assert len(points) == 1 + 2**2
    assert points[0].drop_ratios == (0.0, 0.0)
    assert {p.drop_ratios for p in points[1:]} == {(0.25, 0.25), (0.25, 0.5), (0.5, 0.25), (0.5, 0.5)}
    # Exits after layers 1, 2, 4; 8 rows in two questions of 4: α = 0.5 then 0.5 keeps 8 → 4 → 2.
    cost = {p.drop_ratios: p.relative_cost for p in points}
    assert cost[(0.5, 0.5)] == pytest.approx((8 * 1 + 4 * 1 + 2 * 2) / (8 * 4))
    assert cost[(0.25, 0.5)] == pytest.approx((8 * 1 + 6 * 1 + 4 * 2) / (8 * 4))
    with_zero = grid_search(examples, scores3, [1, 2, 4], grid=(0.0, 0.5))
    assert len(with_zero) == 4  # the unpruned point is not repeated


def _pt(ratios, cost, p1) -> GridPoint:
    return GridPoint(ratios, cost, {"p@1": p1, "map": p1})


def test_pareto_front_and_choice() -> None:
    points = [
        _pt((0.0,), 1.0, 0.80),
        _pt((0.1,), 0.9, 0.80),
        _pt((0.2,), 0.7, 0.79),
        _pt((0.3,), 0.7, 0.75),
        _pt((0.4,), 0.5, 0.70),
        _pt((0.5,), 0.6, 0.60),
    ]
    front = pareto_front(points, "p@1")
    assert [p.drop_ratios for p in front] == [(0.4,), (0.2,), (0.1,)]
    assert choose(points, "p@1", tolerance=0.01).drop_ratios == (0.2,)
    assert choose(points, "p@1", tolerance=0.0).drop_ratios == (0.1,)
    assert choose(points, "p@1", tolerance=0.2).drop_ratios == (0.4,)


def test_plot_writes_a_png(tmp_path: Path) -> None:
    points = [_pt((0.0,), 1.0, 0.8), _pt((0.3,), 0.6, 0.78), _pt((0.5,), 0.5, 0.7)]
    path = plot_pareto(points, tmp_path / "p.png", chosen=points[1], title="t")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_agreement_labels_mark_the_full_models_top_k() -> None:
    from sieveqa.evaluation.cascade_search import agreement_labels

    examples = [
        RankingExample(Question(f"q{n}", "?"), [Candidate(str(i), f"t{i}") for i in range(n)]) for n in (3, 2)
    ]  # unlabelled
    full = torch.tensor([0.1, 0.9, 0.5, -1.0, 2.0])
    top1 = agreement_labels(examples, full, 1)
    assert [[c.label for c in ex.candidates] for ex in top1] == [[0, 1, 0], [0, 1]]
    top2 = agreement_labels(examples, full, 2)
    assert [[c.label for c in ex.candidates] for ex in top2] == [[0, 1, 1], [1, 1]]
    with pytest.raises(ConfigError, match="--agreement must be >= 1"):
        agreement_labels(examples, full, 0)
