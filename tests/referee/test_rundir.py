"""The referee's private directory, and the sweep that removes those of dead referees."""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from referee.rundir import PREFIX, PrivateDirectory, holds_lock, remove_stale_directories

ROOT = Path(__file__).resolve().parents[2]


def test_a_private_directory_is_ours_alone_and_locked_until_removed(tmp_path: Path) -> None:
    directory = PrivateDirectory(str(tmp_path))
    path = Path(directory.path)
    assert path.parent == tmp_path
    assert path.name.startswith(PREFIX)
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert holds_lock(path)
    (path / "referee").write_text("a socket would be here")
    directory.remove()
    assert not path.exists()
    directory.remove()  # idempotent


def test_the_sweep_leaves_a_live_referee_s_directory(tmp_path: Path) -> None:
    directory = PrivateDirectory(str(tmp_path))
    assert remove_stale_directories(str(tmp_path)) == []
    assert Path(directory.path).is_dir()
    directory.remove()


def _holder(parent: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process that holds a private directory under ``parent`` until it is killed."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from referee.rundir import PrivateDirectory\n"
            "print(PrivateDirectory(sys.argv[1]).path, flush=True)\n"
            "time.sleep(60)\n",
            str(parent),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert holder.stdout is not None
    return holder, Path(holder.stdout.readline().strip())


def test_the_sweep_removes_the_directory_of_a_referee_killed_outright(tmp_path: Path) -> None:
    holder, path = _holder(tmp_path)
    try:
        (path / "referee").write_text("")
        assert remove_stale_directories(str(tmp_path)) == []  # alive: left alone
        assert path.is_dir()
        holder.kill()
        holder.wait(10)
        assert path.is_dir()  # a killed process cannot clean up after itself
        assert remove_stale_directories(str(tmp_path)) == [str(path)]
        assert not path.exists()
    finally:
        holder.kill()
        holder.wait(10)
        if holder.stdout is not None:
            holder.stdout.close()


def test_the_sweep_touches_nothing_else(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep").write_text("")
    (tmp_path / f"{PREFIX}link").symlink_to(precious)  # a link named like ours: not followed
    (tmp_path / f"{PREFIX}file").write_text("")
    (tmp_path / "aegis-other").mkdir()  # not a referee's
    assert remove_stale_directories(str(tmp_path)) == []
    assert (precious / "keep").exists()
    assert (tmp_path / f"{PREFIX}file").exists()
    assert (tmp_path / "aegis-other").is_dir()


def test_a_directory_nobody_holds_is_stale(tmp_path: Path) -> None:
    """What a referee killed between creating its directory and locking it leaves."""
    orphan = Path(tempfile.mkdtemp(prefix=PREFIX, dir=tmp_path))
    assert remove_stale_directories(str(tmp_path)) == [str(orphan)]


def test_creation_moves_on_from_a_directory_another_referee_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweeping referee may lock a directory between mkdtemp and flock (it takes it for
    stale and removes it); the new referee then makes another."""
    real_mkdtemp = tempfile.mkdtemp
    taken: list[tuple[str, int]] = []

    def mkdtemp_swept_first(*args: object, **kwargs: object) -> str:
        path = real_mkdtemp(*args, **kwargs)  # type: ignore[call-overload]
        if not taken:
            descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            taken.append((path, descriptor))
        return str(path)

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp_swept_first)
    directory = PrivateDirectory(str(tmp_path))
    try:
        assert taken
        assert directory.path != taken[0][0]
        assert holds_lock(directory.path)
    finally:
        directory.remove()
        os.close(taken[0][1])
