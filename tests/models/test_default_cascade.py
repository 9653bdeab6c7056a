"""The shipped cascades: heads only over a shipped default, load in one line, tuned; the previous
default's cascade stays loadable over the previous default."""

from pathlib import Path

import pytest
import torch

from sieveqa.data.jsonl import read_jsonl
from sieveqa.models.base import flatten_pairs
from sieveqa.models.cascade import CascadeTransformer
from sieveqa.models.cross_encoder import CrossEncoder
from sieveqa.models.zoo import SHIPPED, load_model
from sieveqa.runtime.cascade import CascadePolicy, CascadeRanker
from sieveqa.runtime.policy import load_ranker

pytestmark = pytest.mark.real

NEW_RATIOS = (0.4, 0.5, 0.6, 0.6)


CASCADES = [
    ("default-cascade", "default", NEW_RATIOS),
    ("default-v1-cascade", "default-v1", (0.4, 0.6, 0.6, 0.6)),
    ("peasi-cascade", "peasi-pr", (0.1, 0.4, 0.4, 0.6)),  # tuned on SQuAD passages (issue 31)
]


@pytest.mark.parametrize(("name", "body", "ratios"), CASCADES)
def test_only_the_heads_are_shipped(name: str, body: str, ratios: tuple[float, ...]) -> None:
    weights = SHIPPED[name] / "model.safetensors"
    assert weights.stat().st_size < 5 * 1024 * 1024


# The default's cascade in the suite; the other two (the same code over other bodies) in make test-slow.
@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "body", "ratios"),
    [CASCADES[0], *(pytest.param(*c, marks=pytest.mark.slow) for c in CASCADES[1:])],
)
def test_loads_in_one_line_with_its_tuned_ratios_and_last_exit_equal_to_its_body(
    example_jsonl: Path, name: str, body: str, ratios: tuple[float, ...]
) -> None:
    cascade = load_model(name)
    assert isinstance(cascade, CascadeTransformer) and cascade.body_from == body
    policy = CascadePolicy.saved(cascade)
    assert policy is not None and policy.drop_ratios == ratios
    ranker = load_ranker(name, precision="fp32")
    assert isinstance(ranker, CascadeRanker) and ranker.drop_ratios == list(ratios)
    examples = read_jsonl(example_jsonl)
    default = CrossEncoder.from_pretrained(body)
    want = torch.tensor(default.score_pairs(*flatten_pairs(examples)))
    got = cascade.exit_scores(*flatten_pairs(examples))[:, -1]
    assert torch.allclose(got, want, atol=1e-4)
    # Unpruned it ranks as its body does (every answer first); with the saved ratios (tuned on
    # SQuAD-AS2's ~140 candidates per question) it spends less and still ranks every candidate.
    assert all(
        r[0].candidate.label == 1 for r in CascadeRanker(cascade, drop_ratios=0.0).rank_examples(examples)
    )
    run = CascadeRanker(cascade).run(examples)
    assert run.relative_cost < 0.8
    assert sorted(len(r) for r in CascadeRanker(cascade).rank_examples(examples)) == sorted(
        len(e.candidates) for e in examples
    )
