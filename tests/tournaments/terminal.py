"""A command on a pseudo-terminal, as a person runs it: what it shows (escape codes
removed), typed answers, every wait bounded."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
WAIT = 20.0  # seconds: the longest any single screen may take to appear


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class PseudoTerminal:
    """``argv`` on the slave side of a pty of ``rows`` x ``columns``; the test reads the
    master side."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        cwd: Path | None = None,
        rows: int = 40,
        columns: int = 120,
        sigint_ignored: bool = False,
    ) -> None:
        """``sigint_ignored``: start ``argv`` with SIGINT ignored, as a shell without job
        control starts a background command (the setting passes through exec)."""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.process = subprocess.Popen(
            list(argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=dict(env),
            cwd=cwd,
            close_fds=True,
            preexec_fn=_ignore_sigint if sigint_ignored else None,
        )
        os.close(slave)
        self.master = master
        self.screen = ""  # everything shown so far, escape codes removed
        self.read_to = 0  # how far expect() has consumed

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the other side is closed
            return False
        if not chunk:
            return False
        self.screen += _ANSI.sub("", chunk.decode("utf-8", errors="replace"))
        return True

    def expect(self, pattern: re.Pattern[str] | str, timeout: float = WAIT) -> re.Match[str]:
        """Wait for ``pattern`` in the output after the last match; fail after ``timeout``."""
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        while True:
            found = regex.search(self.screen, self.read_to)
            if found is not None:
                self.read_to = found.end()
                return found
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (not self._read(min(remaining, 0.5)) and self._exited()):
                found = regex.search(self.screen, self.read_to)
                if found is not None:
                    self.read_to = found.end()
                    return found
                pytest.fail(
                    f"{regex.pattern!r} did not appear within {timeout} s; "
                    f"screen ends with:\n{self.screen[-2000:]}"
                )

    def _exited(self) -> bool:
        if self.process.poll() is None:
            return False
        while self._read(0.05):  # drain what is left
            pass
        return True

    def type(self, text: str) -> None:
        """Type ``text`` (add ``\\n`` to send a line)."""
        os.write(self.master, text.encode())

    def wait(self, timeout: float = WAIT) -> int:
        """The exit code, reading the rest of the output meanwhile."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        while self._read(0.05):
            pass
        try:
            return self.process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pytest.fail(f"the command is still running; screen ends with:\n{self.screen[-2000:]}")

    def close(self) -> None:
        """Stop the command if it is still running (Ctrl-C first, so that it stops its bots)
        and release the pty."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        os.close(self.master)
