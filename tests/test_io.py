import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from filelock import FileLock

from sieveqa.errors import BusyError, ConfigError
from sieveqa.io import (
    atomic_dir,
    atomic_open,
    atomic_write_json,
    check_output_dir,
    check_output_file,
    clean_stale,
    exclusive,
)


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    atomic_write_json(path, {"v": 1})
    with pytest.raises(RuntimeError), atomic_open(path, "w") as handle:
        handle.write("half")
        raise RuntimeError("killed")
    assert path.read_text() == '{\n  "v": 1\n}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_written_file_has_normal_permissions(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    with atomic_open(path, "w") as handle:
        handle.write("x")
    assert path.stat().st_mode & 0o044 == 0o044


def test_atomic_dir_replaces_whole_folder(tmp_path: Path) -> None:
    target = tmp_path / "model"
    with atomic_dir(target) as tmp:
        (tmp / "a").write_text("1")
    with pytest.raises(RuntimeError), atomic_dir(target) as tmp:
        (tmp / "b").write_text("2")
        raise RuntimeError("killed")
    assert sorted(p.name for p in target.iterdir()) == ["a"]
    with atomic_dir(target) as tmp:
        (tmp / "c").write_text("3")
    assert sorted(p.name for p in target.iterdir()) == ["c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    assert target.stat().st_mode & 0o055 == 0o055
    assert (target / "c").stat().st_mode & 0o044 == 0o044


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_temporaries_of_a_killed_writer_are_removed_by_the_next_write(tmp_path: Path) -> None:
    dead = _dead_pid()
    stale_file = tmp_path / f".out.json.{dead}.abc123.tmp"
    stale_file.write_text("half")
    stale_dir = tmp_path / f".model.{dead}.xyz.tmp"
    stale_dir.mkdir()
    live = tmp_path / f".out.json.{os.getpid()}.live.tmp"  # a writer still running: left alone
    live.write_text("busy")
    atomic_write_json(tmp_path / "out.json", {"v": 1})
    with atomic_dir(tmp_path / "model") as tmp:
        (tmp / "a").write_text("1")
    assert not stale_file.exists() and not stale_dir.exists() and live.exists()


def test_a_folder_moved_aside_by_a_killed_writer_is_restored(tmp_path: Path) -> None:
    old = tmp_path / ".model.old"  # killed between moving the old folder aside and the new one in
    old.mkdir()
    (old / "weights").write_text("old")
    clean_stale(tmp_path / "model")
    assert (tmp_path / "model" / "weights").read_text() == "old" and not old.exists()


def test_a_second_writer_of_a_folder_is_refused_and_the_holder_may_reenter(tmp_path: Path) -> None:
    errors: list[BaseException] = []

    def second_writer() -> None:
        try:
            with exclusive(tmp_path / "out", "run folder"):
                pass
        except BusyError as err:
            errors.append(err)

    with exclusive(tmp_path / "out", "run folder"), exclusive(tmp_path / "out"):  # re-entered: fine
        worker = threading.Thread(target=second_writer)
        worker.start()
        worker.join()
    assert len(errors) == 1 and "another sieveqa process is writing this run folder" in str(errors[0])
    held_elsewhere = FileLock(str(tmp_path / "out" / ".lock"))  # as another process would hold it
    with held_elsewhere, pytest.raises(BusyError), exclusive(tmp_path / "out"):
        pass
    with exclusive(tmp_path / "out"):  # released
        pass


def test_output_paths_are_checked_before_work(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is a folder"):
        check_output_file(tmp_path, "--output")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        check_output_file(tmp_path / "file" / "out.json", "--json")
    with pytest.raises(ConfigError, match="is a file; give a folder"):
        check_output_dir(tmp_path / "file", "--out")
    assert check_output_file(tmp_path / "new" / "out.json", "--json") == tmp_path / "new" / "out.json"
