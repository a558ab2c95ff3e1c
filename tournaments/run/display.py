"""What the coordinator tells the person watching a tournament, as a protocol: the terminal
renderer (:mod:`tournaments.report.terminal`) implements it with rich, a test or a benchmark
with a few lines, and the coordinator needs neither rich nor the renderer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tournaments.stats.standings import Standings
from tournaments.store.rows import ResultRow

__all__ = ["TournamentDisplay"]


class TournamentDisplay(Protocol):
    """What the coordinator tells the person watching."""

    def start(self, name: str, total: int, done: int, standings: Callable[[], Standings]) -> None:
        """The run begins: ``done`` of ``total`` matches are already stored; ``standings``
        computes the current standings when called."""

    def match_stored(self, row: ResultRow) -> None:
        """A match was stored."""

    def tick(self) -> None:
        """Nothing else happened: called a few times a second while matches are played."""

    def note(self, text: str) -> None:
        """A line of information."""

    def finish(self, standings: Standings | None) -> None:
        """The run is over (finished or stopped): final standings if any."""
