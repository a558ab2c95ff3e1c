"""Self-play runs: many matches between built-in policies from one master seed, counted and
written as one record (``aegis-ref selfplay``, the golden records, tests)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from referee.record_files import write_record
from referee.records import dumps_line, match_lines
from referee.rules.game import Seat
from referee.rules.match import Termination
from referee.rules.options import RulesOptions
from referee.seeds import derive_seed
from referee.selfplay import POLICIES, PlayedMatch, play_policy_match

__all__ = ["SelfplaySummary", "play_selfplay", "run_selfplay"]


@dataclass(slots=True)
class SelfplaySummary:
    """Counts over a self-play run, for its one-line report."""

    matches: int = 0
    games: int = 0
    wins: Counter[Seat] = field(default_factory=Counter)
    terminations: Counter[Termination] = field(default_factory=Counter)

    def add(self, played: PlayedMatch) -> None:
        """Count one finished match."""
        result = played.match.result
        if result is None:
            raise ValueError("a self-play match always ends")
        self.matches += 1
        self.games += len(played.games)
        self.wins[result.winner] += 1
        self.terminations[result.termination] += 1


def play_selfplay(
    *, matches: int, seed: int, policies: Sequence[str], options: RulesOptions
) -> Iterator[PlayedMatch]:
    """Play ``matches`` whole matches between built-in policies (seat 0's name first).

    Match k deals from ``derive_seed(seed, "match", k)`` and seat s's policy draws from
    ``derive_seed(seed, "policy", k, s)``, so each match is reproducible on its own.
    """
    for number in range(1, matches + 1):
        players = [
            POLICIES[name](derive_seed(seed, "policy", number, seat))
            for seat, name in enumerate(policies)
        ]
        yield play_policy_match(options, derive_seed(seed, "match", number), players)


def run_selfplay(
    *,
    matches: int,
    seed: int,
    policies: Sequence[str],
    options: RulesOptions,
    record: Path | None = None,
) -> SelfplaySummary:
    """Play self-play matches, write their record to ``record`` if given, and count them."""
    summary = SelfplaySummary()
    played_matches = play_selfplay(matches=matches, seed=seed, policies=policies, options=options)
    if record is None:
        for played in played_matches:
            summary.add(played)
        return summary

    def lines() -> Iterator[str]:
        for number, played in enumerate(played_matches, 1):
            summary.add(played)
            for line in match_lines(played, policies, number):
                yield dumps_line(line)

    write_record(record, lines())
    return summary
