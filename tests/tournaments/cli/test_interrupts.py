"""Ctrl-C is never lost: a SIGINT whose KeyboardInterrupt Python swallows (raised in a
finaliser or an at-fork hook, where it is only printed as "ignored") is raised again at the
command's next safe point."""

from __future__ import annotations

import signal
import sys
from typing import Any

import pytest

from tournaments.cli.interrupts import interrupts_kept


class _InterruptedFinaliser:
    """Like the logging module's at-fork hook when Ctrl-C lands in it."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)


def test_an_interrupt_swallowed_where_it_landed_is_raised_at_the_next_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    swallowed: list[type[BaseException] | None] = []

    def unraisable(hook: Any) -> None:
        swallowed.append(hook.exc_type)

    monkeypatch.setattr(sys, "unraisablehook", unraisable)
    before = signal.getsignal(signal.SIGINT)
    with interrupts_kept() as interrupts:
        interrupts.check()  # nothing came yet
        _InterruptedFinaliser()  # dropped at once: its KeyboardInterrupt goes nowhere
        assert swallowed == [KeyboardInterrupt]
        with pytest.raises(KeyboardInterrupt):
            interrupts.check()
    assert signal.getsignal(signal.SIGINT) is before


def test_an_interrupt_still_interrupts_where_it_lands() -> None:
    with interrupts_kept(), pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
