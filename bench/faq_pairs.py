"""Questions people asked about software, with the passages that answer them: every FAQ entry and
every question-titled section in this machine's documentation (/usr/share/doc), read with sieveqa's
own file readers, as a ranking set in the JSONL format (``jsonl:PATH`` for ``sieveqa train``).

    python bench/faq_pairs.py --out runs/faq/faq-all.jsonl

A question is a block of a document that ends in ``?`` (an FAQ's entry: ``9.3.3 Why does lsof ...?``,
``Q: ...?``) or a section titled by one; its answer is the text that follows it up to the next
question or section, cut to ``--words``. The candidates beside it are other answers of the same
document (the nearest by BM25 first: the hard negatives) and of other documents. The packages the
own-files benchmark (bench/own_docs) took its files from are left out entirely, so nothing it asks
about is learnt here: the benchmark's dev half is what judges a model trained on these.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tqdm.auto import tqdm

from sieveqa.data.documents import Document
from sieveqa.data.formats import FORMATS, Unreadable, read_file
from sieveqa.errors import DataFormatError
from sieveqa.retrieval.bm25 import BM25Index

ROOT = Path(__file__).resolve().parent
#: An entry's number or marker before its question (``9.3.3``, ``Q:``, ``1)``, ``Q.``).
_MARKER = re.compile(r"^(?:\d+(?:\.\d+)*\.?\)?|Q[.:]|Question:?|[-*•])\s+", re.IGNORECASE)
_SUFFIXES = {s for suffixes, _ in FORMATS.values() for s in suffixes if s and s != ".pdf"}


def benchmark_packages() -> set[str]:
    """The packages bench/own_docs/SOURCES.md names: their documentation is the benchmark's."""
    text = (ROOT / "own_docs" / "SOURCES.md").read_text(encoding="utf-8")
    return {m.group(1) for m in re.finditer(r"\| ([a-z0-9][a-z0-9.+-]*) \d[^|]*\|", text)}


def gather(doc_root: Path, into: Path, skip: set[str]) -> list[Path]:
    """The readable documentation files of every package not in ``skip``, decompressed into ``into``
    (a file without a suffix read as text)."""
    files = []
    for path in sorted(doc_root.rglob("*")):
        package = path.relative_to(doc_root).parts[0]
        if not path.is_file() or package in skip or path.name.lower().startswith(("copyright", "changelog")):
            continue
        name = path.name[:-3] if path.name.endswith(".gz") else path.name
        suffix = Path(name).suffix.lower()
        if suffix not in _SUFFIXES and not (suffix == "" or name.isupper() or "faq" in name.lower()):
            continue
        target = into / path.relative_to(doc_root).parent / (name if suffix in _SUFFIXES else name + ".txt")
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            opener = gzip.open if path.name.endswith(".gz") else open
            with opener(path, "rb") as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
        except OSError:
            continue
        files.append(target)
    return files


def entries(doc: Document, words: int) -> Iterator[tuple[str, str]]:
    """(question, answer) of each FAQ entry or question-titled section of ``doc``."""
    blocks = [(doc.text[p.start : p.end], p.section) for p in doc.places]
    i = 0
    while i < len(blocks):
        text, section = blocks[i]
        title = section.rsplit(" › ", 1)[-1]
        opens = text.endswith("?") and len(text) <= 300
        titled = title.endswith("?") and (i == 0 or blocks[i - 1][1] != section)
        if not (opens or titled):
            i += 1
            continue
        question = _MARKER.sub("", text if opens else title).strip()
        j, answer = (i + 1 if opens else i), []
        while j < len(blocks) and blocks[j][1] == section and not blocks[j][0].endswith("?"):
            answer.append(blocks[j][0])
            j += 1
        body = " ".join(" ".join(answer).split()[:words])
        if len(question.split()) >= 4 and len(body.split()) >= 8:
            yield question, body
        i = max(j, i + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--words", type=int, default=120, help="words of an answer kept")
    parser.add_argument("--negatives", type=int, default=7, help="candidates beside the answer")
    parser.add_argument("--out", type=Path, default=Path("runs/faq/faq-all.jsonl"))
    args = parser.parse_args()
    skip = benchmark_packages()
    pairs: list[tuple[str, str, str]] = []  # (document, question, answer)
    with tempfile.TemporaryDirectory() as tmp:
        for file in tqdm(gather(args.docs, Path(tmp), skip), desc="documents", unit="file"):
            try:
                doc = read_file(file, str(file.relative_to(tmp)))
            except (Unreadable, DataFormatError):  # a file no reader takes holds no pair
                continue
            seen: set[str] = set()
            for question, answer in entries(doc, args.words):
                if question.lower() not in seen:
                    seen.add(question.lower())
                    pairs.append((doc.id, question, answer))
    answers = [a for _, _, a in pairs]
    index = BM25Index.build([str(i) for i in range(len(answers))], answers)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_suffix(".partial")
    with open(partial, "w", encoding="utf-8") as out:
        for n, (doc_id, question, answer) in enumerate(pairs):
            hits = index.search(question, 30)
            near = [int(i) for i, _ in hits if int(i) != n and answers[int(i)] != answer]
            same = [i for i in near if pairs[i][0] == doc_id][: args.negatives // 2 + 1]
            others = [i for i in near if i not in same][: args.negatives - len(same)]
            candidates = [{"id": f"a{n}", "text": answer, "label": 1}] + [
                {"id": f"a{i}", "text": answers[i], "label": 0} for i in same + others
            ]
            row = {"qid": f"faq{n}", "question": question, "doc_id": doc_id, "candidates": candidates}
            out.write(json.dumps(row) + "\n")
    partial.replace(args.out)
    docs = {d for d, _, _ in pairs}
    print(f"{len(pairs)} questions from {len(docs)} documents ({len(skip)} packages left out): {args.out}")


if __name__ == "__main__":
    main()
