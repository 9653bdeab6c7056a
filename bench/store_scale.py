"""Answer stores at scale: two-stage search against the full scan, and stores of 10k to 1M answers.

``recall``: a store of every distinct sentence here (the candidates of WikiQA, TrecQA and SQuAD-AS2,
all splits), searched by the WikiQA and SQuAD-AS2 questions of ``--split`` (dev chooses, test reports).
Every first stage (vector, bm25, rrf, mix) at every k is compared with the full scan: recall@10 of the
gold answers (a question's correct sentences, matched by text) and overlap@10 with the full scan's top
10. HAS scores of a (question, answer) pair do not depend on the other candidates, so each pair is
scored once and every configuration is read from the same scores.

``scale``: stores of N answers made of those real sentences repeated under new ids (timing and memory
only, never recall). Build time, size on disk, time per question and resident memory during search,
each search in a fresh process (``probe``).

    python bench/store_scale.py recall --model runs/has-store/best --split dev --out ...
    python bench/store_scale.py scale --model runs/has-store/best --sizes 10000,100000 --out ...
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import finish

from sieveqa.data.registry import load_dataset
from sieveqa.runtime.store.answer_store import AnswerStore
from sieveqa.runtime.store.first_stage import build_vector_index, collect_vectors
from sieveqa.runtime.store.format import store_model
from sieveqa.runtime.store.ranker import SearchSettings, StoreRanker

SOURCES = [
    "wikiqa:train-raw", "wikiqa:dev-raw", "wikiqa:test-raw", "trecqa:train-all", "trecqa:dev", "trecqa:test",
    "squad-as2:train", "squad-as2:dev-all", "squad-as2:test-all",
]  # fmt: skip
KS = (10, 25, 50, 100, 200, 400)
STAGES = ("vector", "bm25", "rrf", "mix:0.3", "mix:0.5", "mix:0.7")


def sentences() -> list[str]:
    """Every distinct candidate text of the sources, in a fixed order."""
    return list(dict.fromkeys(c.text for name in SOURCES for ex in load_dataset(name) for c in ex.candidates))


def questions(split: str) -> list[tuple[str, str, set[str]]]:
    """``(qid, question, gold texts)`` of WikiQA and SQuAD-AS2 ``split`` (questions with a gold answer)."""
    out = []
    for name in (f"wikiqa:{split}", f"squad-as2:{split}"):
        for ex in load_dataset(name):
            gold = {c.text for c in ex.candidates if c.label == 1}
            if gold:
                out.append((f"{name}/{ex.qid}", ex.question.text, gold))
    return out


def _store(model_path: str, texts: list[str], path: Path, **options: Any) -> tuple[AnswerStore, float]:
    started = time.perf_counter()
    manifest = path / "manifest.json"
    if manifest.exists() and (built_by := json.loads(manifest.read_text()).get("model_ref")) != model_path:
        sys.exit(f"{path}: a store built by {built_by}, not {model_path}; pass another --store")
    if not manifest.exists() or "build" in json.loads(manifest.read_text()):
        model = store_model(model_path)
        AnswerStore.build(
            model, [(f"s{i}", t) for i, t in enumerate(texts)], path, True, model_path, **options
        )
    return AnswerStore.open(path, verify=False), time.perf_counter() - started


def recall(args: argparse.Namespace) -> None:
    torch.set_num_threads(args.threads)
    texts = sentences()
    store, build_seconds = _store(args.model, texts, Path(args.store))
    row_of = {t: i for i, t in enumerate(texts)}
    qs = questions(args.split)
    full = StoreRanker.open(store.path, settings=SearchSettings(first_stage="none"))
    model, first = full.model, store.first_stage
    started = time.perf_counter()
    vectors = model.encode_questions([q for _, q, _ in qs])
    scan = full.search_many([q for _, q, _ in qs], top=10, progress=True)
    scan_seconds = (time.perf_counter() - started) / len(qs)
    full_top = [[int(h.id[1:]) for h in hits] for hits in scan]
    gold = [{row_of[t] for t in g} for _, _, g in qs]
    lists = {
        "vector": first.search_vectors(vectors.numpy(), max(KS), 1),
        "bm25": first.search_bm25([q for _, q, _ in qs], max(KS)),
    }
    if args.ivf:  # the same pooled vectors in an IVF index, as stores above 200,000 answers get
        ivf = Path(args.store) / "bench-ivf.faiss"
        if not ivf.exists():
            build_vector_index(collect_vectors(store.kind, store.dim, store.segments, True), "ivf", ivf)
        from sieveqa.runtime.store.first_stage import FirstStage

        index = FirstStage(ivf.parent, {"vector": "ivf", "bm25": False})
        index.__dict__["vector"] = __import__("faiss").read_index(str(ivf))
        for nprobe in (4, 8, 16, 32, 64):
            lists[f"ivf:{nprobe}"] = index.search_vectors(vectors.numpy(), max(KS), nprobe)
    from sieveqa.runtime.store.first_stage import fuse

    rows: list[dict[str, Any]] = [_row("full scan", len(store), full_top, full_top, gold, None)]
    cache: list[dict[int, float]] = [{} for _ in qs]
    for stage in [*STAGES, *(s for s in lists if s.startswith("ivf:"))]:
        for k in KS:
            kept = [_kept(stage, lists, i, k, fuse) for i in range(len(qs))]
            top = [_rerank(model, vectors[i], store, kept[i], cache[i]) for i in range(len(qs))]
            rows.append(_row(stage, k, top, full_top, gold, kept))
            print(rows[-1])
    result = {
        "split": args.split, "store_answers": len(store), "questions": len(qs),
        "store_bytes": store.folder_bytes(), "build_seconds": round(build_seconds, 1),
        "full_scan_seconds_per_question": round(scan_seconds, 3), "rows": rows,
    }  # fmt: skip
    finish(args.out, "store-recall", result)


def _kept(stage: str, lists: dict[str, Any], i: int, k: int, fuse: Any) -> np.ndarray:
    if stage in lists:
        return lists[stage][i][0][:k]
    pair = [(r[:k], s[:k]) for r, s in (lists["vector"][i], lists["bm25"][i])]
    method, _, weight = stage.partition(":")
    return fuse(method, pair, k, float(weight or 0.5))


def _rerank(model: Any, vector: torch.Tensor, store: AnswerStore, rows: np.ndarray, cache: dict) -> list[int]:
    new = np.asarray([r for r in rows.tolist() if r not in cache], dtype=np.int64)
    if len(new):
        scores = model.score_ragged(vector.unsqueeze(0), *store.gather(new))[0].tolist()
        cache.update(zip(new.tolist(), scores, strict=True))
    return sorted(rows.tolist(), key=lambda r: -cache[r])[:10]


def _row(stage: str, k: int, top: list, full: list, gold: list, kept: list | None) -> dict[str, Any]:
    recall10 = np.mean([len(set(t) & g) / len(g) for t, g in zip(top, gold, strict=True)])
    overlap = np.mean([len(set(t) & set(f)) / max(len(f), 1) for t, f in zip(top, full, strict=True)])
    row = {
        "first_stage": stage,
        "k": k,
        "recall@10": round(100 * recall10, 2),
        "overlap@10": round(100 * overlap, 2),
    }
    if kept is not None:
        row["first_stage_recall"] = round(
            100 * np.mean([len(set(c.tolist()) & g) / len(g) for c, g in zip(kept, gold, strict=True)]), 2
        )
    return row


_PROBE = """
import json, sys, time
import torch
from sieveqa.runtime.store.ranker import SearchSettings, StoreRanker
from sieveqa.runtime.store.format import find_model
from sieveqa.runtime.store.answer_store import AnswerStore

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * {page}

