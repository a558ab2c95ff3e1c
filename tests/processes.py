"""Finding processes from tests (Linux: reads /proc)."""

from __future__ import annotations

import contextlib
import os
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
