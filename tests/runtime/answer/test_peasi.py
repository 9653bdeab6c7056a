"""PEASI's joint choice over passage and sentence scores, its second look, the signals its answers
carry, and the judge that gives the sentence methods a passage signal."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from sieveqa.data.corpus import IndexedPassage
from sieveqa.data.documents import Place
from sieveqa.encoder import Cost
from sieveqa.errors import BackboneError, ConfigError
from sieveqa.models.base import Ranker, RankResult
from sieveqa.models.easi import SentenceRead, SentenceReader
from sieveqa.runtime.answer.judge import judged, load_judge
from sieveqa.runtime.answer.method import ModelSettings
from sieveqa.runtime.answer.peasi import Peasi, PeasiOptions
from sieveqa.runtime.answer.sentence import Pointwise
from tests.fakes import TOP_PASSAGE, KeywordRanker


def _passage(pid: str, *sentences: str) -> IndexedPassage:
    spans, at = [], 0
    for s in sentences:
        spans.append((at, at + len(s)))
        at += len(s) + 1
    return IndexedPassage(pid, "doc", "", " ".join(sentences), tuple(spans))


class TableReranker(Ranker):
    """A passage reranker whose logits are given by passage text."""

    def __init__(self, logits: dict[str, float]) -> None:
        self.logits = logits

    def run(self, examples, progress=False) -> RankResult:
        scores = [[self.logits[c.text] for c in ex.candidates] for ex in examples]
        return RankResult(scores, Cost(sequences=sum(len(s) for s in scores)))

    def score_matrix(self, questions, texts, progress=False, last_only=False, windows=False):
        return torch.tensor([[self.logits[t]] for t in texts]), Cost(sequences=len(texts))


class TableSelector(SentenceReader):
    """EASI stand-in: each sentence's logit from a table."""

    def __init__(self, logits: dict[str, float]) -> None:
        self.logits = logits

    def read(self, questions, passages, progress=False):
        return SentenceRead(
            [[self.logits[s] for s in p] for p in passages], None, Cost(sequences=len(passages))
        )


# The best passage (logit 2) holds one sentence EASI finds only so-so among its two; the second
# (logit 1.5) holds a sentence EASI is sure of. Best passage first picks "x1"; jointly, "y1".
P1 = _passage("1", "x1 so-so", "x2 worse")
P2 = _passage("2", "y1 sure", "y2 no")
RERANKER = TableReranker({P1.text: 2.0, P2.text: 1.5})
SELECTOR = TableSelector({"x1 so-so": 1.0, "x2 worse": 0.8, "y1 sure": 5.0, "y2 no": -5.0})


def _peasi(**options) -> Peasi:
    opts = replace(TOP_PASSAGE, **options)
    look = KeywordRanker() if opts.second_look else None
    return Peasi(RERANKER, SELECTOR, options=opts, look=look)  # type: ignore[arg-type]


def test_read_1_is_the_papers_top_passage_and_reading_more_chooses_jointly() -> None:
    top = _peasi(read=1).run("q", [P1, P2], 1)
    assert top.answers[0].text == "x1 so-so" and top.inferences == 2 + 1
    joint = _peasi(read=2, sentence_weight=1.0).run("q", [P1, P2], 1)
    best = joint.answers[0]
    assert best.text == "y1 sure" and joint.inferences == 2 + 2
    in_passage = 5.0 - math.log(math.exp(5.0) + math.exp(-5.0))
    assert best.score == pytest.approx(1.5 + in_passage)
    assert best.signals == pytest.approx(
        {"passage": 1.5, "sentence": 5.0, "in_passage": in_passage, "margin": -0.5}
    )
    # A heavy sentence weight trusts EASI's softmax; a tiny one keeps the best passage first.
    assert _peasi(read=2, sentence_weight=0.01).run("q", [P1, P2], 1).answers[0].text == "x1 so-so"


def test_answers_are_one_per_passage_and_their_signals_are_named() -> None:
    method = _peasi(read=2)
    run = method.run("q", [P1, P2], 2)
    assert [a.passage.id for a in run.answers] == ["2", "1"] and run.ranking is None
    assert set(method.signals) == {"passage", "sentence", "in_passage", "margin"}
    assert all(set(a.signals) == set(method.signals) for a in run.answers)


