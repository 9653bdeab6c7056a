"""Boundary precision and recall of a sentence splitter against a dataset's own sentences."""

from functools import partial
from pathlib import Path

import pytest

from sieveqa.data.sentences import sentence_spans
from sieveqa.evaluation.sentence_boundaries import boundary_scores, gold_sentences, stray_quote

DOCS = [
    ("The sky is blue.", "Grass is green.", "Snow is white!"),
    ("A photo of a cat", "Cats sleep a lot.", "They purr."),  # a caption, then sentences
]


def _every_sentence(docs):
    """A splitter that knows the gold sentences (found by position in the joined text)."""
    starts = {}
    for sentences in docs:
        text, at, spans = " ".join(sentences), 0, []
        for s in sentences:
            spans.append((at, at + len(s)))
            at += len(s) + 1
        starts[text] = spans
    return starts.__getitem__


def test_a_perfect_splitter_scores_100_and_none_at_all_scores_no_recall() -> None:
    perfect = boundary_scores(DOCS, _every_sentence(DOCS))
    assert (perfect.precision, perfect.recall, perfect.f1) == (100.0, 100.0, 100.0)
    assert perfect.boundaries == 4 and perfect.documents == 2 and perfect.wrong_documents == 0
    whole = boundary_scores(DOCS, lambda text: [(0, len(text))])
    assert (whole.precision, whole.recall, whole.f1, whole.wrong_documents) == (100.0, 0.0, 0.0, 2)
    assert whole.longest == len(" ".join(DOCS[0]))


def test_punctuated_only_leaves_out_boundaries_after_captions() -> None:
    scores = boundary_scores(DOCS, partial(sentence_spans, guard=True), punctuated_only=True)
    # pysbd cannot see the caption's end once joined by a space; that boundary is not counted.
    assert scores.boundaries == 3 and scores.recall == 100.0
    assert boundary_scores(DOCS, partial(sentence_spans, guard=True)).recall == 75.0


def test_a_stray_quote_lowers_pysbd_recall_and_not_the_guarded_one() -> None:
    # A stray quote merges everything up to the next quote mark: the last sentence holds two.
    docs = [
        (*(f"Sentence {i} of document {d} is here." for i in range(7)), 'The end is "near" now.')
        for d in range(20)
    ]
    hostile = stray_quote(docs, seed=1)
    assert all(sum(s.count('"') for s in doc) == 3 for doc in hostile)
    assert hostile == stray_quote(docs, seed=1)
    plain = boundary_scores(hostile, partial(sentence_spans, guard=False))
    guarded = boundary_scores(hostile, partial(sentence_spans, guard=True))
    assert guarded.recall == 100.0 and guarded.precision == 100.0
    assert plain.recall < 90.0


@pytest.mark.slow
def test_wikiqa_dev_boundaries_as_reported(real_data: Path) -> None:
    docs = gold_sentences("wikiqa:dev")
    assert len(docs) == 293
    scores = boundary_scores(docs, partial(sentence_spans, guard=True), punctuated_only=True)
    assert scores.f1 >= 98.5 and scores.longest <= 1000  # 99.0 in docs/RESULTS.md


def test_unknown_datasets_are_refused() -> None:
    with pytest.raises(ValueError, match="wikiqa:SPLIT or trecqa:SPLIT"):
        gold_sentences("squad:dev")


def test_trecqa_sentences_are_detokenized(real_data: Path) -> None:
    pytest.importorskip("nltk")
    docs = gold_sentences("trecqa:dev")
    text = " ".join(s for doc in docs for s in doc)
    assert len(docs) == 81
    assert "``" not in text and "-LRB-" not in text and " n't" not in text and " , " not in text
