"""Standings: per-bot tallies, ratings and the crosstable, as plain functions over results.

The input is the store's :class:`~tournaments.store.database.ResultGroup` rows (results summed by
seats and outcome), so the work and memory grow with the number of pairings, not matches.
A forfeit is a loss for the bot that faulted; a void match (both bots failed before the
first game) counts for nobody and is only tallied as void.

The intervals of the ratings treat a duplicate pair (the two matches of a round between two
bots, which share their deals) as the unit, as the SPRT does, given the store's
:class:`~tournaments.store.database.PairGroup` rows; the intervals that count every match as
independent are kept beside them (:class:`~tournaments.stats.ratings.Rating`).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tournaments.stats.ratings import PairResults, Rating, RatingFit, fit_elo
from tournaments.stats.sprt import PairCounts
from tournaments.store.database import (
    PairGroup,
    ResultGroup,
    StoredRound,
    count_results,
    count_scheduled,
    count_unscheduled,
    latest_round,
    pair_results,
    read_containment,
    read_meta,
    result_groups,
    retired_bots,
    retired_counts,
    snapshot,
    stored_bot_names,
    unscheduled_bot_names,
)

__all__ = [
    "BotRecord",
    "Standings",
    "StandingsRow",
    "build_standings",
    "crosstable",
    "load_standings",
    "pair_crosstable",
    "tally",
    "win_counts",
]


@dataclass(slots=True)
class BotRecord:
    """One bot's results. ``matches`` counts decided matches (wins + losses), not void."""

    name: str
    matches: int = 0
    wins: int = 0
    losses: int = 0
    void: int = 0
    games: int = 0
    games_won: int = 0
    points_for: int = 0
    points_against: int = 0
    #: Matches this bot lost by its own fault, by fault kind.
    forfeits: Counter[str] = field(default_factory=Counter)

    @property
    def win_rate(self) -> float | None:
        """Wins per decided match, None before the first."""
        return self.wins / self.matches if self.matches else None

    @property
    def points_for_per_game(self) -> float | None:
        """Average game points scored per game played."""
        return self.points_for / self.games if self.games else None

    @property
    def points_against_per_game(self) -> float | None:
        """Average game points conceded per game played."""
        return self.points_against / self.games if self.games else None


def tally(names: Sequence[str], groups: Iterable[ResultGroup]) -> dict[str, BotRecord]:
    """Every bot's record, in ``names`` order (bots met only in results are added after)."""
    records = {name: BotRecord(name) for name in names}
    for group in groups:
        for seat in (0, 1):
            name = group.seats[seat]
            record = records.setdefault(name, BotRecord(name))
            if group.winner_seat is None:
                record.void += group.matches
                continue
            record.matches += group.matches
            if group.winner_seat == seat:
                record.wins += group.matches
            else:
                record.losses += group.matches
                if group.forfeit_seat == seat and group.forfeit_kind is not None:
                    record.forfeits[group.forfeit_kind] += group.matches
            record.games += group.games
            record.games_won += group.games_won[seat]
            record.points_for += group.scores[seat]
            record.points_against += group.scores[1 - seat]
    return records


def win_counts(groups: Iterable[ResultGroup]) -> dict[tuple[str, str], int]:
    """``{(winner, loser): matches}`` over decided matches: the input of the Elo fit."""
    counts: Counter[tuple[str, str]] = Counter()
    for group in groups:
        if group.winner_seat is not None:
            winner = group.seats[group.winner_seat]
            loser = group.seats[1 - group.winner_seat]
            counts[(winner, loser)] += group.matches
    return dict(counts)


def crosstable(
    wins: Mapping[tuple[str, str], int],
) -> dict[str, dict[str, tuple[int, int]]]:
    """``table[a][b] = (a's wins against b, a's losses against b)`` for pairs that met."""
    table: dict[str, dict[str, tuple[int, int]]] = {}
    for (winner, loser), count in wins.items():
        won, lost = table.setdefault(winner, {}).get(loser, (0, 0))
        table[winner][loser] = (won + count, lost)
        won, lost = table.setdefault(loser, {}).get(winner, (0, 0))
        table[loser][winner] = (won, lost + count)
    return table


