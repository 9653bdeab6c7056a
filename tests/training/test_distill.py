"""Training a multi-head student from cached teacher scores, end to end on the tiny backbone."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from sieveqa.batching import collate
from sieveqa.data.jsonl import example_dict, write_jsonl
from sieveqa.errors import ConfigError, DataFormatError
from sieveqa.models.cross_encoder import CrossEncoder, CrossEncoderConfig
from sieveqa.models.multihead import MultiHeadStudent
from sieveqa.training.config import TrainConfig
from sieveqa.training.distill import teacher_scores
from sieveqa.training.pairs import make_pairs
from sieveqa.training.run import train_model
from sieveqa.training.teachers import TeacherScores

from .test_trainer import _toy_examples

CONFIG = TrainConfig(progress=False, batch_size=8, lr=3e-3, warmup_ratio=0.0, epochs=6, seed=3)


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path, Path]:
    """A toy training set and two teachers' score files: one agrees with the labels, one is its
    opposite, so the two heads must end up apart."""
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "train.jsonl"
    write_jsonl(path, map(example_dict, _toy_examples()))
    dataset = f"jsonl:{path}"
    pairs = make_pairs(_toy_examples())
    agree = [4.0 if y else -4.0 for y in pairs.labels]
    files = [
        TeacherScores(name, "n/a", dataset, pairs.ids, [sign * s for s in agree]).save(
            tmp_path / f"{name}.json.gz"
        )
        for name, sign in (("agree", 1), ("oppose", -1))
    ]
    return dataset, files[0], files[1]


@pytest.mark.slow
def test_each_head_follows_its_own_teacher(data, tmp_path: Path) -> None:
    dataset, agree, oppose = data
    train_model(
        "mhs", dataset, tmp_path / "out", init="tiny", dev=None, config=CONFIG,
        settings={"heads": 2, "max_length": 64},
        options={"teachers": [str(agree), str(oppose)], "alpha": 0.0},
    )  # fmt: skip
    student = MultiHeadStudent.from_pretrained(tmp_path / "out" / "best")
    pairs = make_pairs(_toy_examples())
    features = student.featurize(pairs.questions, pairs.texts)
    with torch.inference_mode():
        logits = student(**collate(features, range(len(pairs)), student.pad_id))
    positive = torch.tensor(pairs.labels) > 0
    assert (logits[positive, 0].min() > logits[~positive, 0].max()).item()  # head 0: like its teacher
    assert (logits[positive, 1].max() < logits[~positive, 1].min()).item()  # head 1: the opposite


def test_a_teacher_model_scores_the_pairs_once(data, tmp_path: Path) -> None:
    dataset = data[0]
    torch.manual_seed(1)
    folder = CrossEncoder(CrossEncoderConfig(backbone="tiny", max_length=64)).save_pretrained(tmp_path / "t")
    pairs = make_pairs(_toy_examples())
    first = teacher_scores(str(folder), dataset, pairs, progress=False)
    cached = list((tmp_path / "cache" / "teacher-scores").iterdir())
    assert len(cached) == 1 and len(first.scores) == len(pairs)
    assert teacher_scores(str(folder), dataset, pairs, progress=False) == first
    rounded = teacher_scores(str(folder), dataset, pairs, progress=False, precision="bf16")
    assert len(list((tmp_path / "cache" / "teacher-scores").iterdir())) == 2  # kept apart from fp32's
    assert rounded.scores == pytest.approx(first.scores, abs=0.05) and rounded.scores != first.scores
    with pytest.raises(DataFormatError, match="are for dataset"):
        TeacherScores.load(cached[0]).check("jsonl:other.jsonl", pairs.ids)
    # The same weights reading fewer tokens score otherwise: the cache kept the first scores for them.
    saved = json.loads((folder / "config.json").read_text())
    saved["config"]["max_length"] = 8
    (folder / "config.json").write_text(json.dumps(saved))
    shorter = teacher_scores(str(folder), dataset, pairs, progress=False)
    assert len(list((tmp_path / "cache" / "teacher-scores").iterdir())) == 3
    assert shorter.scores != first.scores


def test_scores_of_other_pairs_and_a_wrong_teacher_count_are_refused(data, tmp_path: Path) -> None:
    dataset, teacher, second = data
    other = tmp_path / "other.jsonl"
    write_jsonl(other, map(example_dict, _toy_examples(6)))
    with pytest.raises(DataFormatError, match="are for dataset 'jsonl:"):
        train_model(
            "mhs", f"jsonl:{other}", tmp_path / "o1", init="tiny", dev=None, config=CONFIG,
            settings={"heads": 2}, options={"teachers": [str(teacher), str(second)]},
        )  # fmt: skip
    with pytest.raises(ConfigError, match="gives 1 teacher\\(s\\) for 2 head\\(s\\)"):
        train_model(
            "mhs", dataset, tmp_path / "o2", init="tiny", dev=None, config=CONFIG,
            settings={"heads": 2}, options={"teachers": [str(teacher)]},
        )  # fmt: skip
    assert not (tmp_path / "o2" / "best").exists()


def test_a_bi_encoder_teacher_gives_its_cosines_as_calibrated_logits(data, tmp_path: Path) -> None:
    """embedder:BACKBONE scores a pair by the cosine of its two embeddings, made log-odds by a
    logistic fit on the same pairs: the cosine's order kept, the mean probability the share of
    right pairs (what the fit guarantees), cached as a model teacher's are."""
    import numpy as np

    from sieveqa.training.teachers import cosines, load_embedder_teacher

    dataset = data[0]
    pairs = make_pairs(_toy_examples())
    scores = teacher_scores("embedder:tiny", dataset, pairs, progress=False)
    assert scores.teacher == "embedder:tiny" and len(scores.scores) == len(pairs)
    raw = cosines(load_embedder_teacher("embedder:tiny"), pairs.questions, pairs.texts, progress=False)
    logits = np.array(scores.scores)
    assert np.all(np.diff(logits[np.argsort(raw)]) >= -1e-9)  # the cosine's order, kept
    mean_probability = float(np.mean(1 / (1 + np.exp(-logits))))
    assert mean_probability == pytest.approx(np.mean(pairs.labels), abs=1e-3)
    assert teacher_scores("embedder:tiny", dataset, pairs, progress=False) == scores  # from the cache
    with pytest.raises(ConfigError, match="name the embedder's backbone"):
        teacher_scores("embedder:", dataset, pairs, progress=False)


