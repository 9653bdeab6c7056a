"""Unanswerable questions made from answerable ones: each kind's checks, and the SQuAD 2.0 file and
passage view they are written as."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sieveqa.data.squad import SquadArticle, SquadParagraph, SquadQuestion, read_squad
from sieveqa.data.unanswerable import _article_entities, made_questions, negate, perturb

TESLA = SquadArticle(
    "Nikola_Tesla",
    [
        SquadParagraph(
            "Nikola_Tesla_0",
            "In 1884 Tesla moved to New York City. He worked for Thomas Edison there.",
            [SquadQuestion("q1", "When did Tesla move to New York City?", ["1884"])],
        ),
        SquadParagraph(
            "Nikola_Tesla_1",
            "Later he lived in Colorado Springs, paid by Westinghouse. "
            "In 1899 he built a laboratory near Pikes Peak.",
            [SquadQuestion("q2", "Where did Tesla build a laboratory in 1899?", ["near Pikes Peak"])],
        ),
    ],
)


def test_a_swap_puts_in_an_entity_of_the_same_kind_the_paragraph_never_names() -> None:
    entities = _article_entities(TESLA)
    assert "Colorado Springs" in entities["name2"] and "1899" in entities["year"]
    rng = random.Random(0)
    q1 = TESLA.paragraphs[0].questions[0]
    for _ in range(10):
        made, kind = perturb(q1, TESLA.paragraphs[0], entities, rng)
        assert kind == "swap" and made != q1.question
        # What came in is absent from the paragraph (ignoring case); what went out was in it.
        new = [w for w in made.rstrip("?").split() if w not in q1.question.rstrip("?").split()]
        assert new and all(w.lower() not in TESLA.paragraphs[0].context.lower() for w in new)
    # A question whose entities the paragraph does not state cannot be swapped.
    loose = SquadQuestion("q3", "What did Edison think of Paris?", [])
    assert perturb(loose, TESLA.paragraphs[1], entities, rng) is None


def test_a_negation_goes_after_the_first_copula_only_inside_the_question() -> None:
    assert negate("Who was the first emperor of the Yuan?") == "Who was not the first emperor of the Yuan?"
    assert negate("Was Tesla rich?") is None  # a yes/no question: "not" would not change it
    assert negate("What did Tesla build?") is None
    assert negate("Which city is not in Spain?") is None


def test_every_made_question_names_its_kind_source_and_paragraph() -> None:
    made = list(made_questions([TESLA], seed=1))
    assert {m.source_qid for m in made} == {"q1", "q2"}
    for m in made:
        assert m.qid == f"{m.source_qid}~{m.kind}" and m.paragraph in {"Nikola_Tesla_0", "Nikola_Tesla_1"}
        if m.kind == "other":  # the question itself, of the paragraph that does not hold its answer
            source = {"q1": TESLA.paragraphs[0], "q2": TESLA.paragraphs[1]}[m.source_qid]
            assert m.paragraph != source.pid
    assert [m.qid for m in made] == [m.qid for m in made_questions([TESLA], seed=1)]  # reproducible


@pytest.mark.slow
def test_the_built_set_is_squad_2_and_a_passage_view(squad_train_slice: Path, tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    from sieveqa.data import squad_train_as2 as as2
    from sieveqa.data.jsonl import read_jsonl
    from sieveqa.data.unanswerable import SOURCE_FILE, build_squad_unanswerable

    manifest = build_squad_unanswerable(tmp_path / "out", max_articles=2, squad_path=squad_train_slice)
    assert sum(manifest["kinds"].values()) == manifest["files"][SOURCE_FILE]["questions"] > 100
    again = read_squad(tmp_path / "out" / SOURCE_FILE)
    questions = [q for a in again for p in a.paragraphs for q in p.questions]
    assert all(q.impossible and not q.answers for q in questions)
    view = read_jsonl(tmp_path / "out" / "train.jsonl.gz")
    assert len(view) == len(questions) and not any(ex.has_positive() for ex in view)
    own = {q.qid: p.pid for a in again for p in a.paragraphs for q in p.questions}
    assert all({c.passage_id.rsplit("#", 1)[0] for c in ex.candidates} == {own[ex.qid]} for ex in view)
    dev = set(as2.split_train_articles((a.title for a in read_squad(squad_train_slice)), 12)["dev"])
    assert not dev & {a.title for a in again}  # squad-train-as2's dev articles are left alone
    assert (
        build_squad_unanswerable(tmp_path / "out", max_articles=2, squad_path=squad_train_slice) == manifest
    )  # cached
    from sieveqa.data.unanswerable import unanswerable_open

    opened = unanswerable_open(tmp_path / "out")  # the reader's view: impossible, own passages
    assert [ex.qid for ex in opened] == [ex.qid for ex in view]
    assert all(ex.impossible and not ex.answers and ex.passages for ex in opened)
    texts = {ex.qid: " ".join(c.text for c in ex.candidates) for ex in view}
    assert all(" ".join(p.text for p in ex.passages) == texts[ex.qid] for ex in opened)
