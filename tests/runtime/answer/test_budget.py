"""--budget-ms: the measured setting chosen for a budget, on a loaded answerer and before loading."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sieveqa.data.corpus import CorpusIndex, CorpusOptions
from sieveqa.errors import ConfigError, ModelFormatError
from sieveqa.exported.choice import cpu_kind
from sieveqa.runtime.answer import budget
from sieveqa.runtime.answer.answerer import Answerer, load_answerer
from sieveqa.runtime.answer.budget import Setting, choose, load_settings
from sieveqa.runtime.answer.sentence import Cascade
from tests.fakes import DOCS, TOP_PASSAGE


def _setting(p50: float, p_at_1: float, method: str = "cascade", **kw) -> Setting:
    retrieve, system = kw.pop("retrieve", 10), kw.pop("system", "torch:fp32")
    return Setting(method, retrieve, system, kw.pop("drop_ratios", (0.3,)), p50, p_at_1, **kw)


def _table(tmp_path: Path, monkeypatch, rows: list[dict], kind: str | None = None) -> Path:
    path = tmp_path / "budgets.json"
    path.write_text(json.dumps({kind or cpu_kind(): {"settings": rows}}))
    monkeypatch.setattr(budget, "BUDGETS", path)
    return path


def test_the_best_p_at_1_within_the_budget_then_the_faster() -> None:
    rows = [_setting(100, 0.70), _setting(200, 0.80), _setting(150, 0.80), _setting(400, 0.90)]
    chosen = choose(250, "cascade", rows)
    assert [c.setting.p50_ms for c in chosen] == [150, 200, 100, 400]
    assert all(c.note == "" for c in chosen[:3])
    assert "no measured setting answers within 250 ms; this one took 400 ms" in chosen[3].note


def test_a_budget_nothing_meets_gets_the_fastest_and_says_so() -> None:
    chosen = choose(50, "cascade", [_setting(300, 0.9), _setting(120, 0.6)])
    assert chosen[0].setting.p50_ms == 120 and "within 50 ms" in chosen[0].note


def test_bad_budgets_and_unmeasured_methods_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"^--budget-ms must be a positive number of milliseconds, got 0$"):
        choose(0, "cascade", [_setting(1, 1)])
    with pytest.raises(ConfigError, match=r"^--budget-ms: nan is not a number"):  # was: "got nan"
        choose(float("nan"), "cascade", [_setting(1, 1)])
    with pytest.raises(ConfigError, match=r"^--budget-ms: no settings measured for --method peasi$"):
        choose(100, "peasi", [_setting(1, 1)])
    with pytest.raises(ConfigError, match=r"no settings measured for --method cascade on openvino:int8$"):
        choose(100, "cascade", [_setting(1, 1)], system="openvino:int8")


def test_settings_of_another_cpu_kind_are_a_guide_and_say_so(tmp_path) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"amx": {"settings": [_setting(1, 1).as_dict()]}}))
    rows, note = load_settings("avx2", path)
    assert (
        rows == [_setting(1, 1)]
        and note == "latencies measured on a amx CPU, not on this avx2 one: a guide only"
    )
    path.write_text(json.dumps({"avx2": {"settings": [{"method": "cascade"}]}}))
    with pytest.raises(ModelFormatError, match=r"b\.json \[avx2\]: a budget setting is malformed"):
        load_settings("avx2", path)
    with pytest.raises(ConfigError, match=r"no settings measured \(.*missing; run bench/budget\.py\)"):
        load_settings("avx2", tmp_path / "none.json")


def test_bf16_settings_become_fp32_estimates_where_the_cpu_has_no_native_bf16(tmp_path, monkeypatch) -> None:
    """An unmeasured CPU fell back to the amx table's torch:bf16 (emulated here: 40x slower per
    matmul), and a server at torch:fp32 had no setting at all (issue 42)."""
    from sieveqa.exported import choice

    speeds = tmp_path / "backends.json"
    rows = {"torch:fp32": {"pairs_per_second": 100.0}, "torch:bf16": {"pairs_per_second": 250.0}}
    speeds.write_text(json.dumps({"amx": {"rows": rows}}))
    monkeypatch.setattr(choice, "CHOICES", speeds)
    bf16, int8 = _setting(80, 0.8, system="torch:bf16"), _setting(60, 0.8, system="openvino:int8")
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"amx": {"settings": [bf16.as_dict(), int8.as_dict()]}}))
    estimate = "p50 estimated: torch:bf16's x 2.50, the pairs/s ratio measured on amx"
    got, _ = load_settings("avx2", path, native=False)
    assert [(s.system, s.p50_ms, s.estimated) for s in got] == [
        ("openvino:int8", 60, ""),
        ("torch:fp32", 200, estimate),
    ]
    assert choose(300, "cascade", got, system="torch:fp32")[0].note == estimate
    with_native, _ = load_settings("amx", path, native=True)
    assert [s.system for s in with_native] == ["torch:bf16", "openvino:int8", "torch:fp32"]


def test_a_loaded_answerer_moves_its_passages_and_drop_ratio(tmp_path, monkeypatch, tiny_cascade) -> None:
    from sieveqa.runtime.cascade import CascadeRanker

    index = CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))
    answerer = Answerer(Cascade(CascadeRanker(tiny_cascade, drop_ratios=0.0)), index, retrieve=20)
    fast = _setting(40, 0.5, retrieve=2, drop_ratios=(0.5, 0.4, 0.3))
    slow = _setting(400, 0.9, retrieve=20, drop_ratios=(0.0,))
    other = _setting(10, 1.0, system="openvino:int8")  # not this answerer's backend
    _table(tmp_path, monkeypatch, [s.as_dict() for s in (fast, slow, other)])
    quick = answerer.within(100)
    assert quick.retrieve == 2 and quick.method.ranker.drop_ratios == [0.5, 0.4, 0.3]
    assert quick.budget is not None and quick.budget.setting == fast
    got = quick.answer("the answer about rain?")
    assert len(got.passages) == 2 and got.budget == quick.budget
    assert answerer.retrieve == 20 and answerer.method.ranker.drop_ratios == [0.0, 0.0, 0.0]  # unchanged
    assert answerer.within(1000).retrieve == 20


def test_load_answerer_skips_a_setting_whose_export_is_missing(tmp_path, monkeypatch, tiny_cascade) -> None:
    folder = tiny_cascade.save_pretrained(tmp_path / "tiny-cascade")
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    index = CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))
    models = {"judge": "none", "ranker": str(folder)}  # the settings name their models (sorted), judge too
    best = _setting(50, 0.9, system="openvino:int8", options=tuple(models.items()))
    works = _setting(80, 0.8, retrieve=3, options=tuple(models.items()))
    _table(tmp_path, monkeypatch, [best.as_dict(), works.as_dict()])
    answerer = load_answerer("cascade", str(index.path), budget_ms=100)
    assert answerer.budget.setting == works and answerer.retrieve == 3  # int8 was never exported here
    assert answerer.method.ranker.ranker.drop_ratios == [0.3, 0.3, 0.3]
    with pytest.raises(
        ConfigError,
        match=r"^--budget-ms chooses the method's settings itself \(timed for its shipped models only\); "
        r"drop --ranker$",
    ):
        load_answerer("cascade", str(index.path), budget_ms=100, ranker=str(folder))
    with pytest.raises(ConfigError, match=r"only\); drop --fusion$"):  # the table measured its own fusion
        load_answerer("cascade", str(index.path), budget_ms=100, fusion="none")


def test_a_hand_built_peasi_moves_its_drop_ratios(tmp_path, monkeypatch, tiny_cascade) -> None:
    from sieveqa.runtime.answer.peasi import Peasi
    from sieveqa.runtime.cascade import CascadeRanker
    from tests.fakes import KeywordSelector

    index = CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))
    answerer = Answerer(
        Peasi(CascadeRanker(tiny_cascade, drop_ratios=0.0), KeywordSelector(), options=TOP_PASSAGE), index
    )
    looked = _setting(30, 0.9, method="peasi", retrieve=3, drop_ratios=(0.5,))  # defaults: a second look
    _table(tmp_path, monkeypatch, [looked.as_dict()])
    with pytest.raises(ConfigError, match=r"runs on this answerer \(--second-look: the point-wise ranker"):
        answerer.within(100)  # it was measured with PEASI's second look, which this one did not load
    top = (("bm25_weight", 0.0), ("read", 1), ("second_look", 0))  # the hand-built one's choice
    row = _setting(40, 0.5, method="peasi", retrieve=3, drop_ratios=(0.5,), options=top)
    _table(tmp_path, monkeypatch, [looked.as_dict(), row.as_dict()])
    quick = answerer.within(100)  # a method without model names (built by hand) raised AttributeError
    assert quick.method.reranker.drop_ratios == [0.5, 0.5, 0.5] and quick.retrieve == 3
    assert quick.budget.setting == row and quick.method.options == TOP_PASSAGE


def test_a_methods_system_is_found_through_its_fusion(tiny_model, tiny_cascade) -> None:
    from sieveqa.runtime.answer.sentence import Pointwise
    from sieveqa.runtime.cascade import CascadeRanker

    assert Pointwise(tiny_model, "interp:0.1").system == "torch:fp32"  # the first sweep said none:none
    assert Cascade(CascadeRanker(tiny_cascade), "rrf:0.05").system == "torch:fp32"
    assert Pointwise(tiny_model).system == "torch:fp32"


def test_an_answerer_whose_models_were_never_measured_is_told_so(tmp_path, monkeypatch, tiny_cascade) -> None:
    """PEASI's defaults (models by role) changed after its grid was measured: within() names both."""
    from sieveqa.runtime.cascade import CascadeRanker

    index = CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))
    method = Cascade(CascadeRanker(tiny_cascade, drop_ratios=0.0))
    method.model_names = {"ranker": "my-cascade", "judge": "peasi-judge"}
    measured = _setting(40, 0.5, models=(("ranker", "default-cascade"),))
    _table(tmp_path, monkeypatch, [measured.as_dict()])
    with pytest.raises(
        ConfigError, match=r"measured with ranker default-cascade, not ranker my-cascade, judge peasi-judge;"
    ):
        Answerer(method, index).within(100)
    method.model_names = {"ranker": "default-cascade"}
    assert Answerer(method, index).within(100).budget.setting == measured


