"""Cascade inference: the pruning loop, its cost, and the real, sequential and simulated rankers agreeing."""

import math

import pytest
import torch

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.models.base import flatten_pairs
from sieveqa.models.cross_encoder import CrossEncoder, CrossEncoderConfig
from sieveqa.runtime.cascade import CascadePolicy, CascadeRanker, SequentialRanker
from sieveqa.runtime.trace import (
    cascade_layer_units,
    groups_of,
    prune_loop,
    sequential_layer_units,
    simulate,
)

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def _examples(sizes: list[int]) -> list[RankingExample]:
    out = []
    for q, size in enumerate(sizes):
        cands = [
            Candidate(
                f"q{q}c{i}",
                " ".join(WORDS[(q + i + j) % len(WORDS)] for j in range(1 + (i * 7) % 11)),
                i % 3 == 0,
            )
            for i in range(size)
        ]
        out.append(RankingExample(Question(f"q{q}", f"question {q} about {WORDS[q % len(WORDS)]}?"), cands))
    return out


def test_prune_loop_drops_the_lowest_per_question_and_records_every_exit() -> None:
    # Two questions of 5; scores at exit i are fixed per row.
    table = torch.tensor(
        [
            [0.9, 0.8],
            [0.1, 0.0],
            [0.5, 0.4],
            [0.3, 0.2],
            [0.8, 0.9],
            [0.2, 0.1],
            [0.7, 0.6],
            [0.4, 0.3],
            [0.6, 0.5],
            [0.0, 0.0],
        ]
    )
    groups = torch.tensor([0] * 5 + [1] * 5)
    seen = []

    def stage(i: int, rows: torch.Tensor) -> torch.Tensor:
        seen.append(rows.tolist())
        return table[rows, i]

    trace = prune_loop(groups, 2, stage, drop_ratios=[0.4])
    assert seen == [list(range(10)), [0, 2, 4, 6, 7, 8]]
    assert trace.survivors == [10, 6]
    assert trace.last_exit.tolist() == [1, 0, 1, 0, 1, 0, 1, 1, 1, 0]
    assert math.isnan(trace.scores[1, 1].item()) and trace.scores[4, 1].item() == pytest.approx(0.9)
    # Survivors ranked by the last exit, then the dropped ones by the score they had when dropped.
    assert trace.orders() == [[4, 0, 2, 3, 1], [1, 3, 2, 0, 4]]
    assert trace.orders(exit_index=0) == [[0, 4, 2, 3, 1], [1, 3, 2, 0, 4]]


def test_thresholds_drop_rows_below_them() -> None:
    scores = torch.tensor([[0.9, 1.0], [0.1, 1.0], [0.5, 1.0]])
    trace = simulate(scores, torch.zeros(3, dtype=torch.long), thresholds=[0.4])
    assert trace.survivors == [3, 2] and trace.last_exit.tolist() == [1, 0, 1]
    with pytest.raises(ValueError, match="either drop_ratios or thresholds, not both"):
        simulate(scores, torch.zeros(3, dtype=torch.long))


def test_relative_cost_reproduces_the_papers_worked_example() -> None:
    # Section 4.3.2: 128 candidates, α = 0.3, exits after layers 4, 6, ..., 12 of a 12-layer model.
    # The paper's text says 44 then 31 (and 28 in its average) after 63; ⌊0.3·63⌋ = 18 gives 45, and
    # ⌊0.3·45⌋ = 13 gives 32: slips in the paper's arithmetic, not a different rule.
    trace = simulate(torch.rand(128, 5), torch.zeros(128, dtype=torch.long), [0.3] * 4)
    assert trace.survivors == [128, 90, 63, 45, 32]
    units = cascade_layer_units(trace.survivors, [4, 6, 8, 10, 12])
    assert units == 4 * 128 + 2 * (90 + 63 + 45 + 32)
    assert units / (128 * 12) == pytest.approx(0.632, abs=1e-3)  # the paper's −37%
    assert sequential_layer_units([128, 90], [4, 12]) == 4 * 128 + 12 * 90


