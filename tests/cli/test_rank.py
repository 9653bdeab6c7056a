"""``sieveqa rank``: ranked output, the policy of a cascade, screen output kept short."""

import json
import math
import sys
from pathlib import Path

import pytest
import torch

from sieveqa.data.jsonl import read_jsonl
from tests.cli.conftest import one_error_line


def test_rank_prints_and_writes_ranked_jsonl(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ranked.jsonl"
    result = sieveqa("rank", "--model", saved_tiny, "--input", example_jsonl, "--output", out, "--top", "2")
    assert result.exit_code == 0, result.output
    assert "How tall is the Eiffel Tower?" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["qid"] for r in rows] == [e.qid for e in read_jsonl(example_jsonl)]
    for row in rows:
        ranks = [c["rank"] for c in row["candidates"]]
        scores = [c["score"] for c in row["candidates"]]
        assert ranks == list(range(1, len(ranks) + 1))
        assert scores == sorted(scores, reverse=True)


def test_bad_precision_is_one_line_naming_the_choices(sieveqa, saved_tiny: Path, example_jsonl: Path) -> None:
    line = one_error_line(
        sieveqa("rank", "--model", saved_tiny, "--input", example_jsonl, "--precision", "fp8")
    )
    assert line == "error: precision must be one of auto, fp32, bf16, fp16, int8, got 'fp8'"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible")
def test_cuda_without_a_gpu_is_one_line(sieveqa, saved_tiny: Path, example_jsonl: Path) -> None:
    line = one_error_line(
        sieveqa("rank", "--model", saved_tiny, "--input", example_jsonl, "--device", "cuda")
    )
    assert "no CUDA GPU is visible" in line


@pytest.mark.slow
def test_long_texts_are_shortened_on_screen_but_not_in_files(
    sieveqa, saved_tiny: Path, tmp_path: Path
) -> None:
    long_text = "word " * 200_000  # a megabyte
    data = tmp_path / "long.jsonl"
    question = {"qid": "q", "question": "what?", "candidates": [{"id": "c", "text": long_text}]}
    data.write_text(json.dumps(question) + "\n")
    out = tmp_path / "ranked.jsonl"
    result = sieveqa("rank", "--model", saved_tiny, "--input", data, "--output", out)
    assert result.exit_code == 0, result.output
    assert len(result.output) < 2_000 and "1,000,000 characters" in result.output
    assert json.loads(out.read_text())["candidates"][0]["text"] == long_text


def test_an_output_path_that_is_a_folder_is_refused_before_scoring(
    sieveqa, example_jsonl: Path, tmp_path: Path
) -> None:
    # The model does not exist: the output check comes first, so its error is the one reported.
    line = one_error_line(sieveqa("rank", "-m", tmp_path / "nope", "-i", example_jsonl, "-o", tmp_path))
    assert line == f"error: --output {tmp_path}: is a folder; give the path of a file to write"


def test_an_output_that_is_the_input_is_refused_before_scoring(
    sieveqa, example_jsonl: Path, tmp_path: Path
) -> None:
    # it was ranked and written over the input, which was lost
    before = example_jsonl.read_bytes()
    alias = tmp_path / "alias.jsonl"
    alias.symlink_to(example_jsonl)
    for output in (example_jsonl, alias):
        line = one_error_line(sieveqa("rank", "-m", tmp_path / "nope", "-i", example_jsonl, "-o", output))
        assert line == f"error: --output {output}: is the --input file; write elsewhere"
    assert example_jsonl.read_bytes() == before


def test_non_utf8_input_names_the_line(sieveqa, saved_tiny: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    good = {"qid": "q1", "question": "who?", "candidates": [{"id": "c", "text": "x"}]}
    bad.write_bytes(json.dumps(good).encode() + b"\n" + b'{"qid": "q2", "question": "caf\xe9?"}\n')
    line = one_error_line(sieveqa("rank", "--model", saved_tiny, "--input", bad))
    assert line == f"error: {bad}:2: not UTF-8 text (byte 0xe9 at column 31)"


def test_alpha_on_a_cross_encoder_is_refused(sieveqa, saved_tiny: Path, example_jsonl: Path) -> None:
    line = one_error_line(sieveqa("rank", "-m", saved_tiny, "-i", example_jsonl, "--alpha", "0.3"))
    assert "is a cross-encoder model, which takes no runtime policy (drop_ratios)" in line


def test_a_corrupt_or_truncated_model_is_one_line(sieveqa, saved_tiny: Path, example_jsonl: Path) -> None:
    weights = saved_tiny / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-10] ^= 0x01  # one flipped bit
    weights.write_bytes(bytes(data))
    line = one_error_line(sieveqa("rank", "--model", saved_tiny, "--input", example_jsonl))
    assert line.startswith(f"error: {weights} is corrupt or was changed")
    weights.write_bytes(bytes(data[:1000]))  # a truncated copy
    assert "is corrupt or was changed" in one_error_line(
        sieveqa("rank", "-m", saved_tiny, "-i", example_jsonl)
    )


