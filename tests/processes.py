"""Finding processes (Linux: reads /proc), and waiting for something to come true."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path


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
