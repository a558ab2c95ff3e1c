"""The referee's private temporary directory, and the sweeping of those of dead referees.

A referee binds its ipc endpoint in a directory of its own, which it removes when it closes.
A referee killed outright (``kill -9``, the out-of-memory killer) cannot remove it, so each
directory is held with an advisory lock (``flock``) for as long as its referee lives; the
kernel drops the lock when the process dies, however it dies. Every new referee first removes
the directories whose lock it can take: their owners are gone. Locks, unlike pids, stay true
across pid namespaces and pid reuse.

The sweep removes only what a referee made: a directory named ``aegis-ref-ipc-*``, owned by
this user, holding the owner file a referee writes once it holds the lock, and nothing but
that file and the referee's sockets.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path

__all__ = ["OWNER_FILE", "PREFIX", "PrivateDirectory", "remove_stale_directories"]

#: The name of every referee directory starts so; the sweep looks at nothing else.
PREFIX = "aegis-ref-ipc-"
#: Written (with the referee's pid) once the directory is locked: the mark of a referee's.
OWNER_FILE = ".aegis-ref-owner"
#: All a referee's directory may hold for the sweep to remove it: the mark, and the sockets
#: (``referee``, or one ``bot-N`` per started bot).
_EXPECTED = frozenset({OWNER_FILE, "referee"})
_BOT_SOCKET = re.compile(r"bot-[0-9]{1,12}")
#: A sweeping referee holds a new directory's lock for a moment; wait this long at most.
_LOCK_WAIT_SECONDS = 2.0


class PrivateDirectory:
    """A new directory (mode 0700) named ``aegis-ref-ipc-*`` under ``parent`` (default: the
    system's temporary directory), locked until :meth:`remove`.

    Where the file system cannot lock, the directory is made all the same, unlocked and
    unmarked: the referee still removes it when it closes, and no sweep ever touches it.
    """

    def __init__(self, parent: str | None = None) -> None:
        self.path = tempfile.mkdtemp(prefix=PREFIX, dir=parent)
        self._descriptor: int | None = None
        # A process forked from this one inherits the object, not the directory: only the
        # creator removes it (see remove()).
        self._creator = os.getpid()
        descriptor = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if _lock_within(descriptor, _LOCK_WAIT_SECONDS):
                # A sweep that took the lock before this did found no owner file and left the
                # directory alone; from here on the lock keeps every sweep out.
                Path(self.path, OWNER_FILE).write_text(f"{self._creator}\n", encoding="ascii")
        except BaseException:
            os.close(descriptor)
            shutil.rmtree(self.path, ignore_errors=True)
            raise
        self._descriptor = descriptor

    def remove(self) -> None:
        """Remove the directory and its contents, then release the lock; idempotent. In a
        process forked from the creator, only let go of the inherited descriptor."""
        if self._descriptor is None:
            return
        if os.getpid() == self._creator:
            shutil.rmtree(self.path, ignore_errors=True)
        os.close(self._descriptor)
        self._descriptor = None


def _lock_within(descriptor: int, seconds: float) -> bool:
    """Take the lock, waiting up to ``seconds``; False where the file system cannot lock."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise OSError("a new private directory stayed locked by another process") from None
            time.sleep(0.001)
        except OSError:
            return False  # ENOLCK, EOPNOTSUPP: no locks on this file system
        else:
            return True


def remove_stale_directories(parent: str | None = None) -> list[str]:
    """Remove the referee directories under ``parent`` (default: the system's temporary
    directory) whose referee is gone; return them.

    A directory of a live referee is locked and left alone, as is anything not made by a
    referee (see the module's documentation), and anything of another user.
    """
    parent = parent or tempfile.gettempdir()
    removed = []
    uid = os.getuid()
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            if not entry.name.startswith(PREFIX):
                continue
            with contextlib.suppress(OSError):
                if not entry.is_dir(follow_symlinks=False) or entry.stat().st_uid != uid:
                    continue
                descriptor = os.open(
                    entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
                )
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    if _same_inode(entry.path, descriptor) and _empty_referee_directory(descriptor):
                        os.rmdir(entry.path)  # fails if anything arrived meanwhile
                        removed.append(entry.path)
                except BlockingIOError:
                    pass  # its referee is alive
                finally:
                    os.close(descriptor)
    return removed


def _empty_referee_directory(descriptor: int) -> bool:
    """Empty the locked directory open as ``descriptor`` if a referee left it: the owner file
    and at most the sockets, neither a directory nor a link. All of it goes through the
    descriptor, so nothing moved in or swapped for the path meanwhile can be deleted."""
    names = set(os.listdir(descriptor))
    if OWNER_FILE not in names or not all(
        name in _EXPECTED or _BOT_SOCKET.fullmatch(name) for name in names
    ):
        return False
    for name in names:
        mode = os.stat(name, dir_fd=descriptor, follow_symlinks=False).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISSOCK(mode)):
            return False
    for name in names:
        os.unlink(name, dir_fd=descriptor)
    return True


def _same_inode(path: str, descriptor: int) -> bool:
    """Whether ``path`` still names the directory open as ``descriptor``."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(descriptor)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
