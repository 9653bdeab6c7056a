"""``sieveqa data``, ``sieveqa backbones`` and the top-level help."""

import pytest

from tests.cli.conftest import one_error_line


def test_help_explains_commands(sieveqa) -> None:
    result = sieveqa("--help")
    assert result.exit_code == 0
    for command in ("train", "eval", "rank", "retrofit", "tune-cascade", "backbones", "data", "index"):
        assert command in result.output


def test_a_commands_help_says_each_default_once_and_offers_no_shell_completion(sieveqa) -> None:
    # the settings' options were made through a throwaway app that added --install-completion to
    # every command with them, and a help that named its default got "(default: none)" after it
    text = " ".join(sieveqa("answer", "--help").output.replace("│", " ").split())
    assert "completion" not in text
    assert "(default: the reranker's own, else peasi-easi)" in text
    assert "peasi-easi) (default: none)" not in text


@pytest.mark.slow
def test_no_commands_help_shows_docstring_markup(sieveqa) -> None:
    # a command's docstring is its help: eval-reader's showed ``--live``
    import typer

    from sieveqa.cli import app

    def paths(command, path: list[str]) -> list[list[str]]:
        subs = getattr(command, "commands", None)
        return [p for n, c in subs.items() for p in paths(c, [*path, n])] if subs else [path]

    every = paths(typer.main.get_command(app), [])
    assert len(every) > 20
    assert [p for p in every if "``" in sieveqa(*p, "--help").output] == []


def test_backbones_lists_registered_names(sieveqa) -> None:
    result = sieveqa("backbones", "--no-verify")
    assert result.exit_code == 0, result.output
    for name in ("minilm-l6", "minilm-l3", "mpnet-12", "tiny"):
        assert name in result.output


def test_data_build_unknown_benchmark(sieveqa) -> None:
    assert (
        one_error_line(sieveqa("data", "build", "asnq"))
        == "error: unknown benchmark 'asnq'; known: squad-as2, squad-train-as2, squad-train-passages, "
        "squad-open-train, squad2-open, squad2-passages, squad-unanswerable"
    )


def test_an_open_domain_build_reports_its_passages(sieveqa, monkeypatch) -> None:
    """Its manifest counts passages, not candidates: the summary used to end in a KeyError."""
    import sieveqa.data.squad_open as module

    info = {"questions": 4, "passages": 22, "with_answer": 5, "sha256": "0"}
    monkeypatch.setattr(module, "build_squad_open_train", lambda **_: {"files": {"train.jsonl.gz": info}})
    result = sieveqa("data", "build", "squad-open-train")
    assert result.exit_code == 0, result.output
    assert "train.jsonl.gz: 4 questions, 5.5 passages/question, 5 with an answer" in result.output


def test_data_build_passes_top_k_to_the_named_builder(sieveqa, monkeypatch) -> None:
    import sieveqa.data.squad_train_as2 as module

    calls = []
    info = {"questions": 3, "mean_candidates": 4.0, "positives": 2}

    def fake(**kwargs):
        calls.append(kwargs)
        return {"files": {"train.jsonl.gz": info}}

    monkeypatch.setattr(module, "build_squad_train_as2", fake)
    result = sieveqa("data", "build", "squad-train-as2", "--top-k", "2")
    assert result.exit_code == 0, result.output
    assert calls == [{"force": False, "train_top_k": 2}]  # --top-k is the training split's depth
    assert "train.jsonl.gz: 3 questions, 4.0 candidates/question, 2 positives" in result.output


def test_usage_errors_are_one_line_too(sieveqa) -> None:
    assert one_error_line(sieveqa("eval", "--batch-size", "many")).startswith(
        "error: Invalid value for '--batch-size'"
    )
    assert one_error_line(sieveqa("rank")).startswith("error: Missing option '--input'")
    assert one_error_line(sieveqa("evaluate")).startswith("error: No such command 'evaluate'")


def test_data_build_without_the_squad_file_is_one_line(sieveqa, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SIEVEQA_DATA", str(tmp_path))
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    line = one_error_line(sieveqa("data", "build", "squad-train-as2"))
    missing = tmp_path / "squad" / "train-v1.1.json.gz"
    assert line == f"error: {missing}: no such SQuAD file (SIEVEQA_DATA names the data folder)"
    assert (
        one_error_line(sieveqa("data", "build", "squad-as2", "--top-k", "0"))
        == "error: --top-k must be >= 1, got 0"
    )
