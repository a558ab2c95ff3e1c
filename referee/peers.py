"""Who is at the other end of a connection to the referee's ipc socket: the connection itself
(its descriptor and that socket's inode), the endpoint it was made on, and the process that
sent a message with its ancestors (from ``/proc``).

The server tells a bot's hello from another process's that knows the bot's token with these,
and notices that a bot's connection dropped. Operating-system calls alone: which descriptor
and which pid a message came with, ZeroMQ tells :mod:`referee.edge`.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

__all__ = ["Connection", "connection_of", "endpoint_path", "is_dropped", "lineage"]

#: A connection in the referee's process: its file descriptor and that socket's inode (once
#: ZeroMQ drops the connection, the descriptor is closed or is another's).
Connection = tuple[int, int]
#: How many generations of ancestors :func:`lineage` reads at most.
_LINEAGE_DEPTH = 64


def connection_of(descriptor: int | None) -> Connection | None:
    """The connection on ``descriptor`` (its socket's inode read now); None if there is none."""
    if descriptor is None:
        return None
    try:
        return descriptor, os.fstat(descriptor).st_ino
    except OSError:
        return None


def endpoint_path(connection: Connection | None) -> str | None:
    """The path of the ipc endpoint ``connection`` was made on (the accepted connection's own
    address); None if there is no connection or it is no ipc one."""
    if connection is None:
        return None
    try:
        with socket.socket(fileno=os.dup(connection[0])) as accepted:
            name = accepted.getsockname()
    except OSError:
        return None
    return name if isinstance(name, str) and name else None


def is_dropped(connection: Connection | None) -> bool:
    """Whether ``connection`` is gone: ZeroMQ closed its descriptor (a message over the size
    limit, the peer gone), which is now closed or another socket's."""
    if connection is None:
        return False
    try:
        return os.fstat(connection[0]).st_ino != connection[1]
    except OSError:
        return True


def lineage(pid: int | None) -> tuple[int, ...]:
    """``pid``, then its parent's pid, and so on up (from ``/proc``); empty for None."""
    if pid is None:
        return ()
    found = [pid]
    while len(found) < _LINEAGE_DEPTH and found[-1] > 1:
        try:
            stat = Path(f"/proc/{found[-1]}/stat").read_text(encoding="ascii", errors="replace")
            parent = int(stat.rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            break
        found.append(parent)
    return tuple(found)
