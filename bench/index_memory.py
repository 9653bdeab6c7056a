"""Size on disk and resident memory of opened corpus indexes, per 1,000 passages.

Each index is opened in a fresh Python process: resident memory (VmRSS) is read after importing
sieveqa and the libraries an index needs (torch, transformers, bm25s, faiss), then after opening the
index and answering one BM25 (and, with vectors, one dense) query: the index's own memory.

    python bench/index_memory.py IDX [IDX ...] --out bench/results/peasi/index_memory.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _common import finish, markdown

_PROBE = """
import json, numpy as np, faiss, bm25s, sqlite3
import sieveqa.backbones  # the libraries (torch, transformers) are loaded before measuring
from sieveqa.data.corpus import CorpusIndex
from sieveqa.data.passages import tokenizer_signature
tokenizer_signature()
def rss():
    return int(next(l for l in open('/proc/self/status') if l.startswith('VmRSS')).split()[1]) * 1024
before = rss()
index = CorpusIndex.open({path!r})
index.search_many(['what is the question'], 20)
if 'dense' in index.retrievers:
    index._dense.search_many(np.ones((1, index._dense.dim), dtype=np.float32), 20)
print(json.dumps({{'passages': len(index), 'disk': index.disk_bytes(), 'resident': rss() - before,
                  'retrievers': list(index.retrievers)}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("indexes", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=Path("bench/results/peasi/index_memory.json"))
    args = parser.parse_args()
    rows = []
    for path in args.indexes:
        probe = _PROBE.format(path=str(path))
        out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
        m = json.loads(out.stdout.strip().splitlines()[-1])
        per = 1000 / m["passages"] / 2**20
        rows.append(
            {
                "index": str(path),
                "retrievers": ",".join(m["retrievers"]),
                "passages": m["passages"],
                "disk_mib": round(m["disk"] / 2**20, 2),
                "disk_mib_per_1000": round(m["disk"] * per, 2),
                "resident_mib": round(m["resident"] / 2**20, 2),
                "resident_mib_per_1000": round(m["resident"] * per, 2),
            }
        )
    print(markdown(rows, list(rows[0])))
    finish(args.out, "index_memory", {"results": rows})


if __name__ == "__main__":
    main()
