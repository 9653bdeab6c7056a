"""``sieveqa train`` and ``retrofit``: options from the configs, --config files, checks before work."""

import json
from pathlib import Path

import pytest
from filelock import FileLock

from tests.cli.conftest import one_error_line


def _train(sieveqa, data: Path, out: Path, *flags: str):
    jsonl = f"jsonl:{data}"
    return sieveqa(
        "train", "--train", jsonl, "--init", "tiny", "--dev", jsonl, "--out", out, "--no-progress", *flags
    )


def test_train_then_rank_with_tiny_backbone(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = _train(sieveqa, example_jsonl, out, "--epochs", "1", "--batch-size", "8")
    assert result.exit_code == 0, result.output
    assert (out / "best" / "model.safetensors").is_file()
    saved = json.loads((out / "best" / "config.json").read_text())
    assert saved["weights_sha256"] and saved["training"]["arch"] == "cross-encoder"
    result = sieveqa("rank", "--model", out / "best", "--input", example_jsonl)
    assert result.exit_code == 0, result.output


def test_training_without_a_dev_set_says_so(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    """It ended with "best map=-inf at step -1"."""
    out = tmp_path / "run"
    args = ["train", "--train", f"jsonl:{example_jsonl}", "--init", "tiny", "--dev", "", "--out", out]
    result = sieveqa(*args, "--no-progress", "--epochs", "1")
    assert result.exit_code == 0, result.output
    assert "-inf" not in result.output and "no dev set: the model is the last step's" in result.output
    assert (out / "best" / "model.safetensors").is_file()


def test_every_config_field_is_an_option_with_its_help(sieveqa) -> None:
    result = sieveqa("train", "--help")
    assert result.exit_code == 0
    text = " ".join(result.output.replace("│", " ").split())
    for flag in (
        "--epochs",
        "--checkpoint-every",
        "--device",
        "--exits",
        "--head-layers",
        "--beta",
        "--margin",
        "--exit-sampling",
        "--negatives-per-positive",
        "--question-max-length",
    ):
        assert flag in text
    assert "peak learning rate of AdamW (default: 3e-05)" in text
    # Options of some architectures only say which (not eaten as console markup).
    assert "linear layers per exit head (3: the paper's tanh feed-forward); for cascade (default: 3)" in text
    assert "--composition" not in text and "--backbone" not in text  # implied by --arch, --init


def _config(tmp_path: Path, settings: dict) -> Path:
    path = tmp_path / "train.json"
    path.write_text(json.dumps(settings))
    return path


def test_a_config_file_is_validated_and_lists_its_keys(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    config = _config(tmp_path, {"epochs": 1, "batch_size": 4, "bogus": 1})
    line = one_error_line(_train(sieveqa, example_jsonl, tmp_path / "r", "--config", config))
    assert line.startswith(f"error: {config}: unknown key(s) ['bogus']; valid keys: ")
    assert "attention_hidden" in line and "exit_sampling" in line
    config = _config(tmp_path, {"epochs": "two"})
    line = one_error_line(_train(sieveqa, example_jsonl, tmp_path / "r", "--config", config))
    assert line == f"error: {config}: key 'epochs': expected float, got 'two'"
    config.write_text("[1, 2]")
    line = one_error_line(_train(sieveqa, example_jsonl, tmp_path / "r", "--config", config))
    assert line == f"error: {config}: expected a JSON object, got list"


def test_flags_win_over_the_config_file(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    config = _config(tmp_path, {"epochs": 2, "batch_size": 4, "arch": "cascade", "exits": [2, 4]})
    result = _train(sieveqa, example_jsonl, tmp_path / "r", "--config", config, "--batch-size", "8")
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "r" / "checkpoint" / "trainer_state.json").read_text())["config"]
    assert (saved["epochs"], saved["batch_size"]) == (2, 8)
    model = json.loads((tmp_path / "r" / "best" / "config.json").read_text())
    assert model["sieveqa_model"] == "cascade" and model["config"]["exits"] == [2, 4]


def test_a_setting_of_another_arch_is_refused(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    line = one_error_line(_train(sieveqa, example_jsonl, tmp_path / "r", "--arch", "cascade", "--beta", "3"))
    assert line == "error: --beta applies to --arch bert-attention, bert-pooling, has, not to 'cascade'"
    line = one_error_line(_train(sieveqa, example_jsonl, tmp_path / "r", "--arch", "tower"))
    assert line.startswith("error: --arch must be one of cross-encoder, cascade, has")


@pytest.mark.parametrize(
    ("candidates", "message"),
    [
        ([], "no labelled candidates to train on"),
        ([{"id": "c", "text": "x", "label": 0}], "no candidate is labelled"),
        (  # only the right one marked: it trained on positives alone, without a word
            [{"id": "a", "text": "y", "label": 1}, {"id": "b", "text": "x"}, {"id": "c", "text": "z"}],
            "every labelled candidate is correct (1), none wrong (0): nothing to rank against; 2 "
            "candidates have no label (only the right ones marked?); label the wrong candidates 0",
        ),
    ],
)
def test_training_data_without_positives_is_refused(sieveqa, tmp_path: Path, candidates, message) -> None:
    data = tmp_path / "t.jsonl"
    data.write_text(json.dumps({"qid": "q", "question": "who?", "candidates": candidates}) + "\n")
    line = one_error_line(_train(sieveqa, data, tmp_path / "r", "--dev", ""))
    assert line.startswith(f"error: jsonl:{data}: {message}")


def test_resuming_with_other_settings_names_them(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    assert _train(sieveqa, example_jsonl, tmp_path / "r", "--epochs", "1", "--lr", "1e-4").exit_code == 0
    line = one_error_line(_train(sieveqa, example_jsonl, tmp_path / "r", "--epochs", "1", "--lr", "2e-4"))
    assert "checkpoint was written with other settings (lr 0.0001 -> 0.0002)" in line


def test_max_negatives_zero_is_named_not_the_file(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    line = one_error_line(_train(sieveqa, example_jsonl, tmp_path / "r", "--max-negatives", "0"))
    assert line == "error: --max-negatives 0 leaves only the right candidates: nothing to rank against"


def test_resuming_with_other_model_settings_is_refused(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    """A stopped run resumed with another model setting (an MHS run's --head-weights, --max-length)
    trained on with the new one."""
    flags = ["--dev", "", "--epochs", "1"]
    first = _train(sieveqa, example_jsonl, tmp_path / "r", *flags, "--max-length", "48", "--stop-after", "1")
    assert first.exit_code == 0, first.output
    line = one_error_line(_train(sieveqa, example_jsonl, tmp_path / "r", *flags, "--max-length", "64"))
    assert "checkpoint was written with other settings (--max-length 48 -> 64)" in line


def test_a_finished_run_run_again_says_it_was_complete(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    """It said "trained 10 steps in 0s"."""
    assert _train(sieveqa, example_jsonl, tmp_path / "r", "--epochs", "1").exit_code == 0
    result = _train(sieveqa, example_jsonl, tmp_path / "r", "--epochs", "1")
    assert result.exit_code == 0 and "the run was complete at step " in result.output
    assert "trained " not in result.output


def test_resuming_on_a_training_file_edited_in_place_is_refused(
    sieveqa, example_jsonl: Path, tmp_path: Path
) -> None:
    """The same count of pairs resumed silently: the old model kept, or two versions of the data mixed."""
    data = tmp_path / "train.jsonl"
    data.write_text(example_jsonl.read_text())
    flags = ("--dev", "", "--epochs", "1", "--stop-after", "1")
    assert _train(sieveqa, data, tmp_path / "r", *flags).exit_code == 0
    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    for row in rows:  # the same questions and candidates, other texts
        row["candidates"] = [{**c, "text": c["text"].upper()} for c in row["candidates"]]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    line = one_error_line(_train(sieveqa, data, tmp_path / "r", *flags))
    assert "checkpoint was written with other settings (the training data's content (a file edited" in line


def test_resuming_on_teacher_scores_replaced_in_place_is_refused(
    sieveqa, example_jsonl: Path, tmp_path: Path, monkeypatch
) -> None:
    """The sample's digest pinned the pairs, not what a student learns from them: a teacher's scores
    file scored again (another teacher, the same pairs) resumed silently."""
    import dataclasses

    from sieveqa.training.teachers import TeacherScores

    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    data, scores = f"jsonl:{example_jsonl}", tmp_path / "t.json.gz"
    pairs = ["--train", data, "--max-negatives", 2, "--seed", 5]
    assert sieveqa("teacher-scores", "--teacher", "bm25", *pairs, "-o", scores).exit_code == 0
    train = ["train", "--arch", "mhs", "--heads", 1, "--init", "tiny", "--max-length", 64, "--no-progress"]
    train += [*pairs, "--dev", "", "--batch-size", 2, "--epochs", 1, "--teachers", scores]
    train += ["-o", tmp_path / "r"]
    assert sieveqa(*train, "--stop-after", 1).exit_code == 0
    old = TeacherScores.load(scores)
    dataclasses.replace(old, scores=[-s for s in old.scores]).save(scores)
    line = one_error_line(sieveqa(*train, "--stop-after", 2))
    assert "checkpoint was written with other settings (the teachers' scores (a scores file replaced" in line
    # Scored again elsewhere (the last bits differ) it resumes; so does a checkpoint from before the
    # scores were pinned (no entry for them).
    dataclasses.replace(old, scores=[s * (1 + 1e-7) for s in old.scores]).save(scores)
    assert sieveqa(*train, "--stop-after", 2).exit_code == 0
    state = tmp_path / "r" / "checkpoint" / "trainer_state.json"
    saved = json.loads(state.read_text())
    del saved["run"]["targets"]
    state.write_text(json.dumps(saved))
    assert sieveqa(*train, "--stop-after", 3).exit_code == 0


def test_own_data_without_dev_says_where_the_best_step_is_chosen(
    sieveqa, example_jsonl: Path, tmp_path: Path, monkeypatch, caplog
) -> None:
    """The best checkpoint of a model of the user's domain was chosen on WikiQA without a word, and
    where WikiQA is not installed the error named a file the user never asked for."""
    monkeypatch.setenv("SIEVEQA_DATA", str(tmp_path / "no-data"))
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    (tmp_path / "no-data").mkdir()
    args = ["train", "--train", f"jsonl:{example_jsonl}", "--init", "tiny", "--out", tmp_path / "r"]
    line = one_error_line(sieveqa(*args))
    assert line.startswith("error: --dev defaults to wikiqa:dev, which is not available here (")
    assert line.endswith("give --dev with held-out questions of your own, or --dev '' for none")
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("--dev not given: the best checkpoint is chosen on wikiqa:dev") for m in said)


def test_resuming_another_arch_or_init_is_refused_naming_it(
    sieveqa, example_jsonl: Path, tmp_path: Path
) -> None:
    # Issue 30: another --arch ended in a state_dict RuntimeError; another --init resumed silently.
    out = tmp_path / "r"
    assert _train(sieveqa, example_jsonl, out, "--epochs", "1").exit_code == 0
    line = one_error_line(_train(sieveqa, example_jsonl, out, "--epochs", "1", "--arch", "cascade"))
    assert "other settings (--arch 'cross-encoder' -> 'cascade')" in line
    other = str(out / "best")
    line = one_error_line(_train(sieveqa, example_jsonl, out, "--epochs", "1", "--init", other))
    assert f"other settings (--init 'tiny' -> {other!r})" in line


def test_a_second_run_into_the_same_folder_is_refused(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    out = tmp_path / "r"
    out.mkdir()
    with FileLock(str(out / ".lock")):  # the first run, still writing
        line = one_error_line(_train(sieveqa, example_jsonl, out))
    assert line.startswith(f"error: {out}: another sieveqa process is writing this training output folder")
    assert not (out / "best").exists()


def test_an_out_path_that_is_a_file_is_refused(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    file = tmp_path / "f"
    file.write_text("x")
    assert (
        one_error_line(_train(sieveqa, example_jsonl, file))
        == f"error: --out {file}: is a file; give a folder"
    )


def test_retrofit_options_come_from_train_config_with_its_own_defaults(sieveqa) -> None:
    result = sieveqa("retrofit", "--help")
    text = " ".join(result.output.replace("│", " ").split())
    assert "peak learning rate of AdamW (default: 0.001)" in text and "(default: 30000)" in text


def test_kd_search_needs_mhs_teachers_and_dev_and_leaves_alpha_to_the_search(sieveqa, tmp_path) -> None:
    base = ["train", "--arch", "mhs", "--init", "tiny", "--train", "wikiqa:train", "--out", tmp_path / "o"]
    line = one_error_line(sieveqa(*base, "--kd-trials", "2"))
    assert "needs --teachers and --dev" in line
    line = one_error_line(sieveqa(*base, "--kd-trials", "2", "--teachers", "a.json.gz", "--alpha", "0.5"))
    assert "chooses --alpha and --tau itself" in line
    line = one_error_line(sieveqa(*base, "--kd-trials", "2", "--stop-after", "5"))
    assert line == "error: --stop-after pauses one run; it cannot go with --kd-trials"
    line = one_error_line(
        sieveqa("train", "--train", "wikiqa:train", "--precision", "fp16", "--out", tmp_path / "p")
    )
    assert "invalid --precision 'fp16'" in line


@pytest.mark.slow
def test_teacher_scores_are_written_for_the_students_pairs_and_teach_them(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path, monkeypatch
) -> None:
    from sieveqa.data.jsonl import read_jsonl
    from sieveqa.training.pairs import make_pairs
    from sieveqa.training.teachers import TeacherScores

    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    data, out = f"jsonl:{example_jsonl}", tmp_path / "t.json.gz"
    args = ["teacher-scores", "--teacher", saved_tiny, "--train", data, "--max-negatives", 2, "--seed", 5]
    result = sieveqa(*args, "--name", "tiny", "-o", out)
    assert result.exit_code == 0, result.output
    scores = TeacherScores.load(out)
    assert scores.teacher == "tiny" and not (tmp_path / "t.partial.json").exists()
    scores.check(data, make_pairs(read_jsonl(example_jsonl), max_negatives=2, seed=5).ids)
    line = one_error_line(sieveqa(*args, "-o", tmp_path / "t.json"))
    assert "a teacher-scores file ends in .json.gz" in line
    train = ["train", "--arch", "mhs", "--heads", 1, "--init", "tiny", "--max-length", 64, "--no-progress"]
    train += ["--train", data, "--dev", data, "--max-negatives", 2, "--seed", 5, "--batch-size", 8]
    result = sieveqa(*train, "--teachers", out, "--kd-trials", 1, "-o", tmp_path / "kd")
    assert result.exit_code == 0, result.output
    search = json.loads((tmp_path / "kd" / "search.json").read_text())
    assert len(search["trials"]) == 1 and set(search["best"]) == {"alpha", "tau"}
    assert (tmp_path / "kd" / "trial-0" / "best" / "config.json").is_file()
    line = one_error_line(
        sieveqa(*train, "--teachers", out, "--kd-trials", 1, "--lr", 1e-3, "-o", tmp_path / "kd")
    )
    assert "holds a study of another search (its 'config' differs)" in line
    other = [
        *train[:-6],
        "--train",
        data,
        "--dev",
        data,
        "--max-negatives",
        2,
        "--seed",
        6,
        "--batch-size",
        8,
    ]
    line = one_error_line(sieveqa(*other, "--teachers", out, "-o", tmp_path / "o1"))
    assert "(other data or another order)" in line  # another seed samples other negatives
    other_data = tmp_path / "other.jsonl"
    other_data.write_text(example_jsonl.read_text().split("\n", 1)[1])
    line = one_error_line(
        sieveqa(*train[:-10], "--train", other_data, "--dev", data, "--teachers", out, "-o", tmp_path / "o2")
    )
    assert f"are for dataset 'jsonl:{example_jsonl}', not '{other_data}'" in line


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--heads", 0], "needs k >= 1 heads"),
        (["--heads", 2, "--head-depth", 5], "B-1 2H5 does not fit tiny: b + h must be at most its 4 layers"),
    ],
)
def test_student_configs_that_cannot_be_built_are_refused(
    sieveqa, example_jsonl, tmp_path, flags, message
) -> None:
    args = ["train", "--arch", "mhs", "--init", "tiny", "--train", f"jsonl:{example_jsonl}", "--dev", ""]
    line = one_error_line(sieveqa(*args, *flags, "--teachers", "a.json.gz", "-o", tmp_path / "o"))
    assert message in line


def test_teacher_scores_names_its_own_options(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path
) -> None:
    # Issue 30: it named --teachers (train's option) and TrainConfig.
    base = ["teacher-scores", "--train", f"jsonl:{example_jsonl}", "--out", tmp_path / "t.json.gz"]
    line = one_error_line(sieveqa(*base, "--teacher", saved_tiny, "--max-pairs", "0"))
    assert line.startswith("error: invalid --max-pairs 0") and "TrainConfig" not in line
    line = one_error_line(sieveqa(*base, "--teacher", saved_tiny, "--precision", "auto"))
    assert line == "error: --precision: fp32 or bf16 (scores rounded no further), got 'auto'"
    line = one_error_line(sieveqa(*base, "--teacher", tmp_path / "nothing"))
    assert "nothing' is neither a shipped model" in line and "--teachers" not in line


def test_a_killed_teacher_scores_goes_on_from_beside_its_output(
    sieveqa, saved_tiny: Path, example_jsonl: Path, tmp_path: Path, monkeypatch
) -> None:
    """Its scores so far lived in the user's cache, which a change of machine (or SIEVEQA_CACHE)
    leaves behind: they are kept beside -o, where the run's own files are."""
    from sieveqa.models.pair_model import PairModel
    from sieveqa.training import distill
    from sieveqa.training.teachers import TeacherScores

    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(distill, "PART", 2)
    real, calls = PairModel.score_pairs, []

    def score_pairs(self, questions, texts, **kwargs):
        calls.append(len(texts))
        if len(calls) == 2 and stop:
            raise KeyboardInterrupt  # the session ends during the second part
        return real(self, questions, texts, **kwargs)

    monkeypatch.setattr(PairModel, "score_pairs", score_pairs)
    out, partial = tmp_path / "run" / "t.json.gz", tmp_path / "run" / "t.partial.json"
    args = ["teacher-scores", "--teacher", saved_tiny, "--train", f"jsonl:{example_jsonl}", "-o", out]
    stop = True
    assert sieveqa(*args).exit_code != 0 and not out.exists()
    assert len(json.loads(partial.read_text())["scores"]) == 2
    calls.clear()
    stop = False
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "another-cache"))  # another machine's cache
    save = TeacherScores.save

    def full_disk(self, path):
        if path == out:
            raise OSError(28, "No space left on device", str(path))
        return save(self, path)

    monkeypatch.setattr(TeacherScores, "save", full_disk)
    assert sieveqa(*args).exit_code != 0
    assert partial.exists()  # was removed before -o was written: the scores were lost with the save
    monkeypatch.setattr(TeacherScores, "save", save)
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "a-third-cache"))
    scored = sum(calls)
    result = sieveqa(*args)
    assert result.exit_code == 0, result.output
    assert scored == len(TeacherScores.load(out).scores) - 2 and not partial.exists()
    assert sum(calls) == scored  # the third run scored nothing again


def test_bad_train_layers_are_one_line(sieveqa, example_jsonl: Path, tmp_path: Path) -> None:
    line = one_error_line(_train(sieveqa, example_jsonl, tmp_path / "a", "--train-layers", "99"))
    assert line.startswith("error: train_layers must be in 1..") and line.endswith("got 99")
    line = one_error_line(_train(sieveqa, example_jsonl, tmp_path / "b", "--train-layers", "0"))
    assert "invalid train_layers=0" in line
    assert _train(sieveqa, example_jsonl, tmp_path / "c", "--epochs", "1").exit_code == 0
    saved = str(tmp_path / "c" / "best")
    line = one_error_line(
        _train(sieveqa, example_jsonl, tmp_path / "d", "--init", saved, "--train-layers", "1")
    )
    assert line == f"error: --train-layers starts from a backbone (--init NAME), not the saved model {saved}"


@pytest.mark.parametrize(
    ("train", "says"),
    [
        ("squad-unanswerable:train", "split is 'open', not 'train' (train and contrast rank)"),
        ("squad-unanswerable:open[:0]", "squad-unanswerable:open[:0]: [:N] takes N >= 1 questions"),
    ],
)
def test_a_reader_given_a_bad_open_dataset_name_is_one_line(
    sieveqa, tmp_path: Path, train: str, says: str
) -> None:
    args = ["--arch", "reader", "--init", "tiny", "--train", train, "--dev", "", "--out", tmp_path / "r"]
    result = sieveqa("train", *args)
    assert result.exit_code == 2 and one_error_line(result).endswith(says)


def test_retrofit_pairs_that_are_not_there_is_one_line(sieveqa, tmp_path: Path) -> None:
    line = one_error_line(sieveqa("retrofit", "--pairs", tmp_path / "nope.jsonl", "--out", tmp_path / "o"))
    assert line == f"error: --pairs {tmp_path / 'nope.jsonl'}: no such file"


def test_retrofit_takes_pairs_from_a_path_with_a_comma_and_refuses_pairs_beside_train(
    sieveqa, saved_tiny: Path, tmp_path: Path
) -> None:
    # Found by a code review and a probe: the path was split at its comma into two datasets, and
    # --train beside --pairs was ignored without a word.
    pairs = tmp_path / "june,july.jsonl"
    lines = [{"query": f"question {i}", "text": f"an answer text {j}"} for i in range(3) for j in range(3)]
    pairs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    base = ["retrofit", "-m", saved_tiny, "--pairs", pairs, "--dev", "", "--exits", "2,4"]
    result = sieveqa(*base, "--out", tmp_path / "r", "--epochs", "1", "--batch-size", "8", "--no-progress")
    assert result.exit_code == 0, result.output
    paused = sieveqa(*base, "--out", tmp_path / "p", "--batch-size", 2, "--stop-after", 1, "--no-progress")
    assert "paused at step 1" in paused.output and "cascade:" not in paused.output  # no best/ written
    assert not (tmp_path / "p" / "best").exists()
    line = one_error_line(sieveqa(*base, "--train", "squad-as2:train", "--out", tmp_path / "s"))
    assert line == "error: give --pairs or --train, not both (--pairs trains on your pairs alone)"


@pytest.mark.slow
def test_a_pool_of_your_own_pairs_is_scored_and_taught(
    sieveqa, example_jsonl: Path, tmp_path: Path, monkeypatch
) -> None:
    """teacher-scores --pool scores the pool's pairs after the labelled ones, as train --pool samples
    them; the student takes the file; a bad --pool-pairs is one line."""
    from sieveqa.training.teachers import TeacherScores

    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    pool = tmp_path / "traffic.jsonl"
    pool.write_text('{"query": "How tall is it?", "text": "It is 300 m tall."}\n'
                    '{"query": "How tall is it?", "text": "Paris is in France."}\n')  # fmt: skip
    data, out = f"jsonl:{example_jsonl}", tmp_path / "t.json.gz"
    both = ["--train", data, "--max-negatives", 2, "--seed", 5, "--pool", f"pairs:{pool}"]
    result = sieveqa("teacher-scores", "--teacher", "bm25", *both, "-o", out)
    assert result.exit_code == 0, result.output
    scores = TeacherScores.load(out)
    assert scores.pair_ids[-2:] == ["pool:pairs-0/0", "pool:pairs-0/1"]
    train = ["train", "--arch", "mhs", "--heads", 1, "--init", "tiny", "--max-length", 64, "--no-progress"]
    train += [*both, "--dev", "", "--batch-size", 8, "--epochs", 1]
    result = sieveqa(*train, "--teachers", out, "-o", tmp_path / "kd")
    assert result.exit_code == 0, result.output
    line = one_error_line(sieveqa(*train, "--teachers", out, "--pool-pairs", 0, "-o", tmp_path / "kd2"))
    assert line == "error: --pool-pairs must be >= 1, got 0"
    line = one_error_line(
        sieveqa("teacher-scores", "--teacher", "bm25", "--train", data, "--pool", "nosuch:x", "-o", out)
    )
    assert line.startswith("error: unknown dataset family 'nosuch' in 'nosuch:x'")
    gone = one_error_line(
        sieveqa(*train, "--teachers", "bm25", "--pool", "pairs:/nonexistent.jsonl", "-o", tmp_path / "k3")
    )
    assert gone == "error: pairs:/nonexistent.jsonl: no such file"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--low-rank", "0"], "invalid --low-rank 0"),
        (["--low-rank", "64"], "--low-rank 64: the body's matrices need a rank below"),
        (["--low-rank", "2", "--no-freeze-word-embeddings"], "--low-rank keeps the word embeddings frozen"),
    ],
)
def test_a_low_rank_the_model_cannot_train_is_one_line(
    sieveqa, example_jsonl: Path, tmp_path: Path, flags, message
) -> None:
    line = one_error_line(_train(sieveqa, example_jsonl, tmp_path / "r", *flags))
    assert message in line, line


def test_train_low_rank_from_a_model_trained_whole_says_what_it_cuts(
    sieveqa, example_jsonl: Path, tmp_path: Path, caplog
) -> None:
    """The only word of a start cut to 74% (the shipped default at rank 16) was a line on stdout; the
    low-rank run itself had no test through the command line."""
    assert _train(sieveqa, example_jsonl, tmp_path / "whole", "--epochs", "1").exit_code == 0
    whole = str(tmp_path / "whole" / "best")
    result = sieveqa(
        "train", "--train", f"jsonl:{example_jsonl}", "--init", whole, "--dev", "", "--epochs", "1",
        "--low-rank", "2", "--out", tmp_path / "lr", "--no-progress",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    said = [r.getMessage() for r in caplog.records if "--low-rank 2 keeps" in r.getMessage()]
    assert len(said) == 1 and f"of what {whole} changed in its body: the run starts below it" in said[0]
    saved = json.loads((tmp_path / "lr" / "best" / "config.json").read_text())
    assert saved["low_rank"]["rank"] == 2
