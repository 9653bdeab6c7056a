"""The corpus index: passages with offsets, BM25 and dense search, appends, and all-or-nothing writes."""

import json
from pathlib import Path

import numpy as np
import pytest

from sieveqa.data.corpus import CorpusIndex, CorpusOptions
from sieveqa.data.documents import Document
from sieveqa.errors import DataFormatError, StoreError

DOCS = [
    Document("bees", "Bees make honey. The queen lays eggs. Workers collect nectar.", "Honey bees"),
    Document("tea", "Green tea is not oxidised. Black tea is fully oxidised.", "Tea"),
    Document("ice", "Glaciers flow downhill. They carve U-shaped valleys.", "Glaciers"),
]


class WordEmbedder:
    """A deterministic bag-of-words 'embedder' (no model), normalised like the real one."""

    def __init__(self, name: str = "words") -> None:
        self.name = name

    def embed(self, texts, progress=False):
        vecs = np.zeros((len(texts), 64), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                vecs[i, sum(map(ord, word.strip(".,"))) % 64] += 1
        return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)

    def signature(self):
        return {"name": self.name, "fingerprint": "0" * 12}


def test_passages_keep_their_sentences_and_document(tmp_path: Path) -> None:
    index = CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=12))
    assert index.counts == {"documents": 3, "sentences": 7, "passages": 5}
    passages = index.passages([str(i) for i in range(1, 6)])
    assert [p.doc_id for p in passages] == ["bees", "bees", "tea", "tea", "ice"]
    assert passages[0].sentences == ["Bees make honey.", "The queen lays eggs."]
    assert passages[1].text == "Workers collect nectar." and passages[1].title == "Honey bees"
    for p in passages:
        assert all(p.text[a:b] for a, b in p.spans)


def test_bm25_finds_the_passage_and_the_title_counts(tmp_path: Path) -> None:
    index = CorpusIndex.build(DOCS, tmp_path / "idx")
    (best, _), *_ = index.search_many(["which tea is oxidised?"], 2)[0]
    assert index.passages([best])[0].doc_id == "tea"
    assert index.search_many(["glaciers"], 1)[0][0][0] == index.search_many(["valleys"], 1)[0][0][0]
    assert all(score == 0 for _, score in index.search_many(["zzzz unknown words"], 3)[0])


def test_word_chunks_instead_of_sentence_windows(tmp_path: Path) -> None:
    index = CorpusIndex.build(DOCS[:1], tmp_path / "idx", CorpusOptions(chunk_words=4, chunk_stride=2))
    passages = index.passages([str(i) for i in range(1, len(index) + 1)])
    assert passages[0].text == "Bees make honey. The"
    assert passages[0].sentences == ["Bees make honey.", "The"]  # sentences clipped to the chunk


def test_dense_and_hybrid_need_the_same_embedder(tmp_path: Path) -> None:
    index = CorpusIndex.build(DOCS, tmp_path / "idx", embedder=WordEmbedder())
    assert index.retrievers == ("bm25", "dense", "hybrid")
    for retriever in ("dense", "hybrid"):
        top = index.search_many(["black tea oxidised"], 1, retriever, WordEmbedder())[0][0][0]
        assert index.passages([top])[0].doc_id == "tea"
    with pytest.raises(StoreError, match="dense vectors come from another model"):
        index.search_many(["tea"], 1, "dense", WordEmbedder("other"))
    plain = CorpusIndex.build(DOCS, tmp_path / "plain")
    with pytest.raises(StoreError, match="built without dense vectors"):
        plain.search_many(["tea"], 1, "dense", WordEmbedder())


def gen_of(index: CorpusIndex) -> str:
    return CorpusIndex.open(index.path).manifest["generation"]


