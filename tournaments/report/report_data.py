"""The data of the HTML report (:mod:`tournaments.report.html_report` draws it): everything the page
shows, as typed values read from the results store.

Everything comes from the results store through its typed readers and the functions the
``standings`` command uses (:func:`~tournaments.stats.standings.load_standings`,
:func:`~tournaments.stats.ratings.fit_elo`), read in one transaction so that a report made during a
run is consistent. The rating progression refits the ratings after every k-th stored match,
in the order the matches were stored, at no more than :data:`MAX_PROGRESSION_POINTS` points
(fewer for many bots, since a fit costs about the fourth power of the number of bots); the
other parts stream the results once.
"""

from __future__ import annotations

import math
import sqlite3
import statistics
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from tournaments.stats.ratings import fit_elo
from tournaments.stats.standings import Standings, load_standings
from tournaments.store.database import (
    StoredMatch,
    StoredMeta,
    count_results,
    read_meta,
    snapshot,
    stored_activity,
    stored_matches,
    stored_outcomes,
)

__all__ = [
    "MAX_FAULTS_LISTED",
    "MAX_MATCHES_LISTED",
    "MAX_PROGRESSION_POINTS",
    "BotActivity",
    "FaultEntry",
    "FaultSummary",
    "ProgressionPoint",
    "ReportData",
    "fault_summary",
    "progression_marks",
    "rating_progression",
    "read_report",
]

#: Most points of the rating progression (ratings refitted this many times at most).
MAX_PROGRESSION_POINTS = 50
#: Most faults listed one by one (the latest); the per-bot counts include every fault.
MAX_FAULTS_LISTED = 100
#: Most matches listed with their record links; every record stays in ``records/``.
MAX_MATCHES_LISTED = 5000

#: Bots up to which the progression gets every point it asks for; beyond, fewer.
_CHEAP_BOTS = 20
_MIN_PROGRESSION_POINTS = 5


@dataclass(frozen=True, slots=True)
class ProgressionPoint:
    """The ratings after the first ``matches`` stored matches (rated bots only)."""

    matches: int
    elo: dict[str, float]


def progression_marks(total: int, bots: int, points: int = MAX_PROGRESSION_POINTS) -> list[int]:
    """After how many stored matches the ratings are refitted: about evenly spaced, always
    ending at ``total``; at most ``points`` of them, fewer for more than 20 bots (a fit's
    cost grows with the fourth power of the bots) but never fewer than 5."""
    if total <= 0 or points <= 0:
        return []
    if bots > _CHEAP_BOTS:
        points = min(points, max(_MIN_PROGRESSION_POINTS, int(points * (_CHEAP_BOTS / bots) ** 4)))
    count = min(total, points)
    return sorted({math.ceil(index * total / count) for index in range(1, count + 1)})


def rating_progression(
    connection: sqlite3.Connection,
    names: Sequence[str],
    *,
    anchor: str | None = None,
    points: int = MAX_PROGRESSION_POINTS,
) -> list[ProgressionPoint]:
    """The Elo ratings as they stood after every k-th stored match, fitted as the standings
    fit them (same model, same anchor); the last point is the current standings."""
    everyone = list(names)
    known = set(everyone)
    marks = deque(progression_marks(count_results(connection), len(everyone), points))
    wins: Counter[tuple[str, str]] = Counter()
    progression: list[ProgressionPoint] = []
    for stored, outcome in enumerate(stored_outcomes(connection), 1):
        if not marks:
            break  # results stored after the count was taken (a run in progress)
        seats, winner_seat = outcome.seats, outcome.winner_seat
        for name in seats:
            if name not in known:
                known.add(name)
                everyone.append(name)
        if winner_seat is not None:
            wins[(seats[winner_seat], seats[1 - winner_seat])] += 1
        if stored == marks[0]:
            marks.popleft()
            fit = fit_elo(everyone, wins, anchor=anchor if anchor in known else None)
            elo = {
                name: rating.elo for name, rating in fit.ratings.items() if rating.elo is not None
            }
            progression.append(ProgressionPoint(stored, elo))
    return progression


@dataclass(frozen=True, slots=True)
class FaultEntry:
    """One fault as a match's result stored it."""

    match_id: str
    record_path: str
    bot: str
    kind: str
    game: int | None
    decision: int | None
    detail: str
    #: The last line the bot wrote to stderr/stdout before the fault, if any.
    last_output: str