def test_a_budget_keeps_the_confidence_first_and_says_when_it_drops_the_judge(
    tmp_path, monkeypatch, tiny_cascade
) -> None:
    """The judge and the second look are stages a budget accounts for: a setting measured without
    the judge runs on an answerer loaded with one, only when no setting that keeps its calibrated
    confidence fits, and the answer says what was dropped."""
    from sieveqa.runtime.answer.confidence import Confidence
    from sieveqa.runtime.cascade import CascadeRanker
    from tests.fakes import LengthJudge

    index = CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))
    judge = LengthJudge()
    method = Cascade(CascadeRanker(tiny_cascade, drop_ratios=0.0), judge=judge)  # type: ignore[arg-type]
    method.model_names = {"ranker": "default-cascade", "judge": "peasi-judge"}
    calibrated = Confidence(0.0, -1.0, 0.2, dict(method.model_names), signals={"passage": 0.01})
    answerer = Answerer(method, index, retrieve=20, confidence=calibrated)
    judged = _setting(200, 0.80, models=(("judge", "peasi-judge"), ("ranker", "default-cascade")))
    quick = _setting(50, 0.85, retrieve=2, models=(("ranker", "default-cascade"),))  # better, no judge
    _table(tmp_path, monkeypatch, [judged.as_dict(), quick.as_dict()])
    roomy = answerer.within(300)
    assert roomy.budget.setting == judged and roomy.confidence is calibrated and roomy.budget.note == ""
    assert roomy.answer("the answer about rain?").confidence is not None and len(judge.read) == 1
    tight = answerer.within(100)
    assert tight.budget.setting == quick and tight.confidence is None and tight.min_confidence == 0.0
    assert (
        tight.budget.note
        == "this setting drops the judge: no calibrated confidence, the answer never abstains"
    )
    got = tight.answer("the answer about rain?")
    assert got.confidence is None and got.answered and len(judge.read) == 1  # no judge pass
    assert got.budget.note == tight.budget.note and "judge" not in tight.method.model_names
    assert answerer.confidence is calibrated and answerer.method.judge is judge  # the loaded one unchanged
    # A method without the judge given by hand: its answers carry no judge signal, so no confidence.
    by_hand = answerer.with_method(method.lightened(judge="none"))
    assert by_hand.confidence is None and by_hand.answer("the answer about rain?").answered  # was: an error


