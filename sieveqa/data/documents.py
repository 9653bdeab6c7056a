"""A document to index (:class:`Document`, its blocks' :class:`Place` s in its file), and the
document datasets: SQuAD v1.1 dev's paragraphs by SQuAD-AS2 article split, WikiQA's documents.
Files and folders are read by ``sieveqa.data.formats``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sieveqa.data.readers import read_wikiqa
from sieveqa.data.sentences import split_sentences
from sieveqa.data.squad import SquadParagraph, default_squad_path, read_squad
from sieveqa.paths import data_root

__all__ = ["Document", "Place", "squad_document", "squad_documents", "wikiqa_documents"]


@dataclass(frozen=True, slots=True)
class Place:
    """Where characters ``start:end`` of a document's text come from in its file: the section
    (heading path), page and first line, each where the format has one."""

    start: int
    end: int
    section: str = ""
    page: int | None = None
    line: int | None = None

    @property
    def label(self) -> str:
        """``page 3, § Options`` (or ``line 12``): what an answer says of its place in the file."""
        parts = [f"page {self.page}"] if self.page is not None else []
        if self.section:
            parts.append(f"§ {self.section}")
        if self.page is None and self.line is not None:
            parts.append(f"line {self.line}")
        return ", ".join(parts)


@dataclass(frozen=True, slots=True)
class Document:
    """A document: its id, title and text; ``sentences``, when given, are verbatim pieces of
    ``text`` in order (a file reader's or a dataset's own split), otherwise the text is split with
    pysbd; ``places``, from a file reader, say where each block of the text comes from."""

    id: str
    text: str
    title: str = ""
    sentences: tuple[str, ...] | None = None
    places: tuple[Place, ...] = ()


def squad_documents(split: str) -> list[Document]:
    """SQuAD v1.1 dev's paragraphs of a SQuAD-AS2 article split (``train``, ``dev``, ``test`` or
    ``all``), one document each."""
    from sieveqa.data.squad_as2 import split_articles

    articles = read_squad(default_squad_path())
    keep = None if split == "all" else set(split_articles(a.title for a in articles)[split])
    return [
        squad_document(par, article.title)
        for article in articles
        if keep is None or article.title in keep
        for par in article.paragraphs
    ]


def squad_document(paragraph: SquadParagraph, title: str) -> Document:
    """A SQuAD paragraph as a document, with SQuAD-AS2's sentences (pysbd's split alone, unguarded)
    so every dataset built from SQuAD keeps the sentences its published numbers were measured on."""
    sentences = tuple(split_sentences(paragraph.context, guard=False))
    return Document(paragraph.pid, paragraph.context, title.replace("_", " "), sentences)


def wikiqa_documents(split: str) -> list[Document]:
    """WikiQA's documents (``train``, ``dev``, ``test`` or ``all``), their sentences in order."""
    splits = ("train", "dev", "test") if split == "all" else (split,)
    sentences: dict[str, dict[int, str]] = {}
    titles: dict[str, str] = {}
    for name in splits:
        for ex in read_wikiqa(data_root() / "wikiqa" / f"WikiQA-{name}.tsv.gz"):
            for cand in ex.candidates:
                doc = str(cand.passage_id)
                titles[doc] = str(cand.doc_id)
                sentences.setdefault(doc, {})[int(cand.id.rsplit("-", 1)[1])] = cand.text
    out = []
    for doc, by_index in sentences.items():
        ordered = tuple(by_index[i] for i in sorted(by_index))
        out.append(Document(doc, " ".join(ordered), titles[doc], ordered))
    return out