@dataclass(slots=True)
class BotActivity:
    """One bot's faults (every one recorded, forfeit or not) and decision times."""

    name: str
    faults: Counter[str] = field(default_factory=Counter)
    decisions: int = 0
    #: Milliseconds summed over every decision (for the mean) and the slowest decision.
    total_ms: float = 0.0
    max_ms: float | None = None
    #: Each decision's wall time and, on the CPU clock, its CPU charge, in ms.
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)

    @property
    def mean_ms(self) -> float | None:
        """Mean decision time in ms, None before the first decision."""
        return self.total_ms / self.decisions if self.decisions else None

    def wall_quantiles(self) -> tuple[float, float] | None:
        """Median and 95th percentile of the wall time per decision, ms (None: none)."""
        return _median_and_p95(self.wall_ms)

    def cpu_quantiles(self) -> tuple[float, float] | None:
        """Median and 95th percentile of the CPU charge per decision, ms (None: none)."""
        return _median_and_p95(self.cpu_ms)

    def budget_share(self, decision_ms: int) -> float | None:
        """How close the bot came to its budget: its largest charge (CPU on the CPU clock,
        else wall time) as a share of ``decision_ms`` (a match's first decision, which has
        the warm-up too, counts like the others)."""
        charges = self.cpu_ms or self.wall_ms
        return max(charges) / decision_ms if charges and decision_ms > 0 else None


def _median_and_p95(values: list[float]) -> tuple[float, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


@dataclass(frozen=True, slots=True)
class FaultSummary:
    """Faults and timings per bot, and the latest faults one by one."""

    bots: dict[str, BotActivity]
    #: The latest faults, oldest first (at most :data:`MAX_FAULTS_LISTED`).
    latest: tuple[FaultEntry, ...]
    total: int

    @property
    def kinds(self) -> list[str]:
        """Every fault kind that occurred, sorted."""
        return sorted({kind for bot in self.bots.values() for kind in bot.faults})


def fault_summary(
    connection: sqlite3.Connection, names: Sequence[str], *, latest: int = MAX_FAULTS_LISTED
) -> FaultSummary:
    """Every bot's faults by kind and decision times, from the stored results (one pass)."""
    bots = {name: BotActivity(name) for name in names}
    entries: deque[FaultEntry] = deque(maxlen=max(latest, 0))
    total = 0
    for match in stored_activity(connection):
        times = match.times
        for seat, name in enumerate(match.seats):
            activity = bots.setdefault(name, BotActivity(name))
            decisions, mean, slowest = (
                times.decisions[seat],
                times.mean_ms[seat],
                times.max_ms[seat],
            )
            if decisions and mean is not None:
                activity.decisions += decisions
                activity.total_ms += mean * decisions
            if slowest is not None:
                activity.max_ms = max(slowest, activity.max_ms or 0.0)
            activity.wall_ms.extend(times.wall_ms[seat])
            activity.cpu_ms.extend(times.cpu_ms[seat])
        for fault in match.faults:
            bots.setdefault(fault.bot, BotActivity(fault.bot)).faults[fault.kind] += 1
            total += 1
            entries.append(
                FaultEntry(
                    match_id=match.match_id,
                    record_path=match.record_path,
                    bot=fault.bot,
                    kind=fault.kind,
                    game=fault.game,
                    decision=fault.decision,
                    detail=fault.detail,
                    last_output=fault.stderr_tail[-1] if fault.stderr_tail else "",
                )
            )
    return FaultSummary(bots, tuple(entries), total)


@dataclass(frozen=True, slots=True)
class ReportData:
    """Everything the report shows, read at one moment."""

    standings: Standings
    #: None for a store that has no tournament meta yet.
    meta: StoredMeta | None
    progression: tuple[ProgressionPoint, ...]
    faults: FaultSummary
    #: The first :data:`MAX_MATCHES_LISTED` stored matches by match id.
    matches: tuple[StoredMatch, ...]


def read_report(
    connection: sqlite3.Connection,
    *,
    anchor: str | None = None,
    points: int = MAX_PROGRESSION_POINTS,
) -> ReportData:
    """What the report of the store behind ``connection`` shows, read in one transaction;
    ``anchor`` overrides the stored rating anchor (as ``aegis-ref standings --anchor``
    does), ``points`` caps the rating progression."""
    with snapshot(connection):
        meta = read_meta(connection)
        standings = load_standings(connection, anchor=anchor)
        names = [row.name for row in standings.rows]
        progression = rating_progression(connection, names, anchor=standings.anchor, points=points)
        faults = fault_summary(connection, names)
        matches = stored_matches(connection, limit=MAX_MATCHES_LISTED)
    return ReportData(standings, meta, tuple(progression), faults, tuple(matches))