def test_a_config_json_that_is_not_an_object_is_one_line(
    sieveqa, saved_tiny: Path, example_jsonl: Path
) -> None:
    (saved_tiny / "config.json").write_text('["not", "an", "object"]')
    line = one_error_line(sieveqa("rank", "--model", saved_tiny, "--input", example_jsonl))
    assert line == f"error: {saved_tiny / 'config.json'}: expected a JSON object, got list"


def test_what_a_killed_run_left_beside_the_output_is_cleaned_up(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "ranked.jsonl"
    stale = tmp_path / f".ranked.jsonl.{dead.pid}.x1y2.tmp"  # a half-written output of a killed run
    stale.write_text('{"qid": "half')
    result = sieveqa("rank", "--model", saved_tiny, "--input", example_jsonl, "--output", out)
    assert result.exit_code == 0, result.output
    assert out.is_file() and not stale.exists()


def test_an_empty_input_is_one_line_not_silence(sieveqa, tmp_path: Path) -> None:
    """rank on an empty file printed nothing and exited 0."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert f"{empty}: no questions" in one_error_line(sieveqa("rank", "--input", empty))


def test_rank_takes_a_hugging_face_cross_encoder_folder(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    """Issue 45: a reranker saved by transformers ranks as it is; one sieveqa cannot run is one line."""
    from sieveqa.models.zoo import load_model
    from tests.models.hf_tiny import tiny_distilbert, tiny_hf_cross_encoder

    folder = tiny_hf_cross_encoder("xlm-roberta", tmp_path / "mine")
    out = tmp_path / "out.jsonl"
    result = sieveqa(
        "rank", "--model", folder, "--input", example_jsonl, "--output", out, "--precision", "fp32"
    )
    assert result.exit_code == 0, result.output
    model = load_model(folder)
    for ex, row in zip(
        read_jsonl(example_jsonl), (json.loads(line) for line in out.read_text().splitlines()), strict=True
    ):
        scores = model.score_pairs([ex.question.text] * len(ex.candidates), [c.text for c in ex.candidates])
        own = {c.id: score for c, score in zip(ex.candidates, scores, strict=True)}
        written = [(c["id"], c["score"]) for c in row["candidates"]]
        assert all(abs(score - own[cid]) < 1e-4 for cid, score in written)  # the model's own scores
        assert [score for _, score in written] == sorted((score for _, score in written), reverse=True)
    tiny_distilbert(tmp_path / "distil")
    line = one_error_line(sieveqa("rank", "--model", tmp_path / "distil", "--input", example_jsonl))
    assert "distil: a distilbert cross-encoder: sieveqa runs bert, electra, roberta, xlm-roberta" in line


def test_a_folder_given_to_input_says_what_input_reads(sieveqa, tmp_path: Path) -> None:
    """Issue 63: ``rank --input FOLDER`` said "no such file"; it says what --input reads, and where a
    folder of documents goes instead."""
    docs = tmp_path / "my-docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSome text.\n")
    line = one_error_line(sieveqa("rank", "--input", docs))
    assert line.startswith(f"error: --input {docs}: is a folder; --input reads a JSONL file of questions")
    assert f"sieveqa index corpus --input {docs}" in line and "sieveqa answer" in line
    missing = one_error_line(sieveqa("rank", "--input", tmp_path / "nope.jsonl"))
    assert "no such file; --input reads a JSONL file of questions" in missing


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_scores_say_their_scale_logits_by_default_probabilities_on_request(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    """Issue 63: the CLI wrote logits where Python's predict gives probabilities, saying neither."""
    from sieveqa.models.zoo import load_model

    logits, probs = tmp_path / "logits.jsonl", tmp_path / "probs.jsonl"
    shown = sieveqa("rank", "-m", saved_tiny, "-i", example_jsonl, "-o", logits, "--precision", "fp32")
    assert shown.exit_code == 0, shown.output
    assert shown.output.splitlines()[0].startswith("scores: logits")
    as_probs = sieveqa(
        "rank", "-m", saved_tiny, "-i", example_jsonl, "-o", probs, "--precision", "fp32", "--scores", "prob"
    )
    assert as_probs.exit_code == 0, as_probs.output
    assert as_probs.output.splitlines()[0].startswith("scores: probabilities")
    model = load_model(saved_tiny)
    for ex, raw, prob in zip(read_jsonl(example_jsonl), _rows(logits), _rows(probs), strict=True):
        assert raw["score_scale"] == "logit" and prob["score_scale"] == "prob"
        own = model.score_pairs([ex.question.text] * len(ex.candidates), [c.text for c in ex.candidates])
        logit = {c.id: s for c, s in zip(ex.candidates, own, strict=True)}
        assert [c["id"] for c in raw["candidates"]] == [c["id"] for c in prob["candidates"]]
        for r, p in zip(raw["candidates"], prob["candidates"], strict=True):
            assert r["score"] == pytest.approx(logit[r["id"]], abs=1e-4)
            assert p["score"] == pytest.approx(1 / (1 + math.exp(-logit[r["id"]])), abs=1e-5)
            assert 0 < p["score"] < 1
    assert (
        one_error_line(sieveqa("rank", "-m", saved_tiny, "-i", example_jsonl, "--scores", "odds"))
        == "error: --scores must be one of logit, prob, got 'odds'"
    )


def test_a_cascades_scores_are_its_exits_own_on_either_scale(
    sieveqa, saved_cascade: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    """A cascade's sorting scores (exit reached + a probability) are neither scale: rank writes the
    logit of the last exit each answer reached, as Python's rank does, or its sigmoid."""
    from sieveqa.runtime.policy import load_ranker

    logits, probs = tmp_path / "logits.jsonl", tmp_path / "probs.jsonl"
    for out, scale in ((logits, "logit"), (probs, "prob")):
        args = ["-m", saved_cascade, "-i", example_jsonl, "-o", out, "--precision", "fp32", "--alpha", "0.5"]
        result = sieveqa("rank", *args, "--scores", scale)
        assert result.exit_code == 0, result.output
        assert "a cascade ranks the answers that reached a later exit first" in result.output
    ranker = load_ranker(saved_cascade, precision="fp32", drop_ratios=[0.5])
    for ex, raw, prob in zip(read_jsonl(example_jsonl), _rows(logits), _rows(probs), strict=True):
        texts = [c.text for c in ex.candidates]
        hits = ranker.rank(ex.question.text, texts, activation_fn=torch.nn.Identity())
        assert [c["id"] for c in raw["candidates"]] == [ex.candidates[h["corpus_id"]].id for h in hits]
        assert [c["score"] for c in raw["candidates"]] == pytest.approx([h["score"] for h in hits], abs=1e-4)
        assert [c["score"] for c in prob["candidates"]] == pytest.approx(
            [1 / (1 + math.exp(-h["score"])) for h in hits], abs=1e-5
        )


def test_a_retrievers_scores_in_the_file_are_fused_by_default(
    sieveqa, saved_tiny: Path, tmp_path: Path
) -> None:
    """A RAG user's candidates come with their retriever's score: rank fuses it (auto: interp:0.2)
    and shows the fused scores (score_scale "fused", as /rerank and Python's rank give them);
    --fusion none ranks by the model alone, on its logits."""
    texts = ["alpha beta", "gamma delta", "epsilon zeta", "eta theta"]
    given = [0.0, 0.0, 0.0, 50.0]  # the retriever is sure of the last one
    row = {
        "qid": "q",
        "question": "what?",
        "candidates": [
            {"id": f"c{i}", "text": t, "retrieval_score": s}
            for i, (t, s) in enumerate(zip(texts, given, strict=True))
        ],
    }
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(row) + "\n")
    out, alone = tmp_path / "fused.jsonl", tmp_path / "alone.jsonl"
    result = sieveqa(
        "rank", "--model", saved_tiny, "--input", path, "--output", out, "--fusion", "interp:0.9"
    )
    assert result.exit_code == 0, result.output
    assert "fused with the first stage's retrieval_score (interp:0.9" in result.output
    fused = json.loads(out.read_text())
    assert fused["score_scale"] == "fused" and fused["candidates"][0]["id"] == "c3"
    assert fused["candidates"][0]["score"] == pytest.approx(0.9, abs=0.1)  # interp: within [0, 1]
    assert "retrieval_score (auto" in sieveqa("rank", "--model", saved_tiny, "--input", path).output
    result = sieveqa("rank", "--model", saved_tiny, "--input", path, "--output", alone, "--fusion", "none")
    assert "fused" not in result.output and json.loads(alone.read_text())["score_scale"] == "logit"


@pytest.mark.slow
def test_a_bad_fusion_or_retrieval_score_is_one_error_line(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    line = one_error_line(
        sieveqa("rank", "--model", saved_tiny, "--input", example_jsonl, "--fusion", "bm25")
    )
    assert "--fusion must be none, auto, interp:W or rrf:W" in line
    bad = tmp_path / "bad.jsonl"
    row = {"qid": "q", "question": "?", "candidates": [{"id": "a", "text": "t", "retrieval_score": "high"}]}
    bad.write_text(json.dumps(row) + "\n")
    line = one_error_line(sieveqa("rank", "--model", saved_tiny, "--input", bad))
    assert "bad.jsonl:1: candidates[0]: field 'retrieval_score' must be a finite number" in line


@pytest.mark.parametrize("command", ["rank", "eval"])
def test_long_texts_cut_reads_only_a_texts_first_tokens(
    sieveqa, saved_tiny: Path, tmp_path: Path, command: str
) -> None:
    """Only serve could cut long texts: eval and rank read a 20,000-character passage as ~60 windows."""
    long = " ".join(f"word{i}" for i in range(400))  # far beyond the tiny model's 64 tokens
    row = {"qid": "q", "question": "which word?", "candidates": [
        {"id": "long", "text": long + " the answer is here", "label": 1},
        {"id": "short", "text": "a short text", "label": 0},
    ]}  # fmt: skip
    data = tmp_path / "long.jsonl"
    data.write_text(json.dumps(row) + "\n")
    scores = {}
    for how in ("windows", "cut"):
        out = tmp_path / f"{how}.jsonl"
        if command == "rank":
            args = ["rank", "--input", data, "--output", out]
        else:
            args = ["eval", "--dataset", f"jsonl:{data}", "--json", out]
        result = sieveqa(*args, "--model", saved_tiny, "--long-texts", how)
        assert result.exit_code == 0, result.output
        if command == "rank":
            (ranked,) = [json.loads(line) for line in out.read_text().splitlines()]
            scores[how] = {c["id"]: c["score"] for c in ranked["candidates"]}
        else:
            scores[how] = json.loads(out.read_text())["layer_units"]
    if command == "rank":
        assert scores["cut"]["short"] == pytest.approx(scores["windows"]["short"], abs=1e-5)
        assert scores["cut"]["long"] != pytest.approx(scores["windows"]["long"], abs=1e-4)
    else:
        assert 0 < scores["cut"] < scores["windows"]  # one input a text, against a window each
    given = ["--input", data] if command == "rank" else ["--dataset", f"jsonl:{data}"]
    line = one_error_line(sieveqa(command, *given, "--model", saved_tiny, "--long-texts", "half"))
    assert line == "error: --long-texts must be one of windows, cut, got 'half'"


@pytest.mark.slow  # a fresh process: imports torch
def test_output_is_written_when_the_screen_reader_goes_away(
    saved_tiny: Path, example_jsonl: Path, tmp_path: Path
) -> None:
    """`sieveqa rank -o F | head -3` exited 1 at the first line head did not read, before F was
    written: the printed answers are a preview, the file is the result."""
    import subprocess

    out = tmp_path / "ranked.jsonl"
    run = "import sys; from sieveqa.cli import main; sys.argv[0] = 'sieveqa'; main()"
    args = ["rank", "-m", str(saved_tiny), "-i", str(example_jsonl), "-o", str(out)]
    pipe = subprocess.PIPE
    proc = subprocess.Popen([sys.executable, "-c", run, *args], stdout=pipe, stderr=pipe)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == len(example_jsonl.read_text().splitlines()) and all(r["candidates"] for r in rows)


def test_a_cascade_on_short_lists_warns_that_its_ratios_drop_too_many(
    sieveqa, saved_cascade: Path, example_jsonl: Path
) -> None:
    """default-cascade ranked the shipped example's right answer third (the default: first) without a
    word: its ratios were tuned on ~140 candidates a question."""
    result = sieveqa("rank", "-m", saved_cascade, "-i", example_jsonl, "--precision", "fp32")
    assert result.exit_code == 0, result.output
    assert "warning: the cascade's drop ratios were tuned on lists of about 140 candidates" in result.output
    quiet = sieveqa("rank", "-m", saved_cascade, "-i", example_jsonl, "--precision", "fp32", "--alpha", "0")
    assert quiet.exit_code == 0 and "warning" not in quiet.output
