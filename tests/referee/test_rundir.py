"""The referee's private directory, and the sweep that removes those of dead referees."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import tempfile
import threading
from pathlib import Path

import pytest

from referee import rundir
from referee.rundir import (
    OWNER_FILE,
    PREFIX,
    PrivateDirectory,
    remove_stale_directories,
)
from tests.protocol.sdk_support import python_script

ROOT = Path(__file__).resolve().parents[2]


def holds_lock(path: str | Path) -> bool:
    """Whether some live process holds the lock of the directory ``path``."""
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)
    return False


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


_HOLDER = (
    "import sys, time\n"
    "from referee.rundir import PrivateDirectory\n"
    "print(PrivateDirectory(sys.argv[1]).path, flush=True)\n"
    "time.sleep(60)\n"
)


def test_the_sweep_removes_the_directory_of_a_referee_killed_outright(tmp_path: Path) -> None:
    with python_script(_HOLDER, str(tmp_path)) as (holder, printed):
        path = Path(printed)
        (path / "referee").write_text("")
        assert remove_stale_directories(str(tmp_path)) == []  # alive: left alone
        assert path.is_dir()
        holder.kill()
        holder.wait(10)
        assert path.is_dir()  # a killed process cannot clean up after itself
        assert remove_stale_directories(str(tmp_path)) == [str(path)]
        assert not path.exists()


def test_the_sweep_touches_nothing_else(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep").write_text("")
    (precious / OWNER_FILE).write_text("")
    (tmp_path / f"{PREFIX}link").symlink_to(precious)  # a link named like ours: not followed
    (tmp_path / f"{PREFIX}file").write_text("")
    logs = tmp_path / "aegis-ref-logs" / "host-1"  # where a worker may put bot logs
    logs.mkdir(parents=True)
    (logs / "first.log").write_text("")
    unmarked = tmp_path / f"{PREFIX}unmarked"  # named like ours, but no referee made it
    unmarked.mkdir()
    crowded = tmp_path / f"{PREFIX}crowded"  # a referee's, then somebody put more in it
    crowded.mkdir()
    (crowded / OWNER_FILE).write_text("1\n")
    (crowded / "notes.txt").write_text("")
    assert remove_stale_directories(str(tmp_path)) == []
    assert (precious / "keep").exists()
    assert (tmp_path / f"{PREFIX}file").exists()
    assert (logs / "first.log").exists()
    assert unmarked.is_dir()
    assert (crowded / "notes.txt").exists()


def test_creation_waits_out_a_sweep_that_holds_the_new_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweeping referee may lock a new directory for a moment before it sees that no owner
    file marks it as a referee's; the new referee waits for the lock, then marks it."""
    real_mkdtemp = tempfile.mkdtemp
    held: list[int] = []

    def mkdtemp_held_briefly(*args: object, **kwargs: object) -> str:
        path = str(real_mkdtemp(*args, **kwargs))  # type: ignore[call-overload]
        descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.append(descriptor)
        threading.Timer(0.05, os.close, (descriptor,)).start()
        return path

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp_held_briefly)
    directory = PrivateDirectory(str(tmp_path))
    try:
        assert len(held) == 1
        assert holds_lock(directory.path)
        assert (Path(directory.path) / OWNER_FILE).read_text() == f"{os.getpid()}\n"
    finally:
        directory.remove()


def test_creation_gives_up_on_a_directory_locked_for_good(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_mkdtemp = tempfile.mkdtemp
    held: list[int] = []

    def mkdtemp_held(*args: object, **kwargs: object) -> str:
        path = str(real_mkdtemp(*args, **kwargs))  # type: ignore[call-overload]
        held.append(os.open(path, os.O_RDONLY | os.O_DIRECTORY))
        fcntl.flock(held[-1], fcntl.LOCK_EX | fcntl.LOCK_NB)
        return path

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp_held)
    monkeypatch.setattr(rundir, "_LOCK_WAIT_SECONDS", 0.05)
    try:
        with pytest.raises(OSError, match="stayed locked"):
            PrivateDirectory(str(tmp_path))
        assert list(tmp_path.iterdir()) == []  # nothing left behind
    finally:
        for descriptor in held:
            os.close(descriptor)


def test_without_locks_the_directory_is_made_unmarked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system that cannot lock: the referee still gets its directory and removes it
    itself, and no sweep may take it for a dead referee's."""

    def no_locks(_descriptor: int, _operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    directory = PrivateDirectory(str(tmp_path))
    path = Path(directory.path)
    assert path.is_dir()
    assert not (path / OWNER_FILE).exists()
    monkeypatch.undo()
    assert remove_stale_directories(str(tmp_path)) == []
    directory.remove()
    assert not path.exists()


def test_the_sweep_removes_no_directory_tree_or_link_inside(tmp_path: Path) -> None:
    """Only a regular file and a socket are what a referee leaves; a tree named like the
    socket, or an owner "file" that is a directory, keeps the whole directory."""
    for name, inner in (("tree", "referee"), ("owner-dir", OWNER_FILE)):
        left = tmp_path / f"{PREFIX}{name}"
        left.mkdir()
        if inner == "referee":
            (left / OWNER_FILE).touch()
        (left / inner).mkdir()
        (left / inner / "thesis.tex").write_text("years of work")
    linked = tmp_path / f"{PREFIX}link-inside"
    linked.mkdir()
    (linked / OWNER_FILE).touch()
    (linked / "referee").symlink_to(tmp_path / "elsewhere")
    assert remove_stale_directories(str(tmp_path)) == []
    assert (tmp_path / f"{PREFIX}tree" / "referee" / "thesis.tex").exists()
    assert (tmp_path / f"{PREFIX}owner-dir" / OWNER_FILE / "thesis.tex").exists()
    assert (linked / "referee").is_symlink()


def test_a_failed_owner_file_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(*_arguments: object, **_options: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    before = set(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(Path, "write_text", disk_full)
    with pytest.raises(OSError, match="No space"):
        PrivateDirectory(str(tmp_path))
    assert list(tmp_path.iterdir()) == []
    assert set(os.listdir("/proc/self/fd")) <= before


def test_a_forked_child_does_not_remove_its_parent_s_directory(tmp_path: Path) -> None:
    directory = PrivateDirectory(str(tmp_path))
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status only
        try:
            directory.remove()
        finally:
            os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    try:
        assert Path(directory.path).is_dir()
        assert holds_lock(directory.path)
    finally:
        directory.remove()
    assert not Path(directory.path).exists()
