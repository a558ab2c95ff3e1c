"""Ctrl-C that is never lost. Python turns SIGINT into KeyboardInterrupt wherever the main
thread happens to be; where that is a finaliser or an at-fork hook (the logging module's,
run each time a bot process is started), the exception is printed as "ignored" and the
command plays on as if no one had asked it to stop. :func:`interrupts_kept` remembers every
SIGINT so that the command can raise it again at its next safe point."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["KeptInterrupts", "interrupts_kept"]


class KeptInterrupts:
    """Whether SIGINT came while inside :func:`interrupts_kept`."""

    def __init__(self) -> None:
        self._received = threading.Event()

    def handle(self, number: int, frame: FrameType | None) -> None:
        """The SIGINT handler: remember it, then interrupt as Python does."""
        self._received.set()
        signal.default_int_handler(number, frame)

    def check(self) -> None:
        """Raise KeyboardInterrupt if SIGINT came, even where its first one was swallowed."""
        if self._received.is_set():
            raise KeyboardInterrupt


@contextlib.contextmanager
def interrupts_kept() -> Iterator[KeptInterrupts]:
    """While inside, SIGINT raises KeyboardInterrupt as usual and is also remembered, for
    :meth:`KeptInterrupts.check` at the command's safe points. Only in the main thread (the
    only one that receives signals); elsewhere it remembers nothing."""
    kept = KeptInterrupts()
    if threading.current_thread() is not threading.main_thread():
        yield kept
        return
    previous = signal.signal(signal.SIGINT, kept.handle)
    try:
        yield kept
    finally:
        signal.signal(signal.SIGINT, previous)
