"""PEASI's passage benchmarks: grouping sentences into passages and the labels passages get."""

from pathlib import Path

import pytest

from sieveqa.data.passage_sets import group_passages, to_passages, wikiqa_passages
from sieveqa.data.records import Candidate, Question, RankingExample
from sieveqa.data.registry import load_dataset


def _example() -> RankingExample:
    cands = [
        Candidate("a", "One.", 0, "p1", "d"),
        Candidate("b", "Two.", 1, "p1", "d"),
        Candidate("c", "Three.", 0, "p2", "d"),
    ]
    return RankingExample(Question("q", "?"), cands)


def test_sentences_group_into_passages_in_order() -> None:
    groups = group_passages(_example())
    assert [(pid, [c.id for c in sents]) for pid, sents in groups] == [("p1", ["a", "b"]), ("p2", ["c"])]
    (passages,) = to_passages([_example()])
    assert [(c.id, c.text, c.label) for c in passages.candidates] == [
        ("p1", "One. Two.", 1),
        ("p2", "Three.", 0),
    ]


def test_wikiqa_documents_become_passages_of_at_most_200_tokens(real_data: Path) -> None:
    examples = wikiqa_passages(load_dataset("wikiqa:dev")[:40], max_tokens=40)
    for ex in examples:
        ids = [int(c.id.rsplit("-", 1)[1]) for c in ex.candidates]
        assert ids == sorted(ids)  # document order
        assert all("#" in c.passage_id for c in ex.candidates)
    assert any(len(group_passages(ex)) > 1 for ex in examples)
    assert (
        load_dataset("wikiqa-passages:dev")[0]
        .candidates[0]
        .id.startswith(load_dataset("wikiqa:dev")[0].candidates[0].passage_id)
    )


@pytest.mark.slow  # on a fresh cache it builds SQuAD-AS2 and squad-passages in full (about a minute)
def test_squad_passages_label_passages_by_their_sentences(real_data: Path) -> None:
    sentences = load_dataset("squad-passages:dev-sentences")
    passages = load_dataset("squad-passages:dev")
    assert len(sentences) == len(passages) == 300
    for sent_ex, pass_ex in zip(sentences[:20], passages[:20], strict=True):
        positive = {c.passage_id for c in sent_ex.candidates if c.label == 1}
        assert {c.id for c in pass_ex.candidates if c.label == 1} == positive
        assert len(pass_ex.candidates) <= 20  # dev keeps only what BM25 retrieved
