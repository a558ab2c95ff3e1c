"""The first code a local pool worker runs: it ties the worker's life to its coordinator's
before any heavy import. Standard library only, and quick.

A spawned multiprocessing child starts by running its parent's main module again (as
``__mp_main__``), then unpickles what it is to do, importing the referee: a second or more
on a busy machine. A coordinator killed then (``kill -9``) would leave its workers importing,
and then playing the matches already queued for them. So the coordinator starts its workers
inside :func:`first_in_workers`, which names this module as the main module to run; in the
worker it runs before anything else and

- asks the kernel to SIGKILL the worker the moment its coordinator ends (Linux's
  parent-death signal: no thread to schedule, no import to wait for);
- ends the worker at once if the coordinator is already gone.

A worker killed that way starts no bot: a bot being started at that moment checks that its
worker still lives before it runs (:mod:`referee.bots`), and a started bot dies with its
worker by the same signal.

The parent-death signal comes when the *thread* that started the worker ends: a pool's
workers must be started (submitted to) from a thread that outlives the pool, as the
coordinator's run does.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.machinery
import os
import signal
import sys
import types
from collections.abc import Iterator

__all__ = ["COORDINATOR_VARIABLE", "first_in_workers", "tie_to_coordinator"]

#: The coordinator's pid, in the environment of a worker being started (and removed by it).
COORDINATOR_VARIABLE = "AEGIS_POOL_COORDINATOR"
_PR_SET_PDEATHSIG = 1


@contextlib.contextmanager
def first_in_workers() -> Iterator[None]:
    """While inside, a process started with the spawn method runs this module first (as its
    main module), and knows this process's pid as its coordinator's. Wrap the start of a
    pool's worker processes in it (their targets must not live in the main module)."""
    stand_in = types.ModuleType("__main__")
    stand_in.__spec__ = importlib.machinery.ModuleSpec(__name__, None)
    main = sys.modules["__main__"]
    previous = os.environ.get(COORDINATOR_VARIABLE)
    sys.modules["__main__"] = stand_in
    os.environ[COORDINATOR_VARIABLE] = str(os.getpid())
    try:
        yield
    finally:
        sys.modules["__main__"] = main
        if previous is None:
            os.environ.pop(COORDINATOR_VARIABLE, None)
        else:
            os.environ[COORDINATOR_VARIABLE] = previous


def tie_to_coordinator() -> None:
    """In a worker started inside :func:`first_in_workers`: die with the coordinator, or now
    if it is gone. The variable naming it is removed, so the worker's bots never see it."""
    value = os.environ.pop(COORDINATOR_VARIABLE, "")
    if not value.isdigit():
        return  # not started by a coordinator: nothing to tie to
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the worker's watchdog thread does the job
        prctl = None
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if os.getppid() != int(value):  # the coordinator died before the request took effect
        os._exit(1)


if __name__ == "__mp_main__":  # a worker started inside first_in_workers
    tie_to_coordinator()
