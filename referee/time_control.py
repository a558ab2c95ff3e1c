"""The time control of a match: what a bot may spend on each decision, over the match, and on
its warm-up, and by which clock. Plain data: a config, the command line and a match task
carry it."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Clock", "TimeControl"]


class Clock(enum.StrEnum):
    """What a decision is charged: the CPU time of the bot's cgroup, or the wall clock."""

    CPU = "cpu"
    WALL = "wall"


@dataclass(frozen=True, slots=True)
class TimeControl:
    """The clock: per-decision deadline, optional per-match bank, and a warm-up allowance for
    the handshake, the ``ready`` and each bot's first decision of a match.

    ``clock``: ``None`` (the default) charges CPU time where the bot's cgroup counts it and
    the wall clock elsewhere; ``cpu`` requires the CPU clock (a referee without it refuses to
    start); ``wall`` charges the wall clock. Under the CPU clock ``decision_ms``, ``bank_ms``
    and the warm-up of a first decision are CPU milliseconds, and a decision may take at most
    ``backstop`` times its CPU allowance in wall time (a bot that sleeps or blocks ends too).
    """

    decision_ms: int = 1000
    bank_ms: int | None = None
    warmup_ms: int = 5000
    clock: Clock | None = None
    backstop: float = 3.0

    def __post_init__(self) -> None:
        if (
            self.decision_ms <= 0
            or self.warmup_ms < 0
            or (self.bank_ms or 0) < 0
            or not self.backstop >= 1
            or (self.clock is not None and not isinstance(self.clock, Clock))
        ):
            raise ValueError(f"invalid time control {self}")

    def to_json(self) -> dict[str, int | None]:
        """As sent in ``match_start``."""
        return {
            "decision_ms": self.decision_ms,
            "bank_ms": self.bank_ms,
            "warmup_ms": self.warmup_ms,
        }
