"""A RAG-sized request at the service's own limit (issue 64): 1,000 documents of ~200 words each in one
POST /rerank, sent as Haystack's TEI ranker sends it (httpx, its default 30 s timeout), then the same
request again (a client's retry), then through the Cohere SDK's v2 client.

The documents are SQuAD v1.1 dev paragraphs run together and cut at 200 words (``SIEVEQA_DATA``);
the query is a question of the same set. The server is ``sieveqa serve`` in a subprocess with its
defaults; its limits come from ``GET /info``.

    python bench/large_request.py --out bench/results/serving/large-request.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path
from typing import Any

import httpx
from _common import finish, served

from sieveqa.paths import data_root

WORDS = 200


def documents(count: int, words: int = WORDS) -> tuple[str, list[str]]:
    """A question and ``count`` documents of ``words`` words from SQuAD v1.1 dev's paragraphs."""
    with gzip.open(data_root() / "squad" / "dev-v1.1.json.gz", "rt", encoding="utf-8") as f:
        articles = json.load(f)["data"]
    paragraphs = [p for a in articles for p in a["paragraphs"]]
    question = paragraphs[0]["qas"][0]["question"]
    stream = [w for p in paragraphs for w in p["context"].split()]
    docs = [" ".join(stream[i * words : (i + 1) * words]) for i in range(count)]
    if len(docs[-1].split()) < words:
        raise SystemExit(f"SQuAD dev holds fewer than {count} documents of {words} words")
    return question, docs


def timed_post(url: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One POST: its status, seconds, and the server's message if it refused."""
    started = time.perf_counter()
    try:
        r = httpx.post(url, json=body, timeout=timeout)
    except httpx.TimeoutException as err:
        seconds = round(time.perf_counter() - started, 2)
        return {"status": None, "seconds": seconds, "error": type(err).__name__}
    out: dict[str, Any] = {"status": r.status_code, "seconds": round(time.perf_counter() - started, 2)}
    if r.status_code != 200:
        out |= {"error": r.json().get("error"), "retry_after": r.headers.get("retry-after")}
    else:
        out["compute_ms"] = float(r.headers.get("x-compute-time", "nan"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--client-timeout", type=float, default=30.0, help="Haystack's TEI ranker default")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    question, docs = documents(args.documents)
    body = {"query": question, "texts": docs, "truncate": True}
    rows: dict[str, Any] = {}
    with served("--model", args.model) as url:
        info = httpx.get(f"{url}/info").json()
        print(f"server takes {info['max_client_batch_size']} texts of {info['max_input_length']} tokens")
        rows["first"] = timed_post(f"{url}/rerank", body, args.client_timeout)
        print("first:", rows["first"])
        rows["retry"] = timed_post(f"{url}/rerank", body, args.client_timeout)
        print("identical retry:", rows["retry"])
        import cohere

        co = cohere.ClientV2(api_key="unused", base_url=url)
        started = time.perf_counter()
        try:
            got = co.rerank(model=args.model, query=question, documents=docs[::-1], top_n=5)
            rows["cohere_v2"] = {"status": 200, "results": len(got.results)}
        except Exception as err:  # the client's own exception: what its user sees
            rows["cohere_v2"] = {"status": getattr(err, "status_code", None), "error": str(err)[:300]}
        rows["cohere_v2"]["seconds"] = round(time.perf_counter() - started, 2)
        print("cohere v2 (documents reversed: not the kept result):", rows["cohere_v2"])
    finish(
        args.out,
        "large_request",
        {
            "model": args.model,
            "documents": args.documents,
            "words_each": WORDS,
            "client_timeout_s": args.client_timeout,
            "server_info": info,
            "requests": rows,
        },
    )


if __name__ == "__main__":
    main()
