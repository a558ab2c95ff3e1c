"""Finding processes (Linux: reads /proc), and waiting for something to come true."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from referee.cgroups import system_cpu_stall_us


def processes_running(text: str) -> list[int]:
    """Pids of live processes whose command line (its words joined by spaces) holds ``text``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
                if text.encode() in command:
                    found.append(int(entry))
    return found


def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Whether ``condition()`` comes true within ``timeout`` seconds (asked every 20 ms)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


class MachineWatch:
    """Wall time since it started, and how much of it the machine kept runnable tasks
    waiting for a CPU (the kernel's CPU pressure, where it keeps it): what a test of a
    wall-clock limit allows for on a busy machine without losing its meaning on an idle one."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self._stall_us = system_cpu_stall_us()

    def elapsed(self) -> float:
        """Seconds since the watch started."""
        return time.monotonic() - self.started

    def stalled(self) -> float:
        """Seconds of that in which some runnable task waited for a CPU (0 where unknown)."""
        now = system_cpu_stall_us()
        if self._stall_us is None or now is None:
            return 0.0
        return (now - self._stall_us) / 1e6

    def unstalled(self) -> float:
        """Seconds since the watch started, less those the machine kept tasks waiting."""
        return self.elapsed() - self.stalled()

    def busy_share(self) -> float | None:
        """The share of the time the machine was that busy, where the kernel says."""
        if self._stall_us is None or system_cpu_stall_us() is None:
            return None
        return self.stalled() / max(self.elapsed(), 1e-3)
