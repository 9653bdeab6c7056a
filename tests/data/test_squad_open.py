"""SQuAD-Open-mini: 100-word chunks with a 50-word stride, BM25's top 30, has-answer labels."""

from pathlib import Path

import pytest

from sieveqa.data.squad import read_squad
from sieveqa.data.squad_open import _retrieve


@pytest.mark.slow
def test_two_articles_give_chunks_retrieved_per_question(squad_path: Path) -> None:
    articles = read_squad(squad_path)[:2]
    examples = _retrieve(articles, top_k=30)
    assert len(examples) == sum(a.n_questions for a in articles)
    paragraphs = {p.pid: p.context for a in articles for p in a.paragraphs}
    for ex in examples[:50]:
        assert len(ex.passages) == 30
        assert len({p.id for p in ex.passages}) == 30
        for p in ex.passages:
            pid, _, n = p.id.rpartition("#")
            assert p.text in paragraphs[pid] and int(n) >= 0
            assert len(p.text.split()) <= 100
            assert p.title in {a.title.replace("_", " ") for a in articles}
    # Most questions find a chunk with their answer, mostly at the top (SQuAD shares words).
    firsts = [ex.first_hit() for ex in examples]
    assert sum(f is not None for f in firsts) / len(firsts) > 0.9
    assert sum(f == 1 for f in firsts) / len(firsts) > 0.5


def test_chunks_overlap_by_half(squad_path: Path) -> None:
    (article,) = read_squad(squad_path)[:1]
    long = max(article.paragraphs, key=lambda p: len(p.context.split()))
    examples = _retrieve([article], top_k=300)
    chunks = sorted(
        {p.id: p.text for ex in examples for p in ex.passages if p.id.startswith(long.pid + "#")}.items(),
        key=lambda kv: int(kv[0].rpartition("#")[2]),
    )
    assert len(chunks) >= 2
    first, second = chunks[0][1].split(), chunks[1][1].split()
    assert first[50:] == second[: len(first) - 50]


OPEN_TRAIN_SLICE = {"max_articles": 2, "dev_articles": 1, "dev_size": 20, "top_k": 2}


@pytest.mark.slow
def test_squad_open_train_slice_gives_every_question_its_gold_chunk(squad_train_slice, tmp_path) -> None:
    from sieveqa.data.open_qa import read_open_jsonl
    from sieveqa.data.squad_open import build_squad_open_train

    manifest = build_squad_open_train(
        tmp_path / "a", progress=False, squad_path=squad_train_slice, **OPEN_TRAIN_SLICE
    )
    train = read_open_jsonl(tmp_path / "a" / "train.jsonl.gz")
    assert manifest["files"]["train.jsonl.gz"]["questions"] == len(train) > 100
    assert all(2 <= len(ex.passages) <= 3 for ex in train)  # top 2, the gold chunk appended if missed
    with_gold = sum(any(ex.has_answer()) for ex in train)
    assert with_gold / len(train) > 0.98  # every answer found verbatim in its own paragraph, nearly
    assert any(not all(ex.has_answer()) for ex in train)  # answerless chunks of the same articles
    dev = read_open_jsonl(tmp_path / "a" / "dev.jsonl.gz")
    assert len(dev) == 20 and len({len(ex.passages) for ex in dev}) == 1  # BM25's top only, no gold


@pytest.mark.slow  # two builds of a slice: about 10 s
def test_squad_open_train_rebuilds_byte_identical(squad_train_slice, tmp_path) -> None:
    from sieveqa.data.squad_open import build_squad_open_train

    first = build_squad_open_train(
        tmp_path / "a", progress=False, squad_path=squad_train_slice, **OPEN_TRAIN_SLICE
    )
    again = build_squad_open_train(
        tmp_path / "b", progress=False, squad_path=squad_train_slice, **OPEN_TRAIN_SLICE
    )
    assert {k: v["sha256"] for k, v in again["files"].items()} == {
        k: v["sha256"] for k, v in first["files"].items()
    }


@pytest.mark.slow
def test_squad_gold_gives_every_dev_question_its_own_paragraph(squad_path: Path) -> None:
    from sieveqa.data.open_qa import answer_spans
    from sieveqa.data.registry import load_open_dataset

    every = load_open_dataset("squad-gold:dev-all")
    held_out = load_open_dataset("squad-gold:test-all")
    assert (len(every), len(held_out)) == (10_570, 2_085)  # SQuAD v1.1 dev; SQuAD-AS2's 9 test articles
    assert {ex.qid for ex in held_out} < {ex.qid for ex in every}
    assert all(len(ex.passages) == 1 and answer_spans(ex.passages[0].text, ex.answers) for ex in every)
    with pytest.raises(Exception, match="squad-gold has no split 'dev0'"):
        load_open_dataset("squad-gold:dev0")