def pair_crosstable(pairs: Iterable[PairGroup]) -> dict[str, dict[str, PairCounts]]:
    """``table[a][b]``: the complete duplicate pairs between ``a`` and ``b`` as ``a`` lost
    both, split and won both of them (pairs with a void match are left out, as the SPRT
    leaves them out)."""
    table: dict[str, dict[str, PairCounts]] = {}
    for group in pairs:
        if sum(group.wins) != 2:
            continue
        for me, other, won in (
            (group.bots[0], group.bots[1], group.wins[0]),
            (group.bots[1], group.bots[0], group.wins[1]),
        ):
            counts = list(table.setdefault(me, {}).get(other, PairCounts()).as_tuple())
            counts[won] += group.pairs
            table[me][other] = PairCounts(*counts)
    return table


def _pair_results(pairs: Iterable[PairGroup]) -> PairResults:
    return {(*group.bots, *group.wins): group.pairs for group in pairs}


@dataclass(frozen=True, slots=True)
class StandingsRow:
    """One line of the standings."""

    rank: int
    record: BotRecord
    rating: Rating

    @property
    def name(self) -> str:
        """The bot's name."""
        return self.record.name


@dataclass(frozen=True, slots=True)
class Standings:
    """The standings of a tournament at one moment."""

    name: str
    #: Best first: by Elo, then win rate, then name; bots without results last.
    rows: tuple[StandingsRow, ...]
    crosstable: dict[str, dict[str, tuple[int, int]]]
    fit: RatingFit
    matches_played: int
    matches_scheduled: int
    anchor: str | None
    #: Why the bots ran unsandboxed in some run, if they did ("bots ran unsandboxed as
    #: user root: ..."); None when sandboxed.
    containment: str | None = None
    #: ``pairs[a][b]``: the complete duplicate pairs between ``a`` and ``b``, from ``a``'s side.
    pairs: dict[str, dict[str, PairCounts]] = field(default_factory=dict)
    #: Stored matches the current schedule leaves out (not counted here), and the bots of
    #: earlier runs that it leaves out.
    matches_unscheduled: int = 0
    unscheduled_bots: tuple[str, ...] = ()
    #: A ladder's last planned round: each bot's status and the certification; None for
    #: the other formats.
    ladder: StoredRound | None = None

    def status(self, name: str) -> str | None:
        """A ladder's bot's place in the race ("contender", "out", "finalist"), else None."""
        return None if self.ladder is None else self.ladder.status.get(name)

    @property
    def warnings(self) -> tuple[str, ...]:
        """Warnings about the run (bots unsandboxed), what is left out (bots removed) and
        the ratings (results graph not connected, …)."""
        return (
            ((self.containment,) if self.containment else ())
            + ((self.left_out,) if self.matches_unscheduled or self.unscheduled_bots else ())
            + self.fit.warnings
        )

    @property
    def left_out(self) -> str:
        """What the standings leave out, for people."""
        removed = (
            f"no longer scheduled, so not shown: {', '.join(self.unscheduled_bots)}"
            if self.unscheduled_bots
            else ""
        )
        matches = (
            f"{self.matches_unscheduled} stored match(es) outside the current schedule are not "
            "counted (kept in the store; they count again if a run schedules them again)"
            if self.matches_unscheduled
            else ""
        )
        return "; ".join(part for part in (removed, matches) if part)

    @property
    def games(self) -> int:
        """Games played over all stored matches."""
        return sum(row.record.games for row in self.rows) // 2

    @property
    def void(self) -> int:
        """Void matches stored."""
        return sum(row.record.void for row in self.rows) // 2