def test_the_second_look_reorders_the_best_few_by_the_point_wise_ranker() -> None:
    # The keyword ranker scores a sentence by how often it says "answer": only the second look sees it.
    p1 = _passage("1", "plain text", "the answer answer")
    reranker = TableReranker({p1.text: 1.0})
    selector = TableSelector({"plain text": 2.0, "the answer answer": 0.0})
    opts = replace(TOP_PASSAGE, read=1, second_look=2, look_weight=3.0)
    method = Peasi(reranker, selector, options=opts, look=KeywordRanker())  # type: ignore[arg-type]
    run = method.run("q", [p1], 1)
    best = run.answers[0]
    assert best.text == "the answer answer" and best.signals["pointwise"] == 2.0
    assert "pointwise" in method.signals and run.inferences == 1 + 1 + 2
    plain = Peasi(reranker, selector, options=replace(TOP_PASSAGE, read=1))  # type: ignore[arg-type]
    assert plain.run("q", [p1], 1).answers[0].text == "plain text"


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="--read must be >= 1"):
        replace(TOP_PASSAGE, read=0)
    with pytest.raises(ConfigError, match="must be >= 0"):
        PeasiOptions(sentence_weight=-1)
    with pytest.raises(ConfigError, match="--second-look needs a point-wise ranker"):
        Peasi(RERANKER, SELECTOR, options=PeasiOptions(second_look=2))  # type: ignore[arg-type]


def test_the_judge_reads_the_best_answers_passage_once_and_the_others_when_asked() -> None:
    judge = TableReranker({P1.text: -3.0, P2.text: 4.0})
    run = Pointwise(KeywordRanker(), judge=judge).run("q", [P1, P2], 4)  # type: ignore[arg-type]
    best = run.answers[0].passage.text
    # Abstention reads the best answer's: one judge pass, shared by the answers from that passage.
    assert run.inferences == 4 + 1
    assert [a.signals.get("passage") if a.signals else None for a in run.answers] == [
        judge.logits[best] if a.passage.text == best else None for a in run.answers
    ]
    # Every answer's, on asking: only the passage not judged yet costs a pass.
    every = judged(judge, "q", run, "passage", every=True)
    logits = [judge.logits[a.passage.text] for a in run.answers]
    assert [a.signals["passage"] for a in every.answers] == logits
    assert every.inferences == 4 + 2
    assert judged(judge, "q", every, "passage", every=True).inferences == 4 + 2  # nothing left to judge
    plain = Pointwise(KeywordRanker()).run("q", [P1, P2], 1)
    assert plain.answers[0].signals is None and judged(None, "q", plain, "judge") is plain


def test_bm25_of_the_passage_can_tip_the_choice() -> None:
    # P1 out-scores P2 by 0.5 with the reranker, but only P2 shares the question's words.
    p1, p2 = _passage("1", "x1 so-so", "x2 worse"), _passage("2", "cats purr", "y2 no")
    reranker = TableReranker({p1.text: 2.0, p2.text: 1.5})
    selector = TableSelector({"x1 so-so": 1.0, "x2 worse": 1.0, "cats purr": 1.0, "y2 no": 1.0})
    plain = Peasi(reranker, selector, options=replace(TOP_PASSAGE, read=2))  # type: ignore[arg-type]
    assert plain.run("why do cats purr", [p1, p2], 1).answers[0].passage.id == "1"
    lexical = Peasi(reranker, selector, options=replace(TOP_PASSAGE, read=2, bm25_weight=1.0))  # type: ignore[arg-type]
    best = lexical.run("why do cats purr", [p1, p2], 1).answers[0]
    assert best.passage.id == "2" and best.score == pytest.approx(1.5 + math.log(0.5) + 1.0)


def test_peasis_judge_adds_its_own_signal_beside_the_rerankers() -> None:
    judge = TableReranker({P1.text: -3.0, P2.text: 4.0})
    method = Peasi(RERANKER, SELECTOR, options=replace(TOP_PASSAGE, read=2), judge=judge)  # type: ignore[arg-type]
    run = method.run("q", [P1, P2], 2)
    assert "judge" in method.signals
    best, other = run.answers
    assert best.passage.id == "2" and best.signals["judge"] == 4.0 and best.signals["passage"] == 1.5
    assert "judge" not in other.signals and other.signals["passage"] == 2.0  # the reranker's stays
    assert run.inferences == 2 + 2 + 1  # passages, EASI on two, the judge on the best answer's passage


def test_a_judge_whose_backbone_is_not_installed_says_how_to_go_on(judge_over_missing_mpnet) -> None:
    """The shipped judge's base (MPNet) is installed apart from the package: its absence is one line
    naming the judge, what to install and --judge none."""
    with pytest.raises(
        BackboneError, match=r"^--judge .*judge: backbone 'mpnet-12' is not available: .*--no-deps"
    ):
        load_judge(str(judge_over_missing_mpnet), ModelSettings(device="cpu", precision="fp32"))
    with pytest.raises(BackboneError, match=r"or --judge none \(answers then carry no confidence\)$"):
        load_judge(str(judge_over_missing_mpnet), ModelSettings(device="cpu", precision="fp32"))