def test_the_calibration_keeps_a_cosines_order_and_no_reversed_one() -> None:
    import numpy as np

    from sieveqa.training.teachers import calibrated_logits

    values = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    labels = [0, 0, 1, 0, 0, 1, 1, 1]
    logits = np.array(calibrated_logits(values, labels))
    assert np.all(np.diff(logits) > 0) and logits[-1] - logits[0] > 1  # ordered, with a real spread
    assert float(np.mean(1 / (1 + np.exp(-logits)))) == pytest.approx(np.mean(labels), abs=1e-4)
    reversed_ = np.array(calibrated_logits(values, labels[::-1]))
    assert np.ptp(reversed_) < 1e-2  # a cosine that ranks right pairs last teaches nothing
    with pytest.raises(ConfigError, match="right and wrong pairs"):
        calibrated_logits(values, [1] * 8)


def test_bm25_and_a_readers_has_answer_teach_as_logits(data, tmp_path: Path) -> None:
    """bm25: each candidate's BM25 for its question (over that question's candidates), made log-odds
    in BM25's order; reader:NAME: a span reader's has-answer logit of the pair, as the reader gives it."""
    import numpy as np

    from sieveqa.models.fusion import lexical_scores
    from sieveqa.models.reader import ReaderConfig, ReaderModel
    from sieveqa.models.zoo import load_model

    saved_reader = ReaderModel(ReaderConfig(backbone="tiny", max_length=48)).save_pretrained(tmp_path / "r")
    dataset = data[0]
    pairs = make_pairs(_toy_examples())
    bm25 = teacher_scores("bm25", dataset, pairs, progress=False)
    first = [i for i, q in enumerate(pairs.questions) if q == pairs.questions[0]]
    raw = lexical_scores(pairs.questions[0], [pairs.texts[i] for i in first])
    logits = np.array(bm25.scores)[first]
    assert np.all(np.diff(logits[np.argsort(raw, kind="stable")]) >= -1e-9)  # BM25's order, kept
    assert float(np.mean(1 / (1 + np.exp(-np.array(bm25.scores))))) == pytest.approx(
        np.mean(pairs.labels), abs=1e-3
    )
    spec = f"reader:{saved_reader}"
    has = teacher_scores(spec, dataset, pairs, progress=False)
    reader = load_model(str(saved_reader), ReaderModel).configure(precision="fp32")
    read, _ = reader.read(pairs.questions[:2], [[t] for t in pairs.texts[:2]], calibrated=False)
    assert has.scores[:2] == pytest.approx([g[0][-1].has_logit for g in read], abs=1e-5)
    assert teacher_scores(spec, dataset, pairs, progress=False) == has  # from the cache
    with pytest.raises(ConfigError, match="name the reader"):
        teacher_scores("reader:", dataset, pairs, progress=False)