def peak():  # VmHWM: this process's peak RSS since the last reset (ru_maxrss would count the parent's)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

torch.set_num_threads({threads})
path, settings, questions = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
manifest = json.loads(open(path + "/manifest.json").read())
model = find_model(__import__("pathlib").Path(path), manifest["model_ref"])
model.encode_questions(["warm up"])
before = rss()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets VmHWM to the current RSS: the peak from here on is the search's

ranker = StoreRanker(model, AnswerStore.open(path, verify=False), SearchSettings(**settings))
opened = rss()
times = []
for q in questions:
    started = time.perf_counter()
    ranker.search(q, top=10)
    times.append(time.perf_counter() - started)
print(json.dumps({{"before": before, "opened": opened, "after": rss(), "peak": peak(), "times": times}}))
"""


CGROUP = Path("/sys/fs/cgroup/memory/sieveqa-store-probe")


def probe(
    store: Path, settings: dict[str, Any], qs: list[str], threads: int, limit: int = 0
) -> dict[str, Any]:
    """Search ``qs`` in a fresh process; its resident memory and the time of each question. With
    ``limit``, the process runs in a cgroup (v1) allowed that many bytes of memory, page cache of the
    mapped store included: a store larger than that must still open and answer."""
    code = _PROBE.format(page=os.sysconf("SC_PAGE_SIZE"), threads=threads)
    argv = [sys.executable, "-c", code, str(store), json.dumps(settings), json.dumps(qs)]
    enter = None
    if limit:
        # Pages already cached were charged to whoever read them first: drop them, so the store's
        # pages are read again and charged to this cgroup.
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3")
        CGROUP.mkdir(exist_ok=True)
        (CGROUP / "memory.limit_in_bytes").write_text(str(limit))

        def enter() -> None:
            (CGROUP / "cgroup.procs").write_text(str(os.getpid()))

    done = subprocess.run(argv, capture_output=True, text=True, preexec_fn=enter)
    if done.returncode != 0:  # recorded, not raised: a memory-limited run may be killed
        return {"failed": done.returncode, "stderr": done.stderr[-800:]}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    times = np.asarray(out["times"][1:])  # the first question pages in what the rest reuse
    return {
        "first_question_ms": round(1000 * out["times"][0], 1), "ms_mean": round(1000 * times.mean(), 1),
        "ms_p50": round(1000 * np.median(times), 1),
        "ms_p95": round(1000 * np.percentile(times, 95), 1),
        "rss_before_store": out["before"], "rss_after": out["after"], "rss_peak": out["peak"],
        "rss_growth": out["after"] - out["before"], "rss_peak_growth": out["peak"] - out["before"],
    }  # fmt: skip


def killed_build(model: str, texts: list[str], path: Path, after: int) -> dict[str, Any]:
    """``sieveqa index build`` as a user runs it: SIGKILLed once its manifest lists ``after`` answers,
    then the same command again, which resumes. Returns what the kill left and what each part took."""
    answers = path.with_suffix(".jsonl")
    answers.write_text("".join(json.dumps({"id": f"s{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    command = [
        str(Path(sys.executable).parent / "sieveqa"),
        "index",
        "build",
        "-m",
        model,
        "-a",
        str(answers),
    ]
    command += ["-o", str(path)]
    started = time.perf_counter()
    first = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    manifest = path / "manifest.json"
    while first.poll() is None:
        if manifest.exists() and json.loads(manifest.read_text())["count"] >= after:
            first.kill()
        time.sleep(0.5)
    killed = time.perf_counter() - started
    done = json.loads(manifest.read_text())["count"]
    started = time.perf_counter()
    resumed = subprocess.run(command, capture_output=True, text=True, check=True)
    return {
        "killed_after_seconds": round(killed, 1), "answers_done_at_kill": done,
        "resumed_seconds": round(time.perf_counter() - started, 1), "resumed_output": resumed.stdout[-600:],
    }  # fmt: skip


def scale(args: argparse.Namespace) -> None:
    texts = sentences()
    qs = [q for _, q, _ in questions("test")][: args.questions]
    rows = []
    earlier = {}
    if args.probe_only:  # the stores exist: search them again, keep what their builds measured
        earlier = {r["answers"]: r for r in json.loads(Path(args.out).read_text())["rows"]}
    for size in (int(s) for s in args.sizes.split(",")):
        repeated = [texts[i % len(texts)] for i in range(size)]
        path = Path(args.tmp) / f"store-{size}"
        kill = {}
        if size >= args.kill_at and not (path / "manifest.json").exists():
            kill = killed_build(args.model, repeated, path, args.kill_after)
        store, seconds = _store(args.model, repeated, path)
        if kill:
            seconds = kill["killed_after_seconds"] + kill["resumed_seconds"]
        if size in earlier:
            keep = ("killed_after_seconds", "answers_done_at_kill", "resumed_seconds", "resumed_output")
            kill = {key: earlier[size][key] for key in keep if key in earlier[size]}
            seconds = earlier[size]["build_seconds"]
        row = {"answers": size, "build_seconds": round(seconds, 1), "distinct_texts": min(size, len(texts)),
               **kill, "disk_bytes": store.folder_bytes(), "representation_bytes": store.disk_bytes(),
               "vector_index": store.manifest["first_stage"]["vector"]}  # fmt: skip
        for label, settings in (("two-stage", {"k": args.k}), ("full scan", {"first_stage": "none"})):
            if label == "full scan" and size > args.max_scan:
                continue
            row[label] = probe(path, settings, qs if label == "two-stage" else qs[:5], args.threads)
        if args.memory_limit and store.folder_bytes() > args.memory_limit:
            row["two-stage, memory-limited"] = {
                "limit_bytes": args.memory_limit,
                **probe(path, {"k": args.k}, qs, args.threads, args.memory_limit),
            }
        rows.append(row)
        print(json.dumps(row))
    finish(args.out, "store-scale", {"rows": rows, "k": args.k, "threads": args.threads})


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("recall")
    r.add_argument("--model", required=True)
    r.add_argument("--split", default="dev")
    r.add_argument("--store", default="runs/stores/all-sentences")
    r.add_argument("--ivf", action="store_true", help="also an IVF first stage over the same vectors")
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--out", required=True)
    s = sub.add_parser("scale")
    s.add_argument("--model", required=True)
    s.add_argument("--sizes", default="10000,100000,1000000")
    s.add_argument("--k", type=int, default=50)
    s.add_argument("--questions", type=int, default=101)
    s.add_argument("--max-scan", type=int, default=100_000)
    s.add_argument(
        "--memory-limit", type=int, default=1 << 30, help="bytes; stores larger search again under it"
    )
    s.add_argument("--kill-at", type=int, default=1_000_000, help="stores this large are killed once")
    s.add_argument("--kill-after", type=int, default=300_000, help="answers written before the kill")
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--tmp", default="runs/stores")
    s.add_argument(
        "--probe-only", action="store_true", help="search existing stores again (keeps --out's builds)"
    )
    s.add_argument("--out", required=True)
    args = parser.parse_args()
    recall(args) if args.command == "recall" else scale(args)


if __name__ == "__main__":
    main()
