"""Take a worker's bots down with it when it dies: a watcher process.

A worker process can be killed outright (``kill -9``, the out-of-memory killer, a Dask
nanny restarting it, or the kernel's parent-death signal when its coordinator is killed), and
then nothing in it can stop its bots. The kernel's parent-death signal takes the bots it
started, but not what they started in turn: a grandchild that left the bot's session and
environment, or a sandbox still being set up. So every worker starts this script once,
before its first bot::

    python -I tournaments/run/reaper.py MARKER WORKER_PID

with a pipe as its standard input, and gives every bot it starts the environment variable
``AEGIS_WORKER_MARKER=MARKER`` (a bot's descendants inherit it). Only the worker holds the
pipe's write end: end of file means the worker is gone, however it went. The reaper then
SIGKILLs every process in the worker's bot cgroups (``aegis-ref-WORKER_PID``: everything its
bots started, wherever it went), then every process still carrying the marker, with its
process group (all it can find on a machine without cgroups); it removes the private
directories of referees that are gone (the worker's among them), and exits. A worker that
ends cleanly has stopped its bots already, and says so (``q`` down the pipe) before it closes
the pipe: the reaper then leaves the worker's cgroups alone, since a worker that lives on (a
Dask worker) makes new ones for the bots of its next reaper.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from referee.bots import kill_until_gone, processes_with_environment
from referee.cgroups import detect_cgroups, remove_groups_of
from referee.rundir import remove_stale_directories

__all__ = ["CLEAN_END", "MARKER_VARIABLE", "kill_marked", "main", "marked_processes"]

#: The environment variable that marks a worker's bots.
MARKER_VARIABLE = "AEGIS_WORKER_MARKER"
#: What a worker writes into the pipe before it closes it when it ends cleanly.
CLEAN_END = b"q"


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
    """Wait for end of file on standard input, then kill the marked processes and the
    worker's bot cgroups."""
    if len(argv) not in (2, 3) or not argv[1] or (len(argv) == 3 and not argv[2].isdigit()):
        print(
            "usage: reaper.py MARKER [WORKER_PID]  (standard input: the worker's pipe)",
            file=sys.stderr,
        )
        return 2
    marker = argv[1]
    worker = int(argv[2]) if len(argv) == 3 else None
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the pipe decides
    if worker is not None:
        # Probed now, while the worker lives: the probe sweeps the groups of referees that
        # are gone, and the worker's are for remove_groups_of to kill (and count) later.
        detect_cgroups()
    clean = False
    while True:
        try:
            data = os.read(0, 4096)
        except InterruptedError:
            continue
        except OSError:
            break
        if not data:
            break
        clean = clean or CLEAN_END in data
    # The cgroups first: they hold everything, and are killed at once (cgroup.kill on v2).
    # Not after a clean end: the worker stopped its bots, and the groups it makes from now
    # on belong to the bots of its next reaper (a Dask worker's next tournament).
    killed = 0 if worker is None or clean else remove_groups_of(worker)
    killed += kill_marked(marker)
    # The worker's private directories, which it could not remove: no bot holds them now.
    remove_stale_directories()
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
