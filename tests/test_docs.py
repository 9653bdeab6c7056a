"""The docs match behaviour: every block of the README and the guides marked runnable runs as written,
and the docs site (MkDocs: guides, API pages from the docstrings) builds with no warning."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The pages a user copies examples from: the README and every guide.
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guides").glob("*.md"))]
TEXTS = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in PAGES}
#: A Python block right below an HTML comment ``<!-- runnable -->`` (invisible on GitHub and the site).
_BLOCK = r"<!-- runnable -->\s*```python\n(.*?)```"
FOUND = [(page, block) for page, text in TEXTS.items() for block in re.findall(_BLOCK, text, re.S)]
BLOCKS = [block for _, block in FOUND]


def test_the_readme_marks_its_python_examples_runnable() -> None:
    """The first examples a user copies: the familiar API, answer(), and one per framework."""
    assert len(BLOCKS) >= 5
    assert any("ranker.rank(" in b for b in BLOCKS) and any("answer(" in b for b in BLOCKS)
    for framework in ("langchain_core", "llama_index", "haystack"):
        assert any(framework in b for b in BLOCKS), framework
    for page, text in TEXTS.items():  # a marker above anything but a Python block is a typo
        markers = re.findall(r"^<!-- runnable -->$", text, re.M)
        assert len(markers) == len(re.findall(_BLOCK, text, re.S)), page


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[f"{page}:{i}" for i, (page, _) in enumerate(FOUND)])
def test_a_runnable_readme_block_runs_as_written(block: str, tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "a README example should show its result"


def test_every_shipped_model_has_a_card_whose_numbers_come_from_result_files() -> None:
    from sieveqa.models.zoo import SHIPPED
    from tools.docs_pages import model_cards

    page = model_cards(ROOT, SHIPPED)
    assert all(f"## `{name}`" in page for name in SHIPPED)
    assert "| WikiQA test (243) | MAP | 0.8428 |" in page  # read from the default's result file


def test_the_benchmarks_page_reads_each_claim_from_its_result_file() -> None:
    from tools.docs_pages import benchmarks

    page = benchmarks(ROOT)
    assert page.count("\n## ") >= 6  # ranking, answers, abstention, speed, service, stores
    assert "| default ranker | WikiQA test (243) | MAP | 0.8428 |" in page
    assert "![em_vs_layers](../bench/results/adaptive/v4/em_vs_layers.png)" in page


def test_every_benchmark_claim_names_the_command_that_reproduces_it() -> None:
    """Issue 63: each row's command, from its result file's record (or the row's, from RESULTS.md)."""
    from tools.docs_pages import benchmarks

    page = benchmarks(ROOT)
    rows = [line for line in page.splitlines() if line.startswith("| ") and not line.startswith("| claim")]
    assert rows
    for row in rows:
        command = row.rstrip(" |").rsplit(" | ", 1)[-1]
        assert re.fullmatch(r"`(sieveqa |python bench/).+`", command), row
    wikiqa = "sieveqa eval --model runs/default-v3/adapt/best --dataset wikiqa:test --json"
    assert f"| `{wikiqa} bench/results/tanda/v3-adapt.wikiqa_test.json` |" in page
    reader = "sieveqa eval-reader --reader reader --dataset squad-gold:test-all --method standard"
    assert f"| `{reader} --json bench/results/reader-v4/gold-test-all.json` |" in page  # from the row


def test_a_claim_without_a_command_is_refused(tmp_path: Path) -> None:
    import json

    from tools.docs_pages import BENCHMARKS, benchmarks

    (tmp_path / "docs").mkdir()
    (tmp_path / "r.json").write_text(json.dumps({"map": 0.5, "run": {"date": "d", "machine": "m"}}))
    row = {"claim": "c", "split": "s", "metric": "MAP", "file": "r.json", "key": "map"}
    spec = {"intro": "i", "sections": [{"title": "t", "rows": [row]}]}
    (tmp_path / BENCHMARKS).write_text(json.dumps(spec))
    with pytest.raises(ValueError, match=r"r\.json records no command"):
        benchmarks(tmp_path)
    row["command"] = "sieveqa eval --dataset wikiqa:test"
    (tmp_path / BENCHMARKS).write_text(json.dumps(spec))
    assert "| 0.5 | d | m | `r.json` | `sieveqa eval --dataset wikiqa:test` |" in benchmarks(tmp_path)


def test_the_readmes_benchmark_table_is_the_one_the_result_files_give() -> None:
    from tools.docs_pages import readme_table, with_readme_table

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme_table(ROOT) in readme, "run python tools/docs_pages.py to regenerate it"
    assert with_readme_table(ROOT, readme) == readme


def test_the_readmes_first_screen_says_what_it_is_for_and_what_it_takes() -> None:
    """Issue 63: the README opened with paper jargon. Before its model table it says what the tool is
    for, installs in the two commands of the Quick start, shows the commands, and states the language,
    the input length (the shipped models' own limits), the input formats and the licence."""
    import json

    from sieveqa.data.corpus_format import CorpusOptions
    from sieveqa.models.zoo import SHIPPED

    readme = TEXTS["README.md"]
    first, heading, _ = readme.partition("## Which model for what")
    assert heading
    for words in ("your own documents", "RAG", "answer sentence selection (AS2)", "## Use it"):
        assert words in first, words
    quick = re.search(r"## Quick start\n\n```bash\n(.*?)```", first, re.S)
    assert quick and [line.split()[:2] for line in quick[1].splitlines()] == [
        ["make", "demo"],
        ["make", "test"],
    ]
    assert "English" in first and "trained on English data" in first
    limit = {n: json.loads((SHIPPED[n] / "config.json").read_text())["config"]["max_length"] for n in SHIPPED}
    assert f"{limit['default']} tokens for `default`" in first
    assert f"{limit['peasi-pr']} for the passage models (`peasi-pr`" in first
    assert limit["peasi-easi"] == limit["peasi-judge"] == limit["peasi-pr"]
    assert f"`reader` ({limit['reader']})" in first
    assert f"at most {CorpusOptions().passage_tokens} tokens" in first
    for kind in ("`.txt`", "`.md`", "HTML", "PDF", "`.docx`", "JSONL"):
        assert kind in first, kind
    assert "Apache-2.0" in first and "all-MiniLM-L6-v2" in first and "all-mpnet-base-v2" in first
    assert readme.index("## Which model for what") < readme.index("| technique")  # the papers below


def test_the_readmes_model_table_is_the_one_the_cards_and_result_files_give() -> None:
    from sieveqa.models.zoo import SHIPPED
    from tools.docs_pages import readme_models, with_readme_models

    readme = TEXTS["README.md"]
    table = readme_models(ROOT, SHIPPED)
    assert table in readme, "run python tools/docs_pages.py to regenerate it"
    assert with_readme_models(ROOT, SHIPPED, readme) == readme
    rows = table.splitlines()[2:]
    assert {row.split("`")[1] for row in rows} >= {"default", "peasi-easi", "reader", "has"}
    for row in rows:  # model, task, size, speed class and number, quality with its split
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(cells) == 5 and re.match(r"[\d.]+ MB", cells[2]), row
        assert re.match(r"(fast|medium|slow): [\d.]+ ", cells[3]) and re.match(r"[\d.]+ \S", cells[4]), row
    assert "| 0.8428 MAP, WikiQA test (243) |" in table


def test_the_committed_models_and_benchmarks_pages_are_the_generated_ones() -> None:
    from sieveqa.models.zoo import SHIPPED
    from tools.docs_pages import generated_pages

    for path, text in generated_pages(ROOT, SHIPPED).items():
        assert (ROOT / path).read_text(encoding="utf-8") == text, f"run python tools/docs_pages.py ({path})"


def test_a_card_whose_result_is_missing_is_refused(tmp_path: Path) -> None:
    import json

    from tools.docs_pages import CARDS, model_cards

    (tmp_path / "docs").mkdir()
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({"sieveqa_model": "x", "config": {}}))
    card = {
        "what": "w",
        "reproduce": "make m",
        "scores": [{"set": "s", "metric": "MAP", "file": "r.json", "key": "map"}],
    }
    (tmp_path / CARDS).write_text(json.dumps({"m": card}))
    with pytest.raises(ValueError, match=r"r\.json is missing"):
        model_cards(tmp_path, {"m": tmp_path / "m"})
    (tmp_path / "r.json").write_text(json.dumps({"mrr": 0.5}))
    with pytest.raises(ValueError, match="has no 'map'"):
        model_cards(tmp_path, {"m": tmp_path / "m"})
    with pytest.raises(ValueError, match=r"none for \['other'\]"):
        model_cards(tmp_path, {"m": tmp_path / "m", "other": tmp_path / "m"})


