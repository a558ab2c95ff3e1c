"""Faults: everything a bot can do wrong, as data (the kinds are the protocol's
:class:`~protocol.codes.FaultKind`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol.codes import FaultKind

__all__ = ["Fault", "FaultKind"]


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

    def describe(self) -> str:
        """One line for people."""
        where = ""
        if self.game is not None:
            where = f" in game {self.game}"
            if self.decision is not None:
                where += f", decision {self.decision}"
        return f"{self.bot} (seat {self.seat}) {self.kind.value}{where}: {self.detail}"
