"""Safe writes: a reader sees the old file or the new one, never half of one.

Temporary files and folders are named ``.NAME.PID.XXXX.tmp`` beside their target. A process killed
mid-write leaves one behind; the next write to the same target removes those whose process is gone,
and restores a folder that was moved aside but not yet replaced. Writers of one output folder take an
exclusive lock on it first, so a second run into the same folder is refused, not interleaved.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from filelock import FileLock, Timeout

from sieveqa.errors import BusyError, ConfigError, SieveQAError, StoreError

# mkstemp creates files readable by their owner only; give them the permissions open() would.
_UMASK = os.umask(0)
os.umask(_UMASK)
LOCK_NAME = ".lock"
# Locks this process holds, per (lock file, thread), with how many times each was taken.
_HELD: dict[tuple[str, int], int] = {}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def clean_stale(path: str | os.PathLike[str]) -> None:
    """Remove what killed writers of ``path`` left beside it; restore ``path`` if a kill came
    between moving the old folder aside and moving the new one in."""
    path = Path(path)
    if not path.parent.is_dir():
        return
    for tmp in path.parent.glob(glob.escape(f".{path.name}.") + "*.tmp"):
        pid = tmp.name[len(path.name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            if tmp.is_dir():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
    old = path.with_name(f".{path.name}.old")
    if old.exists():
        if path.exists():
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(old, path)


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.{os.getpid()}."


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; rename it over ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(path)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(err, OSError) and err.filename is None:  # say which file could not be written
            raise OSError(err.errno, err.strerror, str(path)) from err
        raise


def atomic_write_json(path: str | os.PathLike[str], obj: Any, indent: int | None = 2) -> None:
    """Write ``obj`` as JSON to ``path`` atomically."""
    with atomic_open(path, "w", encoding="utf-8") as handle:
        json.dump(obj, handle, indent=indent, ensure_ascii=False)
        handle.write("\n")


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary folder beside ``path``; it replaces ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(path)
    tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        # mkdtemp makes an owner-only folder; give the result the permissions mkdir/open() would.
        os.chmod(tmp, 0o777 & ~_UMASK)
        for child in tmp.rglob("*"):
            os.chmod(child, (0o777 if child.is_dir() else 0o666) & ~_UMASK)
        old = path.with_name(f".{path.name}.old")
        if path.exists():
            os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def exclusive(folder: str | os.PathLike[str], what: str = "folder") -> Iterator[Path]:
    """Hold ``folder/.lock`` while writing into ``folder`` (created if needed); a second writer, in
    this process or another, gets a BusyError at once instead of waiting. The thread holding the
    lock may take it again (a recipe locks before checking, then the Trainer it starts)."""
    folder = Path(folder)
    check_output_dir(folder, what)
    folder.mkdir(parents=True, exist_ok=True)
    key = (str((folder / LOCK_NAME).resolve()), threading.get_ident())
    if key in _HELD:
        _HELD[key] += 1
        try:
            yield folder
        finally:
            _HELD[key] -= 1
        return
    lock = FileLock(key[0], timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise BusyError(
            f"{folder}: another sieveqa process is writing this {what} (lock {folder / LOCK_NAME}); "
            "wait for it to finish or choose another folder"
        ) from None
    _HELD[key] = 1
    try:
        yield folder
    finally:
        del _HELD[key]
        lock.release()


class ReadLease:
    """A shared lock on a folder that a reader has open: writers remove the folder only when no
    reader holds one (:func:`remove_unleased`). Released by ``close`` or when garbage-collected."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self._fd: int | None = None
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            # A writer may have removed the folder between the open and the lock: then it is gone.
            if os.fstat(fd).st_nlink == 0 or os.stat(folder).st_ino != os.fstat(fd).st_ino:
                raise FileNotFoundError(f"{folder} was removed")
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases its lock
            self._fd = None

    def __del__(self) -> None:
        self.close()


def remove_unleased(folder: str | os.PathLike[str]) -> bool:
    """Remove ``folder`` unless a :class:`ReadLease` holds it (in any process); whether it went."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held by a reader (or, on NFS, not lockable this way): kept
        os.close(fd)
        return False
    try:
        shutil.rmtree(folder, ignore_errors=True)
    finally:
        os.close(fd)
    return True


def _writable(folder: Path) -> bool:
    # A real probe: permission bits say nothing for root, or on /proc and read-only mounts.
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def check_output_file(
    path: str | os.PathLike[str], option: str, inputs: dict[str, Path | None] | None = None
) -> Path:
    """Refuse, before any work, an output file path that is a folder, cannot be written, or is one
    of the command's ``inputs`` (by option name: writing it would replace what is read)."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{option} {path}: is a folder; give the path of a file to write")
    for name, given in (inputs or {}).items():
        if given is not None and path.exists() and Path(given).exists() and path.samefile(given):
            raise ConfigError(f"{option} {path}: is the {name} file; write elsewhere")
    _check_writable_under(path, path.parents, option)
    return path


def check_output_dir(path: str | os.PathLike[str], option: str) -> Path:
    """Refuse, before any work, an output folder path that is a file or cannot be written."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{option} {path}: is a file; give a folder")
    _check_writable_under(path, (path, *path.parents), option)
    return path


def _check_writable_under(path: Path, candidates: Iterable[Path], option: str) -> None:
    """The nearest of ``candidates`` that exists must be a folder we can write into."""
    for folder in candidates:
        if folder.exists():
            if not folder.is_dir():
                raise ConfigError(f"{option} {path}: {folder} is a file, not a folder")
            if not _writable(folder):
                raise ConfigError(f"{option} {path}: cannot write into {folder}")
            return


def read_json_object(path: str | os.PathLike[str], error: type[SieveQAError] = ConfigError) -> dict[str, Any]:
    """A JSON object from a file, or ``error`` naming the file and what is wrong with it."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as err:  # a folder, no permission, ...
        raise error(f"{path}: cannot be read ({err.strerror})") from None
    except UnicodeDecodeError as err:
        raise error(f"{path}: not UTF-8 text (byte {err.start})") from err
    except json.JSONDecodeError as err:
        raise error(f"{path}: invalid JSON ({err.msg}, line {err.lineno})") from err
    if not isinstance(data, dict):
        raise error(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def read_manifest(
    folder: str | os.PathLike[str], fmt: str, version: int, what: str, rebuild: str
) -> dict[str, Any]:
    """``folder/manifest.json`` of format ``fmt`` at ``version``, or a StoreError naming the folder
    and what to do (``rebuild``: the command that makes a new one)."""
    folder = Path(folder)
    file = folder / "manifest.json"
    if not file.is_file():
        raise StoreError(f"{folder}: not {what} (no manifest.json); build one with `{rebuild}`")
    manifest = read_json_object(file, StoreError)
    if manifest.get("format") != fmt:
        raise StoreError(f"{folder}: not {what} (format {manifest.get('format')!r})")
    if manifest.get("version") != version:
        raise StoreError(
            f"{folder}: {what.split()[-1]} format version {manifest.get('version')!r}, this sieveqa reads "
            f"{version}; rebuild it with `{rebuild}`"
        )
    return manifest


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
