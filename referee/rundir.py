"""The referee's private temporary directory, and the sweeping of those of dead referees.

A referee binds its ipc endpoint in a directory of its own, which it removes when it closes.
A referee killed outright (``kill -9``, the out-of-memory killer) cannot remove it, so each
directory is held with an advisory lock (``flock``) for as long as its referee lives; the
kernel drops the lock when the process dies, however it dies. Every new referee first removes
the directories whose lock it can take: their owners are gone. Locks, unlike pids, stay true
across pid namespaces and pid reuse.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["PREFIX", "PrivateDirectory", "holds_lock", "remove_stale_directories"]

#: The name of every referee directory starts so; the sweep looks at nothing else.
PREFIX = "aegis-ref-"
_ATTEMPTS = 5


class PrivateDirectory:
    """A new directory (mode 0700) named ``aegis-ref-*`` under ``parent`` (default: the
    system's temporary directory), locked until :meth:`remove`."""

    def __init__(self, parent: str | None = None) -> None:
        for _ in range(_ATTEMPTS):
            path = tempfile.mkdtemp(prefix=PREFIX, dir=parent)
            descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                # A sweeping referee took it between mkdtemp and flock, and removes it.
                os.close(descriptor)
                continue
            if _same_inode(path, descriptor):
                self.path = path
                self._descriptor: int | None = descriptor
                return
            os.close(descriptor)  # swept before the lock was ours: the path is gone
        raise OSError(f"could not create a private directory in {parent or tempfile.gettempdir()}")

    def remove(self) -> None:
        """Remove the directory and its contents, then release the lock; idempotent."""
        if self._descriptor is None:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self._descriptor)
        self._descriptor = None


def remove_stale_directories(parent: str | None = None) -> list[str]:
    """Remove the ``aegis-ref-*`` directories under ``parent`` (default: the system's
    temporary directory) that belong to this user and whose referee is gone; return them.

    A directory of a live referee is locked and left alone, as is anything not ours.
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
                    if _same_inode(entry.path, descriptor):
                        shutil.rmtree(entry.path, ignore_errors=True)
                        removed.append(entry.path)
                except BlockingIOError:
                    pass  # its referee is alive
                finally:
                    os.close(descriptor)
    return removed


def _same_inode(path: str, descriptor: int) -> bool:
    """Whether ``path`` still names the directory open as ``descriptor``."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(descriptor)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def holds_lock(path: str | Path) -> bool:
    """Whether some live process holds the lock of the directory ``path`` (for tests and
    diagnostics)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)
    return False