def build_standings(
    name: str,
    names: Sequence[str],
    groups: Iterable[ResultGroup],
    *,
    matches_played: int,
    matches_scheduled: int,
    anchor: str | None = None,
    containment: str | None = None,
    pairs: Iterable[PairGroup] | None = None,
    matches_unscheduled: int = 0,
    unscheduled_bots: Sequence[str] = (),
    ladder: StoredRound | None = None,
) -> Standings:
    """Standings from aggregated results: tallies, Elo with intervals, crosstable;
    ``containment``: why the bots ran unsandboxed, if they did; ``pairs``: the same results
    by duplicate pair, which make the pair the unit of the intervals (else the match);
    ``matches_unscheduled`` and ``unscheduled_bots``: what the current schedule leaves out."""
    groups = list(groups)
    pair_groups = None if pairs is None else list(pairs)
    records = tally(names, groups)
    wins = win_counts(groups)
    everyone = list(records)
    fit = fit_elo(
        everyone,
        wins,
        anchor=anchor if anchor in records else None,
        pairs=None if pair_groups is None else _pair_results(pair_groups),
        # A ladder's bots have few pairs each, most against close neighbours.
        small_sample=ladder is not None,
        # A ladder's pairs mostly meet once: its prior is the planner's, games against a
        # bot of the mean rating, not a virtual draw per pair that met.
        **(
            {
                "virtual_draws": 0.0,
                "prior_games": ladder.prior_games,
                "confidence": ladder.confidence,
            }
            if ladder is not None
            else {}
        ),
    )

    def order(record: BotRecord) -> tuple[int, float, float, str]:
        elo = fit.ratings[record.name].elo
        rate = record.win_rate
        return (
            elo is None,
            -(elo if elo is not None else 0.0),
            -(rate if rate is not None else -1.0),
            record.name,
        )

    ordered = sorted(records.values(), key=order)
    rows = tuple(
        StandingsRow(rank, record, fit.ratings[record.name])
        for rank, record in enumerate(ordered, 1)
    )
    return Standings(
        name=name,
        rows=rows,
        crosstable=crosstable(wins),
        fit=fit,
        matches_played=matches_played,
        matches_scheduled=matches_scheduled,
        anchor=anchor if anchor in records else None,
        containment=containment,
        pairs=pair_crosstable(pair_groups or ()),
        matches_unscheduled=matches_unscheduled,
        unscheduled_bots=tuple(unscheduled_bots),
        ladder=ladder,
    )


def load_standings(connection: sqlite3.Connection, *, anchor: str | None = None) -> Standings:
    """The standings of the store behind ``connection``, over its current schedule (the last
    run's config: a bot removed from it is left out, with its matches), read in one
    transaction (the results by seats and by pair must be the same matches, even during a
    run); ``anchor`` overrides the stored rating anchor. A retired bot (a league's bot
    replaced by its next version) and its matches are left out too: they are the bot's
    history (:func:`tournaments.league.runner.bot_history`)."""
    with snapshot(connection):
        meta = read_meta(connection)
        names, groups = stored_bot_names(connection), result_groups(connection)
        pairs = pair_results(connection)
        played, scheduled = count_results(connection), count_scheduled(connection)
        retired = retired_bots(connection)
        if retired:
            names = [name for name in names if name not in retired]
            groups = (group for group in groups if not set(group.seats) & retired.keys())
            pairs = (pair for pair in pairs if not set(pair.bots) & retired.keys())
            retired_scheduled, retired_played = retired_counts(connection, current=True)
            played, scheduled = played - retired_played, scheduled - retired_scheduled
        return build_standings(
            meta.name if meta is not None else "",
            names,
            groups,
            matches_played=played,
            matches_scheduled=scheduled,
            anchor=anchor if anchor is not None else (meta.anchor if meta is not None else None),
            containment=read_containment(connection),
            pairs=pairs,
            matches_unscheduled=count_unscheduled(connection),
            unscheduled_bots=unscheduled_bot_names(connection),
            ladder=latest_round(connection),
        )
