"""The schedule: which bots meet, in which seats, with which seed, in which order.

Plain functions of the bot names, the format and the master seed, so the same config always
gives the same schedule:

- **Duplicate play.** Matches come in pairs: round ``k`` of a pairing is two matches with
  the same seed ``derive_seed(master_seed, "match", k)`` and the seats swapped, so both bots
  are dealt the same cards in the same order. Every pairing uses the same list of seeds.
- **Interleaving.** Round ``k`` of every pairing comes before round ``k + 1`` of any, so a
  tournament stopped half way has played every pairing about equally.
- **Stable ids.** A match id names its round and its seats (``r0003-alpha+beta``), never a
  position in the list, so adding a bot adds matches without renaming the old ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from referee.seeds import derive_seed

__all__ = [
    "ScheduledMatch",
    "match_id",
    "match_seed",
    "pairing_key",
    "pairings",
    "schedule",
    "schedule_size",
]


@dataclass(frozen=True, slots=True)
class ScheduledMatch:
    """One match of the schedule."""

    match_id: str
    #: The duplicate round, from 1: both seat orders of a pairing share its seed.
    round: int
    #: The pairing, its two names sorted and joined by ``+``.
    pairing: str
    #: Bot names by seat, seat 0 first.
    seats: tuple[str, str]
    seed: int


def match_seed(master_seed: int, round_number: int) -> int:
    """The seed of every match of round ``round_number`` (from 1), whoever plays it."""
    return derive_seed(master_seed, "match", round_number)


def match_id(round_number: int, seats: Sequence[str]) -> str:
    """``r0003-alpha+beta``: round 3, alpha in seat 0. Bot names never contain ``+``."""
    return f"r{round_number:04d}-{seats[0]}+{seats[1]}"


def pairing_key(first: str, second: str) -> str:
    """The pairing's name, the same whichever bot is named first."""
    low, high = sorted((first, second))
    return f"{low}+{high}"


def pairings(
    names: Sequence[str], format: str = "round_robin", gauntlet: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """The pairs that meet, in config order.

    ``round_robin``: every pair of bots. ``gauntlet``: each bot named in ``gauntlet`` against
    every bot not named there (the named bots do not play each other).
    """
    if format == "round_robin":
        return [
            (first, second) for index, first in enumerate(names) for second in names[index + 1 :]
        ]
    if format == "gauntlet":
        return [
            (runner, opponent)
            for runner in gauntlet
            for opponent in names
            if opponent not in gauntlet
        ]
    raise ValueError(f"unknown tournament format {format!r}")


def schedule(
    names: Sequence[str],
    *,
    format: str = "round_robin",
    gauntlet: Sequence[str] = (),
    matches_per_pair: int = 2,
    master_seed: int = 1,
) -> Iterator[ScheduledMatch]:
    """Every match in playing order: round by round, each pairing's two seat orders in turn.

    A generator: a long schedule is never held in memory.
    """
    if matches_per_pair < 2 or matches_per_pair % 2:
        raise ValueError(f"matches_per_pair must be even and at least 2, got {matches_per_pair}")
    pairs = pairings(names, format, gauntlet)
    for round_number in range(1, matches_per_pair // 2 + 1):
        seed = match_seed(master_seed, round_number)
        for first, second in pairs:
            key = pairing_key(first, second)
            for seats in ((first, second), (second, first)):
                yield ScheduledMatch(match_id(round_number, seats), round_number, key, seats, seed)


def schedule_size(
    names: Sequence[str],
    *,
    format: str = "round_robin",
    gauntlet: Sequence[str] = (),
    matches_per_pair: int = 2,
) -> int:
    """How many matches :func:`schedule` yields."""
    return len(pairings(names, format, gauntlet)) * matches_per_pair
