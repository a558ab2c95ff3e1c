"""The ladder's planner: the interface the coordinator plays against.

Placeholder of the planner's types and signatures until the planner itself lands: every
value type is as the planner defines it; :func:`plan_round` and :func:`check_settings`
raise until then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tournaments.ratings import RatingFit

__all__ = [
    "Certification",
    "LadderSettings",
    "PairOutcome",
    "RoundPlan",
    "check_settings",
    "plan_round",
]


@dataclass(frozen=True, slots=True)
class LadderSettings:
    """How a ladder plays and when it stops."""

    top: int | None = None
    confidence: float = 0.95
    max_matches: int | None = None
    rounds: int | None = None
    random_share: float = 0.1
    repeat_penalty: float = 100.0
    finalists: int | None = None
    prior_games: float = 2.0


@dataclass(frozen=True, slots=True)
class PairOutcome:
    """One duplicate pair as stored."""

    first: str
    second: str
    first_wins: int
    second_wins: int
    round: int


@dataclass(frozen=True, slots=True)
class Certification:
    """What the results decide about the top of the ladder."""

    summary: str

    def text(self) -> str:
        """The certification line of the standings."""
        return self.summary


@dataclass(frozen=True, slots=True)
class RoundPlan:
    """One round of a ladder: who meets, who waits, who is out, and whether to stop."""

    round_number: int
    pairs: tuple[tuple[str, str], ...]
    byes: tuple[str, ...]
    resting: tuple[str, ...]
    phase: str
    status: Mapping[str, str]
    certification: Certification
    stop: bool
    fit: RatingFit


def plan_round(
    bots: Sequence[str],
    results: Sequence[PairOutcome],
    round_number: int,
    seed: int,
    settings: LadderSettings,
    *,
    matches_played: int,
) -> RoundPlan:
    """The pairs of round ``round_number`` from the results of the rounds before it."""
    raise NotImplementedError("the ladder planner is not available")


def check_settings(settings: LadderSettings, field_size: int) -> list[tuple[str, str]]:
    """Problems with ``settings`` for a field of ``field_size`` bots, as (key, message)."""
    raise NotImplementedError("the ladder planner is not available")