def test_append_adds_documents_and_keeps_vectors(tmp_path: Path) -> None:
    index = CorpusIndex.build(DOCS[:2], tmp_path / "idx", embedder=WordEmbedder())
    first_gen = index.manifest["generation"]
    index = index.append(DOCS[2:], WordEmbedder())
    assert index.counts["documents"] == 3 and index.manifest["generation"] != first_gen
    assert not (tmp_path / "idx" / first_gen).exists()
    top = index.search_many(["glaciers valleys"], 1, "dense", WordEmbedder())[0][0][0]
    assert index.passages([top])[0].doc_id == "ice"
    # The same document again is skipped (a command run twice adds nothing); another text is refused.
    assert index.append(DOCS[1:2], WordEmbedder()) is index and index.manifest["generation"] == gen_of(index)
    with pytest.raises(DataFormatError, match="document id 'tea' is already in the index with another text"):
        index.append([Document("tea", "Coffee is not tea.")], WordEmbedder())
    with pytest.raises(StoreError, match="append with the same --retriever"):
        index.append([Document("new", "New text.")])


def test_sync_replaces_changed_documents_and_removes_the_missing(tmp_path: Path) -> None:
    """A folder indexed again after an edit was refused whole (one edited file blocked every new one),
    and deleted or renamed files kept answering from the index."""
    index = CorpusIndex.build(DOCS, tmp_path / "idx", embedder=WordEmbedder())
    old_rows = {
        p for hits in index.search_many(["bees tea glaciers"], 10, "dense", WordEmbedder()) for p, _ in hits
    }
    kept = index.append(DOCS[:2], WordEmbedder())  # without sync: nothing removed, the missing counted
    assert kept is index and index.changes == {"added": 0, "replaced": 0, "removed": 0, "missing": 1}
    edited = Document("tea", "Green tea is steamed. Matcha is ground green tea.", "Tea")
    index = index.append(
        [DOCS[0], edited, Document("moss", "Moss grows on stones.")], WordEmbedder(), sync=True
    )
    assert index.changes == {"added": 1, "replaced": 1, "removed": 1, "missing": 0}
    assert index.counts["documents"] == 3
    hits = index.search_many(["matcha"], 5)[0]
    assert [index.passages([p])[0].doc_id for p, _ in hits] == ["tea"]
    assert index.search_many(["glaciers valleys"], 5)[0] == []  # the removed document is gone from BM25
    dense = index.search_many(["glaciers valleys"], 10, "dense", WordEmbedder())[0]
    assert {index.passages([p])[0].doc_id for p, _ in dense} == {"bees", "tea", "moss"}  # and from FAISS
    fresh = {p for p, _ in dense if index.passages([p])[0].doc_id in ("tea", "moss")}
    assert fresh and not fresh & old_rows  # a passage id a client kept never names another passage
    # Removing the last rows, then adding: the ids still are new ones.
    index = index.append(DOCS[:1], WordEmbedder(), sync=True)
    again = index.append([DOCS[0], Document("fern", "Ferns have fronds.")], WordEmbedder())
    fern = again.search_many(["fronds"], 1)[0][0][0]
    assert int(fern) > max(int(p) for p in old_rows | fresh)


def test_a_reader_keeps_its_generation_through_an_append_and_then_moves_on(tmp_path: Path) -> None:
    """A server's open index must survive ``index add`` by another process (it lost its database
    under it before), then pick up the new documents; the old generation goes once it is let go."""
    CorpusIndex.build(DOCS[:2], tmp_path / "idx")
    served = CorpusIndex.open(tmp_path / "idx")  # the server's reader
    old_gen = served.manifest["generation"]
    CorpusIndex.open(tmp_path / "idx").append(DOCS[2:])  # the writer, a separate opening
    assert (tmp_path / "idx" / old_gen).is_dir()  # kept: a reader holds it
    hits = served.search_many(["tea oxidised"], 1)[0]
    assert served.passages([hits[0][0]])[0].doc_id == "tea"
    fresh = served.latest()
    assert fresh is not served and fresh.counts["documents"] == 3
    assert fresh.latest() is fresh  # nothing changed since
    top = fresh.search_many(["glaciers valleys"], 1)[0][0][0]
    assert fresh.passages([top])[0].doc_id == "ice"
    served.close()
    assert not (tmp_path / "idx" / old_gen).exists()
    assert [p.name for p in (tmp_path / "idx").glob("gen-*")] == [fresh.manifest["generation"]]