@pytest.mark.parametrize("ratios", [0.0, 0.3, [0.5, 0.0, 0.4]])
def test_real_cascade_equals_the_simulation_from_unpruned_scores(tiny_cascade, ratios) -> None:
    examples = _examples([7, 1, 12, 5, 9])
    questions = [e.question.text for e in examples for _ in e.candidates]
    texts = [c.text for e in examples for c in e.candidates]
    groups = torch.tensor([q for q, e in enumerate(examples) for _ in e.candidates])
    full = tiny_cascade.exit_scores(questions, texts)
    ranker = CascadeRanker(tiny_cascade, ratios, batch_size=3, max_rows=15)
    result = ranker.run(examples)
    expected = simulate(full, groups, ranker.drop_ratios)
    assert result.trace.survivors == expected.survivors
    assert result.trace.orders() == expected.orders()
    reached = ~torch.isnan(expected.scores)
    assert torch.equal(~torch.isnan(result.trace.scores), reached)
    assert torch.allclose(result.trace.scores[reached], expected.scores[reached], atol=1e-5)
    assert result.cost.layer_units == cascade_layer_units(expected.survivors, tiny_cascade.exits)
    assert result.relative_cost == pytest.approx(result.cost.layer_units / (34 * 4))


def test_packing_and_mini_batch_size_do_not_change_the_ranking(tiny_cascade) -> None:
    examples = _examples([6, 11, 3, 8])
    a = CascadeRanker(tiny_cascade, 0.4, batch_size=64, max_rows=4096).rank_examples(examples)
    b = CascadeRanker(tiny_cascade, 0.4, batch_size=2, max_rows=1).rank_examples(examples)
    assert [[s.candidate.id for s in r] for r in a] == [[s.candidate.id for s in r] for r in b]
    assert all([s.rank for s in r] == list(range(1, len(r) + 1)) for r in a)


def test_the_policy_saved_beside_the_model_is_the_default(tiny_cascade, tmp_path) -> None:
    assert CascadeRanker(tiny_cascade).drop_ratios == [0.0, 0.0, 0.0]  # nothing saved: no pruning
    loaded = type(tiny_cascade).from_pretrained(tiny_cascade.save_pretrained(tmp_path / "c"))
    CascadePolicy(drop_ratios=(0.5,)).save_beside(loaded)
    assert CascadeRanker(loaded).drop_ratios == [0.5, 0.5, 0.5]
    assert CascadeRanker(loaded, 0.1).drop_ratios == [0.1, 0.1, 0.1]
    assert CascadeRanker(loaded, thresholds=[0, 1, 2]).thresholds == [0.0, 1.0, 2.0]


def test_sequential_ranker_reruns_each_model_on_what_the_last_kept(tiny_model) -> None:
    shallow = CrossEncoder(CrossEncoderConfig(backbone="tiny", max_length=64, num_layers=2))
    assert shallow.encoder.num_layers == 2
    examples = _examples([6, 10])
    questions = [e.question.text for e in examples for _ in e.candidates]
    texts = [c.text for e in examples for c in e.candidates]
    groups = torch.tensor([q for q, e in enumerate(examples) for _ in e.candidates])
    stacked = torch.stack(
        [torch.tensor(m.score_pairs(questions, texts)) for m in (shallow, tiny_model)], dim=1
    )
    ranker = SequentialRanker([shallow, tiny_model], drop_ratios=0.5)
    result = ranker.run(examples)
    expected = simulate(stacked, groups, [0.5])
    assert result.trace.survivors == [16, 8] and result.trace.orders() == expected.orders()
    assert result.cost.layer_units == 2 * 16 + 4 * 8
    with pytest.raises(ValueError, match="increasing depth"):
        SequentialRanker([tiny_model, shallow])


def test_real_cascade_with_thresholds_equals_the_simulation(tiny_cascade) -> None:
    examples = _examples([7, 12, 5])
    full = tiny_cascade.exit_scores(*flatten_pairs(examples))
    # Cuts halfway between two neighbouring scores: no score sits on a cut, where the last float
    # bits (which differ with batch padding) would decide its side.
    middle = len(full) // 2
    cuts = [float(full[:, i].sort().values[middle - 1 : middle + 1].mean()) for i in range(3)]
    result = CascadeRanker(tiny_cascade, thresholds=cuts, batch_size=4).run(examples)
    expected = simulate(full, groups_of(examples), thresholds=cuts)
    assert result.trace.survivors == expected.survivors and result.trace.orders() == expected.orders()
    with pytest.raises(ValueError, match="not both"):
        CascadeRanker(tiny_cascade, 0.3, thresholds=cuts)