def test_a_settings_options_keep_their_json_types() -> None:
    """PEASI's settings pin read 1 and BM25 weight 0.0: as strings its typed options refused them."""
    setting = Setting.from_dict(
        {"method": "peasi", "retrieve": 5, "system": "torch:bf16", "p50_ms": 90, "p_at_1": 0.8,
         "options": {"read": 1, "bm25_weight": 0.0, "judge": "none"}, "models": {"reranker": "peasi-pr"}},
        "budgets.json",
    )  # fmt: skip
    options = setting.load_options()
    assert (options["read"], options["bm25_weight"], options["judge"]) == (1, 0.0, "none")
    assert type(options["read"]) is int and type(options["bm25_weight"]) is float
    assert setting.models == (("reranker", "peasi-pr"),)


def test_load_answerer_prefers_a_setting_its_confidence_was_fitted_for(
    tmp_path, monkeypatch, tiny_cascade
) -> None:
    from sieveqa.runtime.answer.confidence import Confidence, save_confidence

    fitted, other = (tiny_cascade.save_pretrained(tmp_path / name) for name in ("fitted", "other"))
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    index = CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))
    calibration = tmp_path / "confidence.json"
    save_confidence(calibration, "cascade", Confidence(1.0, 0.0, 0.1, {"ranker": str(fitted)}))
    rows = [
        _setting(
            80, 0.80, options=(("judge", "none"), ("ranker", str(fitted))), models=(("ranker", str(fitted)),)
        ),
        _setting(
            60, 0.90, options=(("judge", "none"), ("ranker", str(other))), models=(("ranker", str(other)),)
        ),
    ]
    _table(tmp_path, monkeypatch, [r.as_dict() for r in rows])
    from sieveqa.runtime.answer import confidence

    monkeypatch.setattr(confidence, "SHIPPED_CONFIDENCE", calibration)  # abstention is not asked for
    answerer = load_answerer("cascade", str(index.path), budget_ms=100)
    assert answerer.budget.setting == rows[0] and answerer.confidence is not None  # was: the better P@1
    assert load_answerer("cascade", str(index.path), budget_ms=70).budget.setting == rows[1]  # only it fits


