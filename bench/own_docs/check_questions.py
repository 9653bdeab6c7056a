#!/usr/bin/env python3
"""Sanity-check questions.jsonl against files/ without using sieveqa.

For every answerable question, each answer string must occur in the text of
its file (case-insensitive, whitespace collapsed, typographic quotes and
hyphens folded, words split by a hyphenated line break re-joined).  Text is
taken from the file itself and from an independent rendering:
  text      the file as is
  markdown  the file as is, and pandoc -t plain
  html      pandoc -t plain
  pdf       pdftotext
  docx      pandoc -t plain
For unanswerable questions it only checks that "file" exists.
Also checks ids, formats, splits and prints counts by format and split.

Needs pandoc and pdftotext (poppler-utils).  Usage:
  python3 bench/own_docs/check_questions.py [questions.jsonl]
"""

import collections
import json
import pathlib
import re
import subprocess
import sys
import unicodedata

HERE = pathlib.Path(__file__).resolve().parent
FILES = HERE / "files"
FORMATS = ("text", "markdown", "html", "pdf", "docx")


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True).stdout.decode("utf-8", "replace")


def renderings(path: pathlib.Path):
    fmt = path.parent.name
    if fmt == "text":
        return [path.read_text(encoding="utf-8", errors="replace")]
    if fmt == "markdown":
        return [
            path.read_text(encoding="utf-8", errors="replace"),
            run("pandoc", "-f", "gfm", "-t", "plain", "--wrap=none", str(path)),
        ]
    if fmt == "html":
        return [run("pandoc", "-f", "html", "-t", "plain", "--wrap=none", str(path))]
    if fmt == "pdf":
        return [run("pdftotext", "-enc", "UTF-8", str(path), "-")]
    if fmt == "docx":
        return [run("pandoc", "-t", "plain", "--wrap=none", str(path))]
    raise ValueError(path)


FOLD = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2212": "-",
        "\u00a0": " ",
        "\u00ad": "",
    }
)


def norm(s: str, dehyphenate: bool) -> str:
    s = unicodedata.normalize("NFKC", s).translate(FOLD)
    if dehyphenate:
        s = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", s)
    return re.sub(r"\s+", " ", s).casefold()


def main():
    qpath = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "questions.jsonl"
    rows = [json.loads(line) for line in qpath.read_text(encoding="utf-8").splitlines() if line.strip()]
    cache, bad, ids = {}, 0, set()
    counts = collections.Counter()
    for r in rows:
        assert set(r) == {"id", "question", "answers", "file", "format", "split"}, r
        assert r["id"] not in ids, r["id"]
        ids.add(r["id"])
        assert r["format"] in FORMATS and r["file"].startswith(r["format"] + "/"), r
        assert r["split"] in ("dev", "test"), r
        path = FILES / r["file"]
        assert path.is_file(), path
        counts[(r["format"], r["split"], "answerable" if r["answers"] else "unanswerable")] += 1
        if not r["answers"]:
            continue
        if path not in cache:
            texts = renderings(path)
            cache[path] = [norm(t, d) for t in texts for d in (False, True)]
        for a in r["answers"]:
            na = norm(a, False)
            if not any(na in t for t in cache[path]):
                bad += 1
                print(f"MISSING {r['id']} {r['file']}: {a!r}")
    print(f"{len(rows)} questions, {bad} missing answer strings")
    print(f"{'format':10} {'split':5} {'answerable':>10} {'unanswerable':>12}")
    for fmt in FORMATS:
        for sp in ("dev", "test"):
            ans, una = counts[(fmt, sp, "answerable")], counts[(fmt, sp, "unanswerable")]
            print(f"{fmt:10} {sp:5} {ans:>10} {una:>12}")
    tot_a = sum(v for k, v in counts.items() if k[2] == "answerable")
    print(f"total answerable {tot_a}, unanswerable {len(rows) - tot_a}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
