"""``sieveqa index``: corpus indexes (documents → passages → BM25 / dense) and answer stores (HAS)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sieveqa.cli._app import DeviceOpt, app

if TYPE_CHECKING:
    from sieveqa.data.corpus import CorpusIndex
    from sieveqa.data.formats import Reading
    from sieveqa.runtime.store.answer_store import AnswerStore

index_app = typer.Typer(
    help="Corpus indexes for `sieveqa answer`, and answer stores encoded once by a HAS model.",
    no_args_is_help=True,
)
app.add_typer(index_app, name="index")

AnswersOpt = Annotated[
    str,
    typer.Option(
        "--answers",
        "-a",
        help="JSONL of {id, text} answers, or a dataset name whose candidates become the answers",
    ),
]
BatchOpt = Annotated[int, typer.Option(help="answers per forward pass")]


@index_app.command("corpus")
def corpus(
    source: Annotated[
        str,
        typer.Option(
            "--input",
            "-i",
            help="documents: a folder or a file (plain text, Markdown, HTML, PDF, Word .docx), a JSONL file "
            "of {id, title?, text}, demo (a small corpus that ships with sieveqa), or "
            "squad:{train,dev,test,all} / wikiqa:{train,dev,test,all}",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="index folder (an existing index is appended to)")],
    retriever: Annotated[
        str, typer.Option(help="bm25, or dense / hybrid to also store all-MiniLM-L6-v2 vectors in FAISS")
    ] = "bm25",
    passage_tokens: Annotated[
        int | None, typer.Option(help="passages: consecutive sentences up to N tokens (a new index: 200)")
    ] = None,
    chunk_words: Annotated[int | None, typer.Option(help="instead, passages of N words (e.g. 100)")] = None,
    chunk_stride: Annotated[int | None, typer.Option(help="word chunks start every N words")] = None,
    device: DeviceOpt = "auto",
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="list every file skipped, and why")
    ] = False,
    sync: Annotated[
        bool,
        typer.Option(
            help="an existing index is made to hold exactly the input's documents: the changed ones "
            "replaced, those the input no longer has (deleted or renamed files) removed"
        ),
    ] = False,
) -> None:
    """Index documents for `sieveqa answer`: sentences, passages, BM25 (and dense vectors).

    Run again on a folder that changed: new files are added; with --sync edited files are replaced
    and deleted or renamed ones removed too (a running `sieveqa serve` moves to the new index).

    A folder is read whole: every file in a format sieveqa reads; the files it skips are listed with
    the reason (the first few, or all with --verbose).

    All or nothing: a killed build leaves no index and the same command starts over; an append
    that is killed leaves the index as it was.
    """
    import time

    from sieveqa.data.corpus import RETRIEVERS, CorpusIndex, CorpusOptions
    from sieveqa.data.corpus_sync import input_name
    from sieveqa.data.formats import scan_documents
    from sieveqa.errors import BusyError, ConfigError, DatasetNotFoundError
    from sieveqa.io import check_output_dir

    if retriever not in RETRIEVERS:
        raise ConfigError(f"--retriever must be one of {', '.join(RETRIEVERS)}, got {retriever!r}")
    check_output_dir(out, "--out")
    given = {"passage_tokens": passage_tokens, "chunk_words": chunk_words, "chunk_stride": chunk_stride}
    given = {name: value for name, value in given.items() if value is not None}
    existing = CorpusIndex.open(out, verify=False) if (out / "manifest.json").is_file() else None
    if existing is None:
        CorpusOptions(**given)  # checked before the documents are read
    else:  # an append cuts as the index does: only what the user gave is compared with it
        differ = [
            f"--{k.replace('_', '-')} {v}" for k, v in given.items() if getattr(existing.options, k) != v
        ]
        if differ:
            raise ConfigError(
                f"{', '.join(differ)}: the index at {out} cuts passages with {existing.options}; "
                "append without it (the index's own is used)"
            )
    started = time.perf_counter()
    try:
        reading = scan_documents(source, progress=True)
    except DatasetNotFoundError as err:
        raise DatasetNotFoundError(f"--input {err}") from None
    documents = reading.documents
    if not documents:
        from sieveqa.errors import DataFormatError

        first = f": {reading.skipped[0][0]}: {reading.skipped[0][1]}" if reading.skipped else ""
        raise DataFormatError(f"{source}: no documents to index ({reading.summary()}{first})")
    _print_reading(reading, source, verbose)
    embedder = None
    if retriever != "bm25":
        from sieveqa.models.embedder import SentenceEmbedder

        embedder = SentenceEmbedder().configure(device=device)
    if existing is None:
        made = not out.exists()
        try:
            index = CorpusIndex.build(
                documents, out, CorpusOptions(**given), embedder, progress=True, source=input_name(source)
            )
        except BaseException as err:
            # A build that failed (a full disk, Ctrl-C) leaves no folder it made; but where another
            # build started at the same moment holds the folder (busy) or has finished in it, the
            # folder is that build's.
            if made and not isinstance(err, BusyError) and not (out / "manifest.json").exists():
                shutil.rmtree(out, ignore_errors=True)
            raise
        done = f"built {out}"
    else:
        # A file there but not read this time (a reader missing, a file being written) is kept.
        keep = [name for name, _ in reading.skipped]
        index = existing.append(
            documents, embedder, progress=True, sync=sync, keep=keep, source=input_name(source)
        )
        done = _changes(index.changes, len(documents), out)
    typer.echo(f"{done} in {time.perf_counter() - started:.1f} s")
    if index.changes.get("rebuilt"):
        typer.echo("its BM25 was rebuilt: Chinese, Japanese and Korean text is now split into words")
    if missing := index.changes.get("missing"):
        typer.echo(
            f"{_n(missing, 'document')} of the index {'is' if missing == 1 else 'are'} not in {source} "
            "(deleted or renamed since, or from another input): --sync removes them",
            err=True,
        )
    _print_corpus(index)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _changes(changes: dict[str, int], given: int, out: Path) -> str:
    """What an append did, in words: ``appended 2 documents to idx, replaced 1, removed 1``."""
    done = [(verb, changes.get(key, 0)) for key, verb in _VERBS if changes.get(key)]
    if not done:
        are = "is" if given == 1 else "are"
        return f"nothing to add to {out} (the {_n(given, 'document')} given {are} in it already, same text)"
    (verb, count), *rest = done
    first = f"{verb} {_n(count, 'document')} {'to' if verb == 'appended' else 'in'} {out}"
    same = given - changes.get("added", 0) - changes.get("replaced", 0)
    return ", ".join([first, *(f"{v} {c}" for v, c in rest)]) + (f" ({same} unchanged)" if same else "")


_VERBS = (("added", "appended"), ("replaced", "replaced"), ("removed", "removed"))


#: Skipped files listed without --verbose.
SHOWN_SKIPPED = 10


def _print_reading(reading: Reading, source: str, verbose: bool) -> None:
    if not Path(source).is_dir():
        return  # a file (read, or it would have been refused) or a dataset name
    typer.echo(f"{source}: {reading.summary()}", err=True)
    shown = reading.skipped if verbose else reading.skipped[:SHOWN_SKIPPED]
    for name, why in shown:
        typer.echo(f"  skipped {name}: {why}", err=True)
    if len(shown) < len(reading.skipped):
        typer.echo(f"  ... and {len(reading.skipped) - len(shown)} more (--verbose lists them)", err=True)


def _cut(index: CorpusIndex) -> str:
    opts = index.options
    if opts.chunk_words is None:
        return f"sentence windows of at most {opts.passage_tokens} tokens"
    return f"{opts.chunk_words}-word chunks every {opts.chunk_stride or opts.chunk_words} words"


def _print_corpus(index: CorpusIndex) -> None:
    counts = index.counts
    size = index.disk_bytes()
    typer.echo(
        f"{index.path}: {counts['documents']} documents, {counts['sentences']} sentences, "
        f"{counts['passages']} passages ({_cut(index)}); retrievers: {', '.join(index.retrievers)}"
    )
    per_1000 = size / max(counts["passages"], 1) * 1000 / 2**20
    typer.echo(f"{size / 2**20:.2f} MiB on disk, {per_1000:.2f} MiB per 1,000 passages")
    if inputs := index.manifest.get("inputs"):  # what --sync follows
        typer.echo(f"built from: {', '.join(inputs)}")
    from sieveqa.runtime.answer.confidence import LOCAL_CONFIDENCE, load_confidence

    fitted = load_confidence(index.path / LOCAL_CONFIDENCE, missing_ok=True)
    if fitted:
        cuts = ", ".join(f"{name} {c.min_confidence:.3f}" for name, c in sorted(fitted.items()))
        typer.echo(f"its own cut (calibrate-confidence --index), which answer and serve read: {cuts}")


@index_app.command("build")
def build(
    model: Annotated[str, typer.Option("--model", "-m", help="the HAS model folder that encodes answers")],
    answers: AnswersOpt,
    out: Annotated[Path, typer.Option("--out", "-o", help="store folder to create")],
    batch_size: BatchOpt = 128,
    device: DeviceOpt = "auto",
    vector_index: Annotated[
        str,
        typer.Option(
            help="first stage: a FAISS index of one pooled vector per answer; auto: flat up to 200,000 "
            "answers, IVF above; none: no vector first stage"
        ),
    ] = "auto",
    bm25: Annotated[bool, typer.Option(help="first stage: also index the answers' texts with BM25")] = True,
    segment_size: Annotated[
        int, typer.Option(help="answers per segment: a killed build resumes after the last whole one")
    ] = 100_000,
) -> None:
    """Encode an answer collection once and store it (bits for HAS, floats for the baselines), with
    a first stage for searching the whole store.

    Resumable: a killed build keeps its finished segments, and the same command continues it.
    """
    from sieveqa.data.answers import load_answers
    from sieveqa.errors import ConfigError
    from sieveqa.io import check_output_dir
    from sieveqa.runtime.store.answer_store import AnswerStore
    from sieveqa.runtime.store.first_stage import choose_vector_index
    from sieveqa.runtime.store.format import store_model

    check_output_dir(out, "--out")
    if segment_size < 1:
        raise ConfigError(f"--segment-size must be at least 1, got {segment_size}")
    collection = load_answers(answers)
    choose_vector_index(len(collection), vector_index)
    hashing = store_model(model).configure(device=device, batch_size=batch_size)
    options = {"vector_index": vector_index, "bm25": bm25, "segment_size": segment_size}
    _print_info(AnswerStore.build(hashing, collection, out, progress=True, model_ref=model, **options))


@index_app.command("add")
def add(
    store_path: Annotated[Path, typer.Option("--store", "-s", help="an existing store folder")],
    answers: AnswersOpt,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="default: the model recorded in the store")
    ] = None,
    batch_size: BatchOpt = 128,
    device: DeviceOpt = "auto",
) -> None:
    """Append answers as a new segment (the stored ones are not rewritten)."""
    from sieveqa.data.answers import load_answers
    from sieveqa.runtime.store.answer_store import AnswerStore
    from sieveqa.runtime.store.format import find_model, store_model

    store = AnswerStore.open(store_path)
    collection = load_answers(answers)
    found = store_model(model) if model else find_model(store.path, store.manifest["model_ref"])
    hashing = found.configure(device=device, batch_size=batch_size)
    _print_info(store.append(hashing, collection, progress=True))


@index_app.command("info")
def info(
    store_path: Annotated[Path, typer.Argument(help="a corpus index or answer store folder")],
    verify: Annotated[bool, typer.Option(help="check every file's sha256")] = True,
) -> None:
    """Show what a corpus index or an answer store holds and what it takes on disk (and in memory)."""
    from sieveqa.data.corpus import FORMAT, CorpusIndex
    from sieveqa.errors import ConfigError
    from sieveqa.io import read_json_object
    from sieveqa.runtime.store.answer_store import AnswerStore

    manifest = store_path / "manifest.json"
    if not manifest.is_file():
        what = "no such folder" if not store_path.is_dir() else "no manifest.json"
        raise ConfigError(
            f"{store_path}: neither a corpus index (sieveqa index corpus) nor an answer store "
            f"(sieveqa index build): {what} (a stopped corpus build leaves none: rerun its command)"
        )
    if read_json_object(manifest).get("format") == FORMAT:
        _print_corpus(CorpusIndex.open(store_path, verify=verify))
    else:
        _print_info(AnswerStore.open(store_path, verify=verify))


#: What each kind of store keeps, and the model settings that apply to it.
_KINDS = {
    "bits": ("HAS bit matrices, 1 bit per value of each token", ("backbone", "composition", "beta")),
    "float": ("float32 token matrices (BERT-attention)", ("backbone", "composition")),
    "vector": ("one float32 vector per answer (BERT-pooling)", ("backbone", "pooling")),
}


def _print_info(store: AnswerStore) -> None:
    sig, ref = store.manifest["model"], store.manifest["model_ref"]
    what, fields = _KINDS[store.kind]
    tokens = sum(entry["tokens"] for entry in store.manifest["segments"])
    per = f", {tokens} token rows" if store.kind != "vector" else ""
    count = f"{len(store)} answers in {len(store.segments)} segment(s){per}"
    typer.echo(f"{store.path}: {count}; {what}, width {sig['dim']}")
    settings = ", ".join(f"{name} {sig[name]}" for name in fields)
    where = ref.get("path") or "shipped with sieveqa"
    typer.echo(f"model {ref.get('name')} ({where}; {settings}; body {str(ref.get('fingerprint'))[:12]})")
    entry = store.manifest.get("first_stage") or {}
    stages = []
    if entry.get("vector"):
        from sieveqa.runtime.store.first_stage import nlist

        index = "flat, fp16" if entry["vector"] == "flat" else f"IVF, {nlist(len(store))} lists, 8-bit"
        stages.append(f"pooled vectors in FAISS ({index})")
    if entry.get("bm25"):
        stages.append("BM25 over the texts")
    typer.echo(f"first stage: {' + '.join(stages) or 'none (searches scan every answer)'}")
    typer.echo(
        f"on disk: {store.folder_bytes() / 2**20:.2f} MiB in all, representations "
        f"{store.disk_bytes() / 2**20:.2f} MiB ({store.ram_bytes() / 2**20:.2f} MiB in RAM when every "
        "page is read)"
    )