def test_a_settings_levers_are_relative_to_the_defaults_and_say_when_the_confidence_holds() -> None:
    """A row names only what it moves from the method's defaults: an answerer loaded with read 1 runs
    the default row at read 3 (it used to keep read 1 and claim the row's numbers), and a calibration
    (fitted at the defaults) holds at a row only for its own models with every lever at its default."""
    from sieveqa.runtime.answer.confidence import Confidence
    from sieveqa.runtime.answer.peasi import Peasi
    from tests.fakes import KeywordRanker, KeywordSelector

    method = Peasi(KeywordRanker(), KeywordSelector(), options=replace(TOP_PASSAGE, second_look=2),
                   look=KeywordRanker(), judge=KeywordRanker())  # type: ignore[arg-type]  # fmt: skip
    method.model_names = {"reranker": "r", "selector": "s", "second_look": "k", "judge": "j"}
    models = tuple(sorted(method.model_names.items()))
    default_row = _setting(100, 0.9, method="peasi", drop_ratios=None, models=models)
    assert default_row.levers(method) == {
        "read": 3,
        "second_look": 3,
        "bm25_weight": 1.0,
        "sentence_bm25_weight": 0.0,
    }
    unlooked = tuple(sorted((k, v) for k, v in method.model_names.items() if k != "second_look"))
    named = _setting(
        50, 0.8, method="peasi", drop_ratios=None, models=unlooked,
        options=(("judge", "j"), ("read", 1), ("second_look", 0)),
    )  # fmt: skip
    assert named.runs_on(method) and named.levers(method)["judge"] == "j"
    light = method.lightened(**named.levers(method))
    assert light.judge is method.judge and light.look is None and light.options.read == 1
    fitted = Confidence(1.0, 0.0, 0.5, dict(method.model_names), signals={"judge": 1.0})
    assert default_row.keeps_confidence(fitted, Peasi)
    assert not named.keeps_confidence(fitted, Peasi)  # another choice, and no second look
    moved = _setting(60, 0.8, method="peasi", drop_ratios=None, options=(("read", 1),), models=models)
    assert not moved.keeps_confidence(fitted, Peasi) and not default_row.keeps_confidence(None, Peasi)
    from sieveqa.runtime.answer.budget import Choice
    from sieveqa.runtime.answer.budgeted import run_at

    _, choice, keeps = run_at(method, fitted, Choice(moved, 100))
    assert (
        not keeps
        and choice.note
        == "this setting moves the answer's choice: no calibrated confidence, the answer never abstains"
    )
    _, choice, keeps = run_at(method, fitted, Choice(default_row, 100))
    assert keeps and choice.note == ""