@pytest.mark.slow
def test_the_docs_site_builds_without_a_warning(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "index.html").exists()


def _close(sample: object, served: object, tolerance: float) -> bool:
    """Equal JSON, floats within ``tolerance`` (the guide rounds them)."""
    if isinstance(sample, float | int) and isinstance(served, float) and not isinstance(sample, bool):
        return abs(sample - served) <= tolerance
    if isinstance(sample, list) and isinstance(served, list):
        return len(sample) == len(served) and all(
            _close(a, b, tolerance) for a, b in zip(sample, served, strict=True)
        )
    if isinstance(sample, dict) and isinstance(served, dict):
        return sample.keys() == served.keys() and all(_close(sample[k], served[k], tolerance) for k in sample)
    return sample == served


@pytest.mark.real
def test_the_serve_guides_sample_responses_are_what_the_service_answers() -> None:
    """Issue 63: the guide showed scores of a model shipped long before. Each curl's request goes to
    the service over the shipped default (fp32), and its answer must be the sample under it."""
    import json

    from tools.docs_pages import SAMPLE_PLACES, SERVE_GUIDE, samples, served

    found = samples((ROOT / SERVE_GUIDE).read_text(encoding="utf-8"))
    assert [route for route, _, _ in found] == ["/rerank"]
    with served() as respond:
        for route, body, sample in found:
            answer = respond(route, body)
            assert _close(json.loads(sample), answer, 10**-SAMPLE_PLACES), (
                f"{SERVE_GUIDE}: the sample under the curl to {route} is stale (python tools/docs_pages.py)"
            )


def test_a_rows_precision_must_be_the_one_its_result_file_ran_in(tmp_path: Path) -> None:
    """A bf16 speed was labelled fp32 on the README, the Models and the Benchmarks pages."""
    import json

    from tools.docs_pages import _read

    (tmp_path / "r.json").write_text(json.dumps({"precision": "bf16", "pairs_per_second": 498.9}))
    row = {"file": "r.json", "key": "pairs_per_second"}
    with pytest.raises(ValueError, match=r"the row says fp32, but r\.json ran in bf16"):
        _read(tmp_path, "card", {**row, "set": "WikiQA test, fp32 torch"})
    assert _read(tmp_path, "card", {**row, "set": "WikiQA test, bf16 torch"})[0] == "498.9"
    inner = {"torch:fp32": {"precision": "fp32", "pairs_per_second": 229.5}}
    (tmp_path / "n.json").write_text(json.dumps({"results": inner, "precision": "bf16"}))
    key = "results.torch:fp32.pairs_per_second"  # the nearest record along the key's path counts
    assert _read(tmp_path, "b", {"file": "n.json", "key": key, "claim": "torch fp32"})[0] == "229.5"
