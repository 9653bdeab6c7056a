"""Every technique's model runs on an exported body and scores as in torch: its exits, two bodies
(PEASI), stored-answer encodings (HAS) and the reader's spans at every exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from sieveqa import registry
from sieveqa.data.records import Candidate, Question, RankingExample

pytest.importorskip("onnxruntime")

EXAMPLES = [
    RankingExample(
        Question("q1", "who wrote hamlet"),
        [
            Candidate("a", "Hamlet is a tragedy by William Shakespeare.", 1),
            Candidate("b", "Paris is in France.", 0),
        ],
    ),
    RankingExample(
        Question("q2", "how tall is the eiffel tower"),
        [
            Candidate("c", "The tower is 330 metres tall."),
            Candidate("d", "It opened in 1889."),
            Candidate("e", "Lima."),
        ],
    ),
]


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))


def _tiny(kind: str, **settings):
    cls = registry.technique(kind).model_class()
    return cls(cls.config_class(backbone="tiny", max_length=64, **settings)).configure(
        device="cpu", precision="fp32"
    )


@pytest.mark.parametrize(
    ("kind", "settings"),
    [("cascade", {}), ("easi", {}), ("hashing", {}), ("multihead", {})],
)
def test_rankers_score_as_in_torch(kind: str, settings: dict) -> None:
    model = _tiny(kind, **settings)
    reference = model.run(EXAMPLES).scores
    model.configure(backend="onnx")
    assert model.encoder.runner is not None
    for got, want in zip(model.run(EXAMPLES).scores, reference, strict=True):
        assert got == pytest.approx(want, abs=1e-4)


@pytest.mark.slow
def test_the_reader_reads_the_same_spans_at_every_exit() -> None:
    reader = _tiny("reader", stride=16)
    passages = [["Hamlet is a tragedy written by William Shakespeare around 1600.", "Rome."]]
    (reference,), _ = reader.read(["who wrote hamlet"], passages)
    reader.configure(backend="onnx")
    (got,), _ = reader.read(["who wrote hamlet"], passages)
    for mine, theirs in zip(got, reference, strict=True):
        assert [(g.start, g.end) for g in mine] == [(g.start, g.end) for g in theirs]
        assert [g.score for g in mine] == pytest.approx([g.score for g in theirs], abs=1e-4)


@pytest.mark.slow
def test_peasi_with_two_bodies_runs_both_exported() -> None:
    model = _tiny("peasi", sharing="mtl1")
    passages = [[c.text for c in ex.candidates] for ex in EXAMPLES]
    questions = [ex.question.text for ex in EXAMPLES]
    ranked, _ = model.score_passages(questions, passages)
    selected, _ = model.select(questions, passages)
    model.configure(backend="onnx")
    assert model.encoder.runner is not None and model.easi_body.runner is not None
    assert model.score_passages(questions, passages)[0] == pytest.approx(ranked, abs=1e-4)
    for got, want in zip(model.select(questions, passages)[0], selected, strict=True):
        assert got == pytest.approx(want, abs=1e-4)


@pytest.mark.slow
def test_export_command_covers_both_bodies_of_peasi(tmp_path: Path) -> None:
    """`sieveqa export --int8` exported only the first body; the second's int8 was then always missing."""
    from tests.cli.conftest import Runner

    model = _tiny("peasi", sharing="mtl1")
    saved = model.save_pretrained(tmp_path / "peasi")
    data = tmp_path / "cal.jsonl"
    data.write_text(
        '{"qid": "a", "question": "who wrote hamlet", "candidates": [{"id": "x", "text": "Shakespeare."}, '
        '{"id": "y", "text": "Paris is in France."}]}\n'
    )
    result = Runner()("export", saved, "--int8", "--calibrate", data, "--rows", "8")
    assert result.exit_code == 0, result.output
    assert result.output.count("onnx int8) to") == 2
    model.configure(backend="onnx", precision="int8")
    assert model.encoder.runner is not None and model.easi_body.runner is not None