def test_a_reader_keeps_a_removed_document_until_it_moves_on(tmp_path: Path) -> None:
    """A sync removes a document under a server that is reading it: its generation still holds it,
    the next one does not."""
    CorpusIndex.build(DOCS, tmp_path / "idx")
    served = CorpusIndex.open(tmp_path / "idx")
    ice = served.search_many(["glaciers valleys"], 1)[0][0][0]
    CorpusIndex.open(tmp_path / "idx").append(DOCS[:2], sync=True)  # the writer: "ice" removed
    assert served.passages([ice])[0].doc_id == "ice"  # the question under way reads what it found
    fresh = served.latest()
    assert fresh.counts["documents"] == 2 and fresh.search_many(["glaciers valleys"], 1)[0] == []
    served.close()


def test_an_answerer_moves_on_and_the_old_generation_goes(tmp_path: Path) -> None:
    """Moving to a new generation used to leave the old one on disk until the next append."""
    from sieveqa.runtime.answer.answerer import Answerer
    from sieveqa.runtime.answer.sentence import Pointwise
    from tests.fakes import KeywordRanker

    CorpusIndex.build(DOCS[:2], tmp_path / "idx")
    answerer = Answerer(Pointwise(KeywordRanker(), "none"), CorpusIndex.open(tmp_path / "idx"))
    old_gen = answerer.index.manifest["generation"]
    CorpusIndex.open(tmp_path / "idx").append(DOCS[2:])
    assert (tmp_path / "idx" / old_gen).is_dir()  # the answerer still holds it
    assert answerer.answer("glaciers valleys").best.passage.doc_id == "ice"
    assert not (tmp_path / "idx" / old_gen).exists()


