"""The time control of a match: what a bot may spend on each decision, over the match, and on
its warm-up. Plain data: a config, the command line and a match task carry it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TimeControl"]


@dataclass(frozen=True, slots=True)
class TimeControl:
    """The clock: per-decision deadline, optional per-match bank, and a warm-up allowance for
    the handshake, the ``ready`` and each bot's first decision of a match."""

    decision_ms: int = 1000
    bank_ms: int | None = None
    warmup_ms: int = 5000

    def __post_init__(self) -> None:
        if self.decision_ms <= 0 or self.warmup_ms < 0 or (self.bank_ms or 0) < 0:
            raise ValueError(f"invalid time control {self}")

    def to_json(self) -> dict[str, int | None]:
        """As sent in ``match_start``."""
        return {
            "decision_ms": self.decision_ms,
            "bank_ms": self.bank_ms,
            "warmup_ms": self.warmup_ms,
        }