def test_a_judge_that_is_not_there_is_named_as_the_judge(tmp_path) -> None:
    """A hostile probe: the line said "model '...' is neither ..." without naming --judge."""
    from sieveqa.errors import ModelFormatError

    with pytest.raises(ModelFormatError, match=r"^--judge: model '.*nothing' is neither a shipped model"):
        load_judge(str(tmp_path / "nothing"), ModelSettings(device="cpu", precision="fp32"))


def test_bm25_of_the_sentence_can_tip_the_choice_inside_a_passage() -> None:
    # EASI likes the first sentence a little more; only the second shares the question's words.
    p = _passage("1", "backups end in a tilde", "VERSION_CONTROL picks numbered backups")
    reranker = TableReranker({p.text: 1.0})
    selector = TableSelector({"backups end in a tilde": 1.2, "VERSION_CONTROL picks numbered backups": 1.0})
    plain = Peasi(reranker, selector, options=TOP_PASSAGE)  # type: ignore[arg-type]
    question = "which variable picks numbered backups"
    assert plain.candidates(question, [p])[0][0].sentence == 0
    lexical = Peasi(reranker, selector, options=replace(TOP_PASSAGE, sentence_bm25_weight=1.0))  # type: ignore[arg-type]
    assert lexical.candidates(question, [p])[0][0].sentence == 1


def test_the_heading_is_read_above_the_passage_by_the_reranker_only() -> None:
    p = IndexedPassage(
        "1", "ls.txt", "ls", "-a, --all: do not ignore entries", ((0, 32),), (Place(0, 32, "OPTIONS"),)
    )
    assert p.heading == "ls › OPTIONS"
    seen = Peasi(TableReranker({}), SELECTOR, options=replace(TOP_PASSAGE, heading=True))  # type: ignore[arg-type]
    assert seen._texts([p]) == ["ls › OPTIONS\n-a, --all: do not ignore entries"]
    assert _peasi()._texts([p]) == [p.text]


def test_a_budget_lightens_a_loaded_peasi_without_touching_it() -> None:
    judge = TableReranker({P1.text: -3.0, P2.text: 4.0})
    opts = replace(TOP_PASSAGE, read=2, second_look=2)
    full = Peasi(RERANKER, SELECTOR, options=opts, look=KeywordRanker(), judge=judge)  # type: ignore[arg-type]
    full.model_names = {"reranker": "r", "selector": "s", "second_look": "k", "judge": "j"}
    assert full.lightened() is full and full.lightened(read=2, judge="j") is full  # nothing moves
    light = full.lightened(read=1, second_look=0, judge="none")
    assert (light.options.read, light.options.second_look, light.look, light.judge) == (1, 0, None, None)
    assert light.model_names == {"reranker": "r", "selector": "s"} and "judge" not in light.signals
    run = light.run("q", [P1, P2], 1)
    assert run.inferences == 2 + 1 and "judge" not in run.answers[0].signals  # no look, no judge pass
    assert (full.options.read, full.look is not None, full.judge is judge) == (2, True, True)  # unchanged
    assert full.model_names["judge"] == "j"
    with pytest.raises(ConfigError, match=r"^--judge other: a budget only drops the loaded judge"):
        full.lightened(judge="other")
    with pytest.raises(ConfigError, match=r"^--second-look: the point-wise ranker .* was not loaded$"):
        light.lightened(second_look=3)
    with pytest.raises(ConfigError, match=r"^look_ranker: a budget cannot move these on --method peasi$"):
        full.lightened(look_ranker="other")
    plain = Pointwise(KeywordRanker(), judge=judge)  # type: ignore[arg-type]
    assert plain.lightened(judge="none").judge is None and plain.judge is judge
    bare = Pointwise(KeywordRanker())
    assert bare.lightened(judge="none") is bare  # nothing to drop


def test_a_question_in_the_text_is_not_its_own_answer() -> None:
    """An FAQ's "Is there C++ bindings ?" was chosen over the answer below it (own-files test, q076)."""
    faq = _passage("1", "Is there C++ bindings ?", "Yes, xmlwrapp wraps it.")
    reranker = TableReranker({faq.text: 2.0})
    selector = TableSelector({"Is there C++ bindings ?": 3.0, "Yes, xmlwrapp wraps it.": 1.0})
    for look in (0, 2):  # first by EASI, and after the second look re-sorts the best few
        opts = replace(TOP_PASSAGE, read=1, second_look=look)
        method = Peasi(reranker, selector, options=opts, look=KeywordRanker() if look else None)  # type: ignore[arg-type]
        assert method.run("Are there C++ bindings?", [faq], 1).answers[0].text == "Yes, xmlwrapp wraps it."
    only = _passage("2", "Why?")  # nothing else to give: the question is still the best guess
    selector.logits["Why?"] = 0.0
    reranker.logits[only.text] = 1.0
    assert Peasi(reranker, selector, options=replace(TOP_PASSAGE, read=1)).run("q", [only], 1).answers  # type: ignore[arg-type]
