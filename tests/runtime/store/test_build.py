"""Building stores: a killed build resumes, another build is refused, repeated texts are encoded once,
and a store finds its model again after folders move."""

import shutil
from pathlib import Path

import pytest
import torch

from sieveqa.errors import StoreError
from sieveqa.models.hashing import HashingConfig, HashingModel
from sieveqa.runtime.store import build as store_build
from sieveqa.runtime.store.answer_store import AnswerStore
from sieveqa.runtime.store.format import find_model

ANSWERS = [(f"a{i}", f"answer {i} says {'yes' if i % 2 else 'no'} to {i * 3}") for i in range(25)]


@pytest.fixture(scope="module")
def has() -> HashingModel:
    torch.manual_seed(0)
    return HashingModel(HashingConfig.variant("has", backbone="tiny", max_length=32)).eval()


def _kill_after(monkeypatch: pytest.MonkeyPatch, segments: int) -> None:
    real, calls = store_build.add_segment, []

    def killed(*args, **kwargs):
        if len(calls) == segments:
            raise KeyboardInterrupt
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(store_build, "add_segment", killed)


def test_a_killed_build_resumes_after_its_last_whole_segment(
    has: HashingModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    straight = AnswerStore.build(has, ANSWERS, tmp_path / "straight", segment_size=10)
    _kill_after(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        AnswerStore.build(has, ANSWERS, tmp_path / "s", segment_size=10)
    with pytest.raises(StoreError, match="build stopped after 20 of 25 answers; run the same"):
        AnswerStore.open(tmp_path / "s")
    monkeypatch.undo()
    encoded = []
    real_encode = has.encode_answers
    monkeypatch.setattr(has, "encode_answers", lambda texts: encoded.extend(texts) or real_encode(texts))
    resumed = AnswerStore.build(has, ANSWERS, tmp_path / "s", segment_size=10)
    assert encoded == [t for _, t in ANSWERS[20:]]  # only the unfinished segment is encoded again
    assert resumed.ids == straight.ids
    for name in ("values.bin", "offsets.bin", "answers.jsonl"):
        assert (tmp_path / "s" / "seg-00002" / name).read_bytes() == (
            tmp_path / "straight" / "seg-00002" / name
        ).read_bytes()
    assert "build" not in resumed.manifest and resumed.first_stage is not None


def test_a_stopped_build_refuses_other_answers_or_options(
    has: HashingModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _kill_after(monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):
        AnswerStore.build(has, ANSWERS, tmp_path / "s", segment_size=10)
    monkeypatch.undo()
    with pytest.raises(StoreError, match="stopped after 10 of 25 answers, of other answers_sha256 and total"):
        AnswerStore.build(has, ANSWERS[:-1], tmp_path / "s", segment_size=10)
    with pytest.raises(StoreError, match=r"of other options \(--segment-size 10 -> 5\)"):
        AnswerStore.build(has, ANSWERS, tmp_path / "s", segment_size=5)
    with pytest.raises(StoreError, match="its build has not finished"):
        store_build.append(tmp_path / "s", has, [("x", "y")], progress=False)


def test_repeated_texts_are_encoded_once(
    has: HashingModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repeated = [(f"r{i}", ANSWERS[i % 3][1]) for i in range(12)]
    encoded = []
    real_encode = has.encode_answers
    monkeypatch.setattr(has, "encode_answers", lambda texts: encoded.extend(texts) or real_encode(texts))
    store = AnswerStore.build(has, repeated, tmp_path / "s", chunk=5, segment_size=7)
    assert sorted(encoded) == sorted(t for _, t in ANSWERS[:3])
    for i in range(12):
        assert torch.equal(store.representations([f"r{i}"])[0], store.representations([f"r{i % 3}"])[0])
    encoded.clear()
    store = store.append(has, [("again", ANSWERS[1][1]), ("fresh", "a text never seen")])
    assert encoded == ["a text never seen"]  # the stored text is read back, not encoded
    assert torch.equal(store.representations(["again"])[0], store.representations(["r1"])[0])


def test_a_store_finds_its_model_by_folder_or_beside_itself(has: HashingModel, tmp_path: Path) -> None:
    home = tmp_path / "home"
    has.save_pretrained(home / "models" / "my-has")
    AnswerStore.build(has, ANSWERS[:3], home / "stores" / "s", model_ref=str(home / "models" / "my-has"))
    ref = AnswerStore.open(home / "stores" / "s").manifest["model_ref"]
    assert ref["name"] == "my-has" and ref["relative"] == "../../models/my-has"
    assert ref["fingerprint"] == has.body_fingerprint()
    moved = shutil.move(home, tmp_path / "elsewhere")  # store and model moved together
    store = AnswerStore.open(Path(moved) / "stores" / "s")
    store.check_model(find_model(store.path, store.manifest["model_ref"]))
    shutil.move(Path(moved) / "models" / "my-has", tmp_path / "lost")
    with pytest.raises(
        StoreError, match=r"its model 'my-has' \(body fingerprint [0-9a-f]{12}\) is no longer"
    ):
        find_model(store.path, store.manifest["model_ref"])