def test_a_question_larger_than_max_rows_stays_whole(tiny_cascade) -> None:
    examples = _examples([3, 20, 4])
    full = tiny_cascade.exit_scores(*flatten_pairs(examples))
    result = CascadeRanker(tiny_cascade, 0.5, batch_size=4, max_rows=6).run(examples)
    expected = simulate(full, groups_of(examples), [0.5] * 3)
    # ⌊0.5·20⌋ = 10 of the big question go at the first exit, as if it had been alone.
    assert result.trace.survivors == expected.survivors == [27, 14, 7, 5]  # 20 → 10 → 5 → 3
    assert result.trace.orders() == expected.orders()


def test_questions_without_candidates_keep_their_place(tiny_cascade) -> None:
    examples = _examples([3, 0, 4, 0])
    ranker = CascadeRanker(tiny_cascade, 0.5, max_rows=3)
    ranked = ranker.rank_examples(examples)
    assert [len(r) for r in ranked] == [3, 0, 4, 0]
    assert [len(s) for s in ranker.score(examples)] == [3, 0, 4, 0]
    assert ranker.run([]).n_pairs == 0 and ranker.run([]).trace.survivors == [0, 0, 0, 0]


def test_scores_sort_like_the_cascade_ranking(tiny_cascade) -> None:
    examples = _examples([9, 6])
    ranker = CascadeRanker(tiny_cascade, 0.4)
    for ex, scores, ranked in zip(
        examples, ranker.score(examples), ranker.rank_examples(examples), strict=True
    ):
        by_score = sorted(range(len(scores)), key=lambda i: -scores[i])
        assert [ex.candidates[i].id for i in by_score] == [s.candidate.id for s in ranked]


def test_own_scores_are_each_candidates_last_exit_logit(tiny_cascade) -> None:
    """What a confidence calibrates: the cascade's sorting scores (exit index + sigmoid) squeezed every
    best answer into [3.99, 4), so its fitted confidence came out flat; its own scores are the logits."""
    examples = _examples([7, 12])
    questions = [e.question.text for e in examples for _ in e.candidates]
    texts = [c.text for e in examples for c in e.candidates]
    full = tiny_cascade.exit_scores(questions, texts)
    result = CascadeRanker(tiny_cascade, [0.3, 0.3, 0.3]).run(examples)
    own = [score for group in result.own_scores() for score in group]
    last = result.trace.last_exit.tolist()
    assert own == pytest.approx([full[r, e].item() for r, e in enumerate(last)], abs=1e-5)
    assert [len(g) for g in result.own_scores()] == [7, 12]


def test_a_cascade_reads_a_long_text_in_windows_and_keeps_its_best(tiny_cascade) -> None:
    """The cascade's runtime read only a passage's first max_length tokens; like a ranker it now reads
    a long text in windows (each a candidate at the exits) and keeps the one it ranks best."""
    long = " ".join(["filler words"] * 60) + " the answer is here."
    texts = [long, "short one", "another short one"]
    example = RankingExample(Question("q", "q?"), [Candidate(str(i), t) for i, t in enumerate(texts)])
    full = CascadeRanker(tiny_cascade, 0.0).run([example])  # nothing pruned: every window's last exit
    windowed, _ = tiny_cascade.score_matrix(["q?"] * 3, texts, windows=True)
    assert full.own_scores()[0] == pytest.approx(windowed[:, -1].tolist(), abs=1e-4)
    assert full.cost.sequences > 3 and full.trace.survivors[0] == 3  # windows read, texts counted
    pruned = CascadeRanker(tiny_cascade, 0.5).run([example])
    assert sorted(pruned.orders()[0]) == [0, 1, 2] and len(pruned.own_scores()[0]) == 3
    tiny_cascade.windows = False
    cut, _ = tiny_cascade.score_matrix(["q?"] * 3, texts)
    assert CascadeRanker(tiny_cascade, 0.0).run([example]).own_scores()[0] == pytest.approx(
        cut[:, -1].tolist(), abs=1e-4
    )


def test_a_setting_a_cascade_does_not_take_per_request_names_those_it_does(tiny_cascade) -> None:
    """It said 'CascadeRanker takes no per-request settings', where it takes alpha and budget."""
    from sieveqa.errors import ConfigError

    ranker = CascadeRanker(tiny_cascade, drop_ratios=0.0)
    with pytest.raises(ConfigError, match=r"^drop_ratios: CascadeRanker takes only alpha, budget per request "
                                          r"\(a request's drop ratios are its alpha\)$"):  # fmt: skip
        ranker.with_settings(drop_ratios=0.9)
    assert ranker.with_settings(alpha=0.5).drop_ratios != ranker.drop_ratios