def test_an_unknown_label_teaches_by_the_teacher_alone() -> None:
    from sieveqa.training.objectives import kd_loss

    student, teacher = torch.tensor([[0.5], [0.5]]), torch.tensor([[2.0], [2.0]])
    both = kd_loss(student, teacher, torch.tensor([[1.0], [float("nan")]]), alpha=0.5, tau=2.0)
    soft = kd_loss(student, teacher, torch.tensor([[1.0], [1.0]]), alpha=0.0, tau=2.0)
    assert torch.isfinite(both).all() and both[1] == pytest.approx(0.5 * soft[1].item())
    assert both[0] > both[1]  # the labelled pair has its hard term too


def test_a_pool_of_unlabelled_pairs_is_scored_by_the_teachers_and_learned_softly(
    data, tmp_path: Path
) -> None:
    """--pool adds pairs whose labels are never read (pairs:FILE): the teachers score them (a made-logit
    teacher calibrated on the labelled pairs only), and the student trains on both."""
    import json

    from sieveqa.training.distill import DistillOptions, DistillRecipe

    dataset = data[0]
    pool = tmp_path / "traffic.jsonl"
    rows = [
        {"query": f"{ex.question.text} again", "text": c.text}
        for ex in _toy_examples(6)
        for c in ex.candidates
    ]
    asked = _toy_examples()[0]  # a question the labelled pairs ask: left out of the pool
    rows += [{"query": asked.question.text, "text": c.text} for c in asked.candidates]
    pool.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    recipe = DistillRecipe(DistillOptions(teachers=["bm25"], pool=f"pairs:{pool}", pool_pairs=10))
    labelled = make_pairs(_toy_examples())
    pairs = recipe.sample(_toy_examples(), CONFIG, dataset)
    pooled = [i for i, pid in enumerate(pairs.ids) if pid.startswith("pool:")]
    assert len(pooled) == 10 and len(pairs) == len(labelled) + 10
    assert not {pairs.questions[i] for i in pooled} & set(labelled.questions)  # counted once, labelled
    assert all(pairs.labels[i] != pairs.labels[i] for i in pooled)  # NaN: unknown
    assert pairs.labels[: len(labelled)] == labelled.labels
    assert len(recipe.scores[0].scores) == len(pairs) and recipe.scores[0].dataset.endswith(
        f"+pool:pairs:{pool}"
    )
    scores = recipe.scores[0]
    assert all(math.isfinite(x) for x in scores.scores)
    alone = teacher_scores("bm25", dataset, labelled, progress=False).scores  # as if there were no pool
    assert scores.scores[: len(labelled)] == pytest.approx(alone, abs=1e-6)
    # Edited in place (the same lines, other texts): other scores, never the cached ones.
    edits = [{"query": r["query"], "text": r["text"].replace("a", "e")} for r in rows]
    pool.write_text("\n".join(json.dumps(r) for r in edits) + "\n")
    edited = DistillRecipe(DistillOptions(teachers=["bm25"], pool=f"pairs:{pool}", pool_pairs=10))
    edited.sample(_toy_examples(), CONFIG, dataset)
    changed = edited.scores[0]
    assert changed.pair_ids == scores.pair_ids and changed.texts != scores.texts
    with pytest.raises(DataFormatError, match="questions or texts have changed"):
        scores.check(changed.dataset, changed.pair_ids, texts=changed.texts)
    train_model(
        "mhs", dataset, tmp_path / "out", init="tiny", dev=None, config=replace(CONFIG, epochs=1),
        settings={"heads": 1, "max_length": 64},
        options={"teachers": ["bm25"], "pool": f"pairs:{pool}", "pool_pairs": 10},
    )  # fmt: skip
    assert (tmp_path / "out" / "best").is_dir()
    with pytest.raises(ConfigError, match="--pool-pairs must be >= 1"):
        DistillOptions(teachers=["bm25"], pool="x", pool_pairs=0)


