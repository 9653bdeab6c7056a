"""Answering methods as one registry: a method is one file plus one registration, and its options
reach Python, the command line and the checks without being written anywhere else."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from sieveqa import registry
from sieveqa.data.corpus import CorpusIndex, CorpusOptions
from sieveqa.errors import ConfigError
from sieveqa.runtime.answer.answerer import load_answerer, method_names
from sieveqa.runtime.answer.fusion import default_fusion
from tests.cli.conftest import Runner, one_error_line, rebuild_app
from tests.fakes import DOCS

ECHO = '''
    """A method that answers with a chosen sentence of the first passage."""

    from dataclasses import dataclass, field

    from sieveqa.runtime.answer.method import AnswerMethod, AnswerRun, Found, MethodOptions


    @dataclass(frozen=True)
    class EchoOptions(MethodOptions):
        pick: int = field(default=0, metadata={"help": "which sentence of the first passage"})


    class Echo(AnswerMethod):
        name = "echo"
        options_class = EchoOptions

        def __init__(self, pick: int) -> None:
            self.pick = pick

        @classmethod
        def load(cls, options, settings):
            method = cls(options.pick)
            method.model_names = {}
            return method

        def run(self, question, passages, top):
            first = passages[0]
            return AnswerRun([Found(first, min(self.pick, len(first.spans) - 1), 1.0)], None, None)
'''


@pytest.fixture
def echo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The echo method, written to a temporary module and registered for this test only."""
    from sieveqa.cli.answer import method_settings

    (tmp_path / "echo_method.py").write_text(textwrap.dedent(ECHO))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_METHODS", dict(registry._METHODS))
    registry.register_method(registry.MethodSpec("echo", "echo_method:Echo", "a chosen sentence"))
    method_settings.cache_clear()
    rebuild_app()
    yield CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=64))
    method_settings.cache_clear()
    rebuild_app()
    sys.modules.pop("echo_method", None)


def test_a_method_from_a_new_module_answers_from_python_and_the_command_line(echo) -> None:
    assert "echo" in method_names()
    answer = load_answerer("echo", str(echo.path), pick=5).answer("the answer about cats?")
    assert answer.best.text == answer.passages[0].sentences[-1]  # as far as the passage goes
    first = load_answerer("echo", str(echo.path)).answer("the answer about cats?")
    assert first.best.text == first.passages[0].sentences[0]  # the option's default
    assert first.best.text != answer.best.text  # the option reached the method
    result = Runner()(
        "answer", "the answer about cats?", "--index", echo.path, "--method", "echo", "--pick", 0, "--json"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["answers"][0]["answer"] == first.best.text
    line = one_error_line(Runner()("answer", "q?", "--index", echo.path, "--pick", 1))
    assert line == "error: --pick is not an option of --method peasi (it is for echo)"
    with pytest.raises(ConfigError, match="field 'pick'"):
        load_answerer("echo", str(echo.path), pick="many")


def test_a_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="'peasi' is registered already"):
        registry.register_method(registry.MethodSpec("peasi", "x:Y"))


def test_every_registered_method_declares_its_options_with_help() -> None:
    import dataclasses

    for spec in registry.answer_methods():
        cls = spec.method_class()
        assert cls.name == spec.name
        for f in dataclasses.fields(cls.options_class):
            assert f.metadata.get("help"), (spec.name, f.name)
    assert str(default_fusion("pointwise")) == "interp:0.1" and str(default_fusion("skyline")) == "none"
