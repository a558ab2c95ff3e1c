"""Faults: everything a bot can do wrong, as data (the kinds are the protocol's
:class:`~protocol.codes.FaultKind`), and why a bot failed, in words for people.

:func:`explain_fault` is the one place that says why a bot failed: the fault, where (the
game and decision), what happened, the bot's last line of output and, where one is known, a
hint (a Python bot that cannot import the SDK is told which interpreter it ran under).
Every command that prints a fault (``tournament``, ``match``, ``sprt``, ``check-bot``) goes
through it; :func:`fault_reason` is the same without the bot's name.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from protocol.codes import FaultKind

__all__ = [
    "Fault",
    "FaultKind",
    "explain_fault",
    "fault_reason",
    "last_output_line",
    "module_hint",
    "printable",
]

#: The longest piece of a bot's output quoted in one line.
QUOTE_LIMIT = 200


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault: who, what, where, and the bot's last output lines."""

    kind: FaultKind
    seat: int
    bot: str
    detail: str
    game: int | None = None
    decision: int | None = None
    stderr_tail: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The fault as written in records."""
        return {
            "seat": self.seat,
            "bot": self.bot,
            "fault": self.kind.value,
            "detail": self.detail,
            "game": self.game,
            "decision": self.decision,
            "stderr_tail": list(self.stderr_tail),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fault:
        """A fault as :meth:`to_json` wrote it; ValueError naming what is wrong if it is not
        one."""
        try:
            kind = FaultKind(data["fault"])
            seat, bot, detail = data["seat"], data["bot"], data["detail"]
            game, decision = data.get("game"), data.get("decision")
            tail = data.get("stderr_tail") or []
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"not a fault: {str(dict(data))[:80]!r} ({error!r})") from None
        if not (
            isinstance(seat, int)
            and isinstance(bot, str)
            and isinstance(detail, str)
            and (game is None or isinstance(game, int))
            and (decision is None or isinstance(decision, int))
            and isinstance(tail, list)
            and all(isinstance(line, str) for line in tail)
        ):
            raise ValueError(f"not a fault: {str(dict(data))[:80]!r}")
        return cls(kind, seat, bot, detail, game, decision, tuple(tail))

    @property
    def where(self) -> str:
        """``in game 3, decision 7``; ``before the first game`` (the handshake, ``ready``)."""
        return self._location() or "before the first game"

    def _location(self) -> str:
        if self.game is None:
            return ""
        if self.decision is None:
            return f"in game {self.game}"
        return f"in game {self.game}, decision {self.decision}"

    def describe(self) -> str:
        """One line for people (:func:`explain_fault` adds the bot's output and hints)."""
        where = self._location()
        kind = f"{self.kind.value} {where}" if where else self.kind.value
        return f"{self.bot} (seat {self.seat}) {kind}: {self.detail}"


def printable(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` safe to print on a terminal: characters that do not print (a bot's escape
    sequences) shown as escapes, and at most ``limit`` characters (the end kept: it says the
    most)."""
    text = "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def last_output_line(tail: Sequence[str]) -> str | None:
    """The bot's last line of output that is not blank, stripped and at most
    :data:`QUOTE_LIMIT` characters; None if it wrote nothing. Quote it with ``repr``, which
    escapes what does not print."""
    for line in reversed(tail):
        if line.strip():
            line = line.strip()
            return line if len(line) <= QUOTE_LIMIT else "…" + line[-(QUOTE_LIMIT - 1) :]
    return None


_MISSING_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([^']+)'")
#: What the Python SDK imports that a plain interpreter lacks: aegis-ref's own packages and
#: its dependencies.
_SDK_MODULES = frozenset({"protocol", "referee", "zmq", "msgpack"})
_PYTHON = re.compile(r"(python|pypy)[0-9.]*")


def module_hint(tail: Sequence[str], command: Sequence[str] = ()) -> str | None:
    """A hint for a Python bot whose output ends in a missing module: which interpreter its
    command ran (``command``: the bot's command line, when known) and which one to use;
    None when its output shows no missing module."""
    found = None
    for line in reversed(tail[-5:]):
        found = _MISSING_MODULE.search(line)
        if found is not None:
            break
    if found is None:
        return None
    module = found.group(1).split(".")[0]
    program = command[0] if command else ""
    if _PYTHON.fullmatch(os.path.basename(program)):
        resolved = program if "/" in program else shutil.which(program) or program
        shown = program if resolved == program else f"{program} ({resolved})"
        interpreter = f"it ran under {printable(shown)}, which"
        own = os.path.abspath(resolved) == os.path.abspath(sys.executable)
    else:
        interpreter = "the Python its command starts"
        own = False
    if module not in _SDK_MODULES:
        return (
            f"hint: {interpreter} cannot import {module!r}: install it for that interpreter, "
            "or start the bot with one that has it"
        )
    if own:
        return (
            f"hint: {printable(program)} is the referee's own interpreter, yet it cannot import "
            f"{module!r}, which the Python SDK needs: does the bot's env or sandbox hide it?"
        )
    return (
        f"hint: {interpreter} cannot import {module!r}: the Python SDK comes with aegis-ref, "
        "so start the bot with an interpreter that has aegis-ref installed, such as the "
        f"referee's: {sys.executable} (every bot gets its path in $AEGIS_PYTHON)"
    )


def fault_reason(fault: Fault, command: Sequence[str] = (), *, hint: bool = True) -> str:
    """Why the bot failed, in one line without its name: ``handshake before the first game:
    process ended (exit code 2) before a valid hello; last output: '…'``, then a hint where
    one is known, unless not ``hint`` (``command``: the bot's command line, for
    :func:`module_hint`)."""
    text = f"{fault.kind.value} {fault.where}: {printable(fault.detail, 2 * QUOTE_LIMIT)}"
    last = last_output_line(fault.stderr_tail)
    if last is not None:
        text += f"; last output: {last!r}"
    advice = module_hint(fault.stderr_tail, command) if hint else None
    if advice is not None:
        text += f"; {advice}"
    return text


def explain_fault(fault: Fault, command: Sequence[str] = (), *, hint: bool = True) -> str:
    """Why a bot failed, in one line: ``trumpyy (seat 1) handshake before the first game:
    …; last output: '…'`` (see :func:`fault_reason`)."""
    seat = f" (seat {fault.seat})" if fault.seat >= 0 else ""  # -1: not in a match yet
    return f"{fault.bot}{seat} {fault_reason(fault, command, hint=hint)}"
