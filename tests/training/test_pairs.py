"""The pairs a point-wise run or a retrofit trains on: labelled sampling, and unlabelled pairs."""

from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.training.pairs import every_pair


def _unlabelled(sizes: list[int]) -> list[RankingExample]:
    return [
        RankingExample(
            Question(f"q{i}", f"question {i}?"), [Candidate(str(j), f"text {i}.{j}") for j in range(n)]
        )
        for i, n in enumerate(sizes)
    ]


def test_every_pair_takes_each_candidate_or_a_sample_of_each_question() -> None:
    examples = _unlabelled([5, 2, 30])
    every = every_pair(examples)
    assert len(every) == 37 and set(every.labels) == {0}  # labels are never read: 0 in their place
    capped = every_pair(examples, per_question=3, seed=1)
    assert len(capped) == 3 + 2 + 3
    assert capped.ids == every_pair(examples, per_question=3, seed=1).ids  # the same seed, the same sample
    budget = every_pair(examples, max_pairs=6, seed=0, per_question=3)
    assert len({i.split("/")[0] for i in budget.ids}) == 2 and len(budget) in (5, 6)  # whole questions, <= 6
