from pathlib import Path

import pytest

from sieveqa.io import atomic_dir, atomic_open, atomic_write_json


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