def test_a_killed_scoring_resumes_after_its_last_part(tmp_path: Path, monkeypatch) -> None:
    """A teacher's scoring saved nothing until its end: a session stopped at 90% of an hour of MPNet
    scoring started again from the first pair."""
    from sieveqa.training import distill

    monkeypatch.setattr(distill, "PART", 2)
    pairs = make_pairs(_toy_examples())
    calls: list[list[str]] = []

    def score(questions: list[str], texts: list[str]) -> list[float]:
        calls.append(texts)
        if len(calls) == 2 and stop:
            raise KeyboardInterrupt  # the session ends in the second part
        return [float(len(t)) for t in texts]

    partial, stop = tmp_path / "k.partial.json", True
    with pytest.raises(KeyboardInterrupt):
        distill.scored_in_parts(score, pairs, partial, progress=False, key="k")
    so_far = json.loads(partial.read_text())
    assert so_far == {"key": "k", "scores": [float(len(t)) for t in pairs.texts[:2]]}
    calls.clear()
    stop = False
    values = distill.scored_in_parts(score, pairs, partial, progress=False, key="k")
    assert values == [float(len(t)) for t in pairs.texts] and calls[0] == list(pairs.texts[2:4])
    assert sum(len(c) for c in calls) == len(pairs) - 2  # the first part was not scored again


def test_scores_so_far_of_other_pairs_are_not_taken_up(tmp_path: Path, caplog) -> None:
    """Scores so far kept beside an output (teacher-scores -o) carry what they are scores of: the same
    output asked again for other pairs or another teacher starts over (a list without its key was
    taken up as this run's first scores)."""
    from sieveqa.training import distill

    pairs = make_pairs(_toy_examples())
    partial = tmp_path / "t.partial.json"
    partial.write_text(json.dumps({"key": "other pairs", "scores": [9.0, 9.0]}))
    values = distill.scored_in_parts(lambda q, t: [0.5] * len(t), pairs, partial, False, key="these")
    assert values == [0.5] * len(pairs)
    assert "scores so far of other pairs, another teacher or damaged: scoring anew" in caplog.text
    partial.write_text(json.dumps([9.0, 9.0]))  # the format before the key was kept
    values = distill.scored_in_parts(lambda q, t: [0.5] * len(t), pairs, partial, False, key="these")
    assert values == [0.5] * len(pairs)


def test_a_model_free_teachers_own_scores_read_no_label() -> None:
    """What a table of rankers reads of bm25 (or embedder:, reader:): its own scores, not the logits
    fitted on the labels (test labels must not shape a test row)."""
    from sieveqa.training.teachers import bm25_by_question, own_scores

    pairs = make_pairs(_toy_examples())
    unlabelled = replace(pairs, labels=[math.nan] * len(pairs))
    assert own_scores("bm25", unlabelled, progress=False) == bm25_by_question(pairs).tolist()


def test_a_damaged_file_of_scores_so_far_is_scored_again(tmp_path: Path) -> None:
    from sieveqa.training import distill

    pairs = make_pairs(_toy_examples())
    partial = tmp_path / "k.partial.json"
    partial.write_text('[1.0, 2.0, "half')  # cut off mid-write by another tool: was a traceback
    values = distill.scored_in_parts(lambda q, t: [0.5] * len(t), pairs, partial, progress=False)
    assert values == [0.5] * len(pairs)
