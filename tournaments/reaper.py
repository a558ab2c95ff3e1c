"""Take a worker's bots down with it when it dies: a watcher process, standard library only.

A local pool worker watches its coordinator from a thread and kills its own bots if the
coordinator dies. A worker process that others manage (a Dask worker) can itself be killed
(``kill -9``, the out-of-memory killer, a nanny restarting it), and a thread dies with it.
So such a worker starts this script once::

    python -I tournaments/reaper.py MARKER

with a pipe as its standard input, and gives every bot it starts the environment variable
``AEGIS_WORKER_MARKER=MARKER`` (a bot's descendants inherit it). Only the worker holds the
pipe's write end: end of file means the worker is gone, however it went. The reaper then
SIGKILLs every process carrying the marker, with its process group, and exits. A worker that
ends normally has stopped its bots already, and the reaper finds nothing to kill.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from referee.bots import kill_until_gone, processes_with_environment

__all__ = ["MARKER_VARIABLE", "kill_marked", "main", "marked_processes"]

#: The environment variable that marks a worker's bots.
MARKER_VARIABLE = "AEGIS_WORKER_MARKER"


def marked_processes(marker: str) -> list[int]:
    """Pids of live processes whose environment carries ``AEGIS_WORKER_MARKER=marker``."""
    return processes_with_environment(MARKER_VARIABLE, marker)


def kill_marked(marker: str, settle: float = 0.3, limit: float = 10.0) -> int:
    """SIGKILL every marked process and its process group until none has been seen for
    ``settle`` seconds (a bot may be forking meanwhile); return how many were signalled. A
    bot leads its own process group: the group takes its children that dropped the marker
    from their environment."""
    found = kill_until_gone(
        lambda: marked_processes(marker), settle=settle, limit=limit, interval=0.05
    )
    return len(found)


def main(argv: list[str]) -> int:
    """Wait for end of file on standard input, then kill the marked processes."""
    if len(argv) != 2 or not argv[1]:
        print("usage: reaper.py MARKER  (standard input: the worker's pipe)", file=sys.stderr)
        return 2
    marker = argv[1]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the pipe decides
    while True:
        try:
            if not os.read(0, 4096):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    killed = kill_marked(marker)
    if killed:
        with contextlib.suppress(OSError):
            print(
                f"aegis-ref reaper: worker gone; killed {killed} bot process(es) of {marker}",
                file=sys.stderr,
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
