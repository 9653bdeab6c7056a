"""The reader methods take their settings from the reader's saved policy unless a flag says otherwise,
and the answer across passages weighs the has-answer probability as told."""

from pathlib import Path

import pytest
import torch

from sieveqa.errors import ConfigError
from sieveqa.models.reader import ReaderConfig, ReaderModel, SpanGuess
from sieveqa.models.skyline_policy import PolicyConfig, SkylinePolicy
from sieveqa.runtime.answer.method import ModelSettings
from sieveqa.runtime.answer.reader_policy import SCHEDULER_FOLDER, ReaderPolicy
from sieveqa.runtime.answer.reading import Reader, Skyline, SkylineOptions, Tower, TowerOptions
from sieveqa.runtime.answer.schedulers import Schedule, answer
from sieveqa.runtime.answer.towers import ReplayTowers

SETTINGS = ModelSettings(device="cpu", precision="fp32")


@pytest.fixture(scope="module")
def reader_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("reader") / "r"
    policy = ReaderPolicy(has_weight=0.5, threshold=0.7, budget=1.5, tower_m=4, skyline_m=2, learned_m=3)
    ReaderModel(ReaderConfig(backbone="tiny", max_length=24)).save_pretrained(
        folder, policy=policy.to_dict() | {"scheduler": SCHEDULER_FOLDER}
    )
    SkylinePolicy(PolicyConfig(depth=4)).save_pretrained(folder / SCHEDULER_FOLDER)
    return folder


def test_skyline_uses_the_readers_scheduler_and_settings(reader_folder: Path) -> None:
    method = Skyline.load(SkylineOptions(reader=str(reader_folder), judge="none"), SETTINGS)
    assert method.schedule == Schedule("learned", budget=1.5, m=3, has_weight=0.5)
    assert method.policy is not None
    assert method.model_names == {
        "reader": str(reader_folder),
        "scheduler": f"{reader_folder}/{SCHEDULER_FOLDER}",
    }


def test_the_readers_scheduler_is_used_only_where_dev_preferred_it(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    ReaderModel(ReaderConfig(backbone="tiny", max_length=24)).save_pretrained(
        folder,
        policy=ReaderPolicy(
            budget=0.5, skyline_m=1, learned_m=3, scheduler=SCHEDULER_FOLDER, learned=False
        ).to_dict(),
    )
    SkylinePolicy(PolicyConfig(depth=4)).save_pretrained(folder / SCHEDULER_FOLDER)
    plain = Skyline.load(SkylineOptions(reader=str(folder), judge="none"), SETTINGS)
    assert (
        plain.schedule.method == "skyline" and plain.policy is None and "scheduler" not in plain.model_names
    )
    asked = Skyline.load(SkylineOptions(reader=str(folder), scheduler="learned", judge="none"), SETTINGS)
    assert asked.schedule == Schedule("learned", budget=0.5, m=3) and asked.policy is not None
    assert asked.model_names["scheduler"] == f"{folder}/{SCHEDULER_FOLDER}"


def test_flags_override_the_readers_policy(reader_folder: Path) -> None:
    options = SkylineOptions(
        reader=str(reader_folder), scheduler="none", budget=0.5, has_weight=2.0, judge="none"
    )
    method = Skyline.load(options, SETTINGS)
    assert method.schedule == Schedule("skyline", budget=0.5, m=2, has_weight=2.0)
    assert method.policy is None
    tower = Tower.load(TowerOptions(reader=str(reader_folder), m=1, judge="none"), SETTINGS)
    assert tower.schedule == Schedule("tower", threshold=0.7, m=1, has_weight=0.5)


def test_a_reader_without_a_policy_takes_the_defaults(tmp_path: Path) -> None:
    ReaderModel(ReaderConfig(backbone="tiny", max_length=24)).save_pretrained(tmp_path / "r")
    method = Skyline.load(SkylineOptions(reader=str(tmp_path / "r"), judge="none"), SETTINGS)
    assert method.schedule == Schedule("skyline", budget=2.0, m=1, has_weight=1.0) and method.policy is None
    assert Reader.load(
        SkylineOptions(reader=str(tmp_path / "r"), judge="none"), SETTINGS
    ).schedule == Schedule("standard")


def test_a_policy_naming_a_scheduler_outside_the_reader_is_refused(tmp_path: Path) -> None:
    ReaderModel(ReaderConfig(backbone="tiny", max_length=24)).save_pretrained(
        tmp_path / "r", policy=ReaderPolicy(scheduler="../elsewhere").to_dict()
    )
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(
        ConfigError, match=r"policy.json: scheduler '../elsewhere' is not a folder in the reader's"
    ):
        Skyline.load(SkylineOptions(reader=str(tmp_path / "r"), judge="none"), SETTINGS)


def test_the_has_weight_trades_the_passage_against_the_span() -> None:
    # Tower 0: sure it has the answer, unsure of the span; tower 1 the other way round.
    table = [[SpanGuess(4.0, 0, 3, -3.0)], [SpanGuess(-2.0, 5, 9, -0.5)]]
    towers = ReplayTowers(table, depth=1, exits=[1])
    towers.finish([0, 1])
    assert answer(towers, Schedule("standard", has_weight=0.0)).tower == 1  # the span alone
    assert answer(towers, Schedule("standard", has_weight=1.0)).tower == 1  # -3.02 against -2.63
    assert answer(towers, Schedule("standard", has_weight=2.0)).tower == 0  # -3.04 against -4.76
    with pytest.raises(ConfigError, match="--has-weight must be a finite number >= 0"):
        Schedule("standard", has_weight=-1.0)


def test_a_judge_reads_the_answers_passage_whatever_the_budget(reader_folder: Path, saved_tiny: Path) -> None:
    from sieveqa.data.corpus_format import IndexedPassage

    texts = ["Paris is the capital of France.", "Bananas are yellow.", "Cats sleep a lot."]
    passages = [IndexedPassage(str(i), "d", "", t, ((0, len(t)),)) for i, t in enumerate(texts)]
    question = "What is the capital of France?"
    assert SkylineOptions().judge == TowerOptions().judge == "peasi-judge"  # as the sentence methods'
    plain = Skyline.load(SkylineOptions(reader=str(reader_folder), judge="none"), SETTINGS)
    assert plain.signals == () and "judge" not in plain.model_names  # none: a reader's cost is its own
    alone = plain.run(question, passages, 1)
    assert alone.answers[0].signals is None
    method = Skyline.load(SkylineOptions(reader=str(reader_folder), judge=str(saved_tiny)), SETTINGS)
    assert method.signals == ("judge",) and method.model_names["judge"] == str(saved_tiny)
    for m in (method, method.with_settings(budget=0.5)):
        run = m.run(question, passages, 1)
        best = run.answers[0]
        logit = m.judge.score_matrix([question], [best.passage.text], windows=True)[0][0, -1]
        assert best.signals == {"judge": pytest.approx(float(logit))}
    same = method.run(question, passages, 1)
    assert same.answers[0].passage == alone.answers[0].passage  # the judge reads; it does not choose
    assert same.cost.sequences == alone.cost.sequences + 1  # one more (question, passage) pair