def test_a_generation_removed_between_open_and_lock_is_not_leased(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease used to hold a deleted folder, and the open failed on its missing files."""
    import fcntl

    from sieveqa.io import ReadLease

    gen = tmp_path / "gen-00000"
    gen.mkdir()
    real = fcntl.flock

    def writer_wins(fd: int, op: int) -> None:  # the writer's sweep removes it in between
        gen.rmdir()
        real(fd, op)

    monkeypatch.setattr(fcntl, "flock", writer_wins)
    with pytest.raises(FileNotFoundError):
        ReadLease(gen)


def test_a_killed_build_leaves_no_index_and_a_rerun_completes(tmp_path: Path) -> None:
    class Dies(WordEmbedder):
        def embed(self, texts, progress=False):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        CorpusIndex.build(DOCS, tmp_path / "idx", embedder=Dies())
    with pytest.raises(StoreError, match="not a corpus index"):
        CorpusIndex.open(tmp_path / "idx")
    assert len(CorpusIndex.build(DOCS, tmp_path / "idx", embedder=WordEmbedder())) == 3


def test_a_killed_append_leaves_the_index_as_it_was(tmp_path: Path) -> None:
    class Dies(WordEmbedder):
        def embed(self, texts, progress=False):
            raise KeyboardInterrupt

    index = CorpusIndex.build(DOCS[:2], tmp_path / "idx", embedder=WordEmbedder())
    with pytest.raises(KeyboardInterrupt):
        index.append(DOCS[2:], Dies())
    again = CorpusIndex.open(tmp_path / "idx")
    assert again.counts["documents"] == 2 and again.manifest == index.manifest


def test_other_versions_damage_and_empty_corpora_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="the corpus is empty"):
        CorpusIndex.build([], tmp_path / "empty")
    with pytest.raises(DataFormatError, match="document id 'a' is repeated"):
        CorpusIndex.build([Document("a", "x."), Document("a", "y.")], tmp_path / "dup")
    index = CorpusIndex.build(DOCS, tmp_path / "idx")
    manifest = json.loads((index.path / "manifest.json").read_text())
    (index.path / "manifest.json").write_text(json.dumps({**manifest, "version": 99}))
    with pytest.raises(StoreError, match="index format version 99, this sieveqa reads 1"):
        CorpusIndex.open(index.path)
    (index.path / "manifest.json").write_text(json.dumps(manifest))
    db = index.path / manifest["generation"] / "corpus.sqlite"
    db.write_bytes(db.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(StoreError, match=r"corpus\.sqlite is damaged"):
        CorpusIndex.open(index.path)
    with pytest.raises(StoreError, match="already holds an index"):
        CorpusIndex.build(DOCS, index.path)


def test_documents_may_come_from_a_generator_and_what_is_no_document_is_named(tmp_path: Path) -> None:
    """Checking a generator consumed it ("the corpus is empty"); a dict, a string or a text of None
    failed deep inside with an AttributeError or TypeError."""
    index = CorpusIndex.build((d for d in DOCS), tmp_path / "idx")
    assert index.counts["documents"] == len(DOCS)
    assert index.append(d for d in [Document("new", "Moss grows on stones.")]).counts["documents"] == 4
    for bad, message in [
        (
            {"id": "a", "text": "x."},
            r"documents\[0\]: expected a sieveqa Document\(id=..., text=...\), got dict",
        ),
        ("just a text", r"documents\[0\]: expected a sieveqa Document.*got str"),
        (Document("a", None), r"documents\[0\]: text must be a string, got NoneType"),  # type: ignore[arg-type]
        (Document(7, "x."), r"documents\[0\]: id must be a string, got int"),  # type: ignore[arg-type]
    ]:
        with pytest.raises(DataFormatError, match=message):
            CorpusIndex.build([bad], tmp_path / "bad")  # type: ignore[list-item]


def test_a_document_without_sentence_breaks_is_cut_into_passages_within_the_limit(tmp_path: Path) -> None:
    from sieveqa.data.passages import count_tokens
    from sieveqa.data.sentences import SPLITTER_VERSION, split_sentences

    words = " ".join(f"w{i}" for i in range(3000))  # one "sentence" of ~15,000 characters
    docs = [Document("wall", words, "Wall"), *DOCS]
    index = CorpusIndex.build(docs, tmp_path / "idx", CorpusOptions(passage_tokens=64))
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert manifest["options"]["cut_sentences"] is True and manifest["splitter"] == SPLITTER_VERSION
    wall = [p for p in index.passages([str(i) for i in range(1, len(index) + 1)]) if p.doc_id == "wall"]
    assert len(wall) > 50 and max(count_tokens([p.text for p in wall])) <= 64
    assert " ".join(p.text for p in wall) == words
    whole = CorpusIndex.build(docs, tmp_path / "whole", CorpusOptions(passage_tokens=64, cut_sentences=False))
    # Without cutting, each of the splitter's pieces (at most 1,000 characters, from its 2,000-character
    # blocks) is a passage.
    assert len(whole) == len(index) - len(wall) + len(split_sentences(words)) == 3 + 23


def test_an_index_from_before_cut_sentences_keeps_long_sentences_whole(tmp_path: Path) -> None:
    CorpusIndex.build(DOCS, tmp_path / "idx")
    path = tmp_path / "idx" / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["options"]["cut_sentences"]
    path.write_text(json.dumps(manifest))
    assert CorpusIndex.open(tmp_path / "idx").options.cut_sentences is False


def test_an_index_from_before_cjk_splitting_is_said_and_rebuilt_by_an_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An index built before CJK runs were split found nothing for a Japanese question, and running
    `index corpus` again said "nothing to add" and left it so."""
    import re

    import sieveqa.retrieval.bm25 as bm25

    docs = [Document("fuji", "富士山の高さは3776メートルです。"), Document("en", "Mount Fuji is tall.")]
    monkeypatch.setattr(bm25, "split_words", re.compile(r"(?u)\b\w\w+\b").findall)  # the old splitter
    old = CorpusIndex.build(docs, tmp_path / "idx")
    monkeypatch.undo()
    old.close()
    index = CorpusIndex.open(tmp_path / "idx")
    assert index.search_many(["富士山の高さは？"], 1)[0] == []
    assert any(
        "built before Chinese, Japanese and Korean text was split" in r.getMessage() for r in caplog.records
    )
    index = index.append(docs)
    assert index.changes["rebuilt"] == 1 and index.counts["documents"] == 2
    assert index.passages([index.search_many(["富士山の高さは？"], 1)[0][0][0]])[0].doc_id == "fuji"
    assert index.append(docs) is index  # rebuilt once