def test_abstention_asked_of_a_budget_that_cannot_keep_it_is_refused_by_name(
    tmp_path, monkeypatch, tiny_cascade
) -> None:
    """answer --budget-ms 150 --min-confidence 0.3 said "no settings measured for --method peasi"
    where settings were measured, none of them keeping the confidence."""
    from sieveqa.runtime.answer import confidence
    from sieveqa.runtime.answer.confidence import Confidence, save_confidence

    folder = tiny_cascade.save_pretrained(tmp_path / "fitted")
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    index = CorpusIndex.build(DOCS, tmp_path / "idx", CorpusOptions(passage_tokens=8))
    calibration = tmp_path / "confidence.json"
    save_confidence(calibration, "cascade", Confidence(1.0, 0.0, 0.1, {"ranker": str(folder), "judge": "j"}))
    monkeypatch.setattr(confidence, "SHIPPED_CONFIDENCE", calibration)
    row = _setting(
        60, 0.9, options=(("judge", "none"), ("ranker", str(folder))), models=(("ranker", str(folder)),)
    )
    _table(tmp_path, monkeypatch, [row.as_dict()])
    with pytest.raises(
        ConfigError, match=r"^--budget-ms: no setting measured for --method cascade keeps the calibrated"
    ):
        load_answerer("cascade", str(index.path), budget_ms=100, min_confidence=0.3)
    answerer = load_answerer("cascade", str(index.path), budget_ms=100)
    assert answerer.budget.setting == row and answerer.confidence is None  # not asked: it may drop it
    # and says what it dropped (it said "no confidence is calibrated for these models", wrongly)
    assert answerer.budget.note.startswith(
        "this setting drops the judge: no calibrated confidence, the answer never abstains "
        "(no setting measured for cascade here keeps it"
    )
