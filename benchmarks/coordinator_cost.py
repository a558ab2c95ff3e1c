"""The coordinator's own cost per stored match as the store grows.

A synthetic ladder of ``--bots`` bots (1,000 by default, true Elo ~ N(0, 200²)) is written
into a real results store through the store's own API (``add_schedule``, ``save_result``,
``save_round``: rounds of duplicate pairs between random partners, one winner drawn from the
Elo difference, one match in a hundred a timeout forfeit), up to each of ``--sizes`` stored
matches (10^3, 10^4, 10^5). The fill skips the record files and commits without waiting
for the disk (nothing reads them here); the measured matches do both, as a run does.

At each size, with each display, ``--matches`` more matches go through the coordinator's
real code paths, one after the other, as fast as they can (a worker never waits for the
coordinator then, which is the worst case for the coordinator's share), timed after the
display's first table (the live display computes it at the start, the log display after a
tenth of the matches to play: once a run, not once a match):

- *store*: ``_Coordinator.store`` (the record file written and synced, then the row in one
  transaction, the forfeit tally, the display told);
- *progress*: the web service's list of matches in flight noted (rewritten at most four
  times a second, :class:`~tournaments.run.in_play.InPlayNotes`) and the display's tick, as
  the coordinator's loop does after each wait;
- *standings refresh*: inside the display: the terminal's live display
  (:class:`~tournaments.report.terminal.LiveDisplay`) recomputes the standings from the
  store when due, the log's (:class:`~tournaments.report.terminal.LinesDisplay`) prints
  them every so many matches.

Reported per size: the wall time and CPU time per match with each display (``quiet``:
no display at all, the store and the list of matches in flight alone), the time of one full
standings computation (``load_standings``) and how many each display paid for while timed
(:class:`~tournaments.report.terminal.StandingsPace`: at most 1 ms of it a match),
the time to plan the ladder's next round (``plan_round``, once per round of ``bots``
matches) and the process's resident memory. Target (issue 30): at most 2 ms a match with
10^5 matches stored, memory flat.

    python benchmarks/coordinator_cost.py [--bots 1000] [--sizes 1000,10000,100000]
                                          [--matches 400]
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import math
import random
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from threadpoolctl import threadpool_limits

from referee.bundled import resolve_bot
from referee.rules.options import RulesOptions
from referee.time_control import TimeControl
from tournaments.config.tournament import TournamentSetup
from tournaments.report.terminal import LinesDisplay, LiveDisplay, QuietDisplay
from tournaments.run.coordinator import StopRequest, _Coordinator
from tournaments.run.display import TournamentDisplay
from tournaments.run.worker import MatchOutcome
from tournaments.schedule.pairings import ScheduledMatch, match_id, pairing_key
from tournaments.stats.ladder import LadderSettings, PairOutcome, plan_round
from tournaments.stats.standings import load_standings
from tournaments.store.database import (
    StoredRound,
    add_schedule,
    ensure_meta,
    open_store,
    save_bots,
    save_result,
    save_round,
)
from tournaments.store.rows import ResultRow

#: One record line of about the size of a real one (a hello, a deal, a decision...).
_RECORD_LINE = json.dumps(
    {"type": "decision", "seat": 0, "action": "play", "card": "7H"} | {"padding": "x" * 120}
)


class _Field:
    """The synthetic ladder: bots, their true strengths and the rounds written so far."""

    def __init__(self, bots: int, seed: int) -> None:
        self.random = random.Random(seed)
        self.names = [f"bot-{index:04d}" for index in range(bots)]
        self.elo = {name: self.random.gauss(0, 200) for name in self.names}
        self.round = 0
        self.outcomes: list[PairOutcome] = []

    def next_round(self) -> list[ScheduledMatch]:
        """A round of duplicate pairs between random partners (the ladder's id scheme)."""
        self.round += 1
        order = self.names[:]
        self.random.shuffle(order)
        matches = []
        for first, second in zip(order[::2], order[1::2], strict=True):
            for seats in ((first, second), (second, first)):
                matches.append(
                    ScheduledMatch(
                        match_id(self.round, seats),
                        self.round,
                        pairing_key(first, second),
                        seats,
                        self.round,
                    )
                )
        return matches

    def row(self, match: ScheduledMatch) -> ResultRow:
        """A result drawn from the true Elo difference; one in a hundred a timeout."""
        first, second = match.seats
        expected = 1 / (1 + 10 ** ((self.elo[second] - self.elo[first]) / 400))
        winner_seat = 0 if self.random.random() < expected else 1
        forfeit = self.random.random() < 0.01
        loser = 1 - winner_seat
        return ResultRow(
            match_id=match.match_id,
            seat0=first,
            seat1=second,
            void=False,
            winner_seat=winner_seat,
            winner=match.seats[winner_seat],
            termination="forfeit" if forfeit else "target",
            score0=25 if winner_seat == 0 else 12,
            score1=25 if winner_seat == 1 else 12,
            games=6,
            games_won0=4 if winner_seat == 0 else 2,
            games_won1=4 if winner_seat == 1 else 2,
            forfeit_seat=loser if forfeit else None,
            forfeit_bot=match.seats[loser] if forfeit else None,
            forfeit_kind="timeout" if forfeit else None,
            forfeit_json=json.dumps({"fault": "timeout"}) if forfeit else None,
            faults_json="[]",
            timings_json="{}",
            record_path=f"records/match-{match.match_id}.jsonl",
            duration_s=0.5,
            worker="bench:1",
            finished_at="2026-01-01T00:00:00.000+00:00",
        )

    def note(self, row: ResultRow, partner: ResultRow) -> None:
        """Keep a complete duplicate pair for the planner."""
        first, second = row.seat0, row.seat1
        wins = [r.winner for r in (row, partner)]
        self.outcomes.append(
            PairOutcome(first, second, wins.count(first), wins.count(second), self.round)
        )

    def save_plan(self, connection: Any) -> None:
        """What the ladder planned for this round, as the standings read it."""
        save_round(
            connection,
            StoredRound(
                self.round,
                tuple(self.names),
                "swiss",
                len(self.names) // 2,
                (),
                dict.fromkeys(self.names, "contender"),
                "top 10 open",
                False,
            ),
        )


def _fill(connection: Any, field: _Field, stored: int, target: int) -> int:
    """Whole rounds through the store's API until ``target`` matches are stored."""
    connection.execute("PRAGMA synchronous = OFF")  # the fill only: nothing to survive
    while stored < target:
        matches = field.next_round()
        add_schedule(connection, matches)
        field.save_plan(connection)
        rows = [field.row(match) for match in matches]
        for row in rows:
            save_result(connection, row)
        for row, partner in zip(rows[::2], rows[1::2], strict=True):
            field.note(row, partner)
        stored += len(matches)
    connection.execute("PRAGMA synchronous = FULL")
    return stored


def _rss_mb() -> float:
    """The process's resident set size now, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def _measure(
    connection: Any,
    field: _Field,
    output: Path,
    matches: int,
    display: TournamentDisplay,
    stored: int,
) -> tuple[float, float, int, int]:
    """Store matches of a new round through the coordinator's paths with ``display``: first,
    untimed, until the display has computed its first table (a run's start, paid once), then
    ``matches`` more, timed. Wall and CPU ms per timed match, the tables computed while
    timed, and the matches stored in all."""
    setup = TournamentSetup(
        name="coordinator-cost",
        bots=(resolve_bot("random", "random-1"), resolve_bot("random", "random-2")),
        format="ladder",
        gauntlet=(),
        matches_per_pair=2,
        options=RulesOptions(),
        time_control=TimeControl(decision_ms=1000, warmup_ms=10000),
        concurrency=2,
        seed=1,
        output=output,
    )
    coordinator = _Coordinator(setup, None, display, StopRequest())  # type: ignore[arg-type]
    computed = 0

    def standings() -> Any:
        nonlocal computed
        computed += 1
        return load_standings(connection)

    round_matches = field.next_round()[: 2 * matches]
    add_schedule(connection, round_matches)
    field.save_plan(connection)
    # A run with these matches left: the log display's first table comes after a tenth.
    display.start("coordinator-cost", stored + len(round_matches), stored, standings)
    warm_up = isinstance(display, LinesDisplay)
    timed = computed_before = 0
    wall = cpu = 0.0
    for index, match in enumerate(round_matches):
        if timed == matches:
            break
        counting = not warm_up or computed > 0
        if counting and not timed:
            computed_before = computed
            wall, cpu = time.perf_counter(), time.process_time()
        outcome = MatchOutcome(field.row(match), [_RECORD_LINE] * 40)
        coordinator._note_in_play({index: round_matches[index : index + 4]})  # type: ignore[dict-item]
        coordinator.store(connection, match, outcome)
        display.tick()
        timed += counting
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    coordinator._note_in_play({})
    display.finish(None)
    return 1000 * wall / timed, 1000 * cpu / timed, computed - computed_before, index


def _timed(action: Callable[[], object]) -> tuple[float, float]:
    """The wall and CPU time of ``action`` in ms."""
    wall, cpu = time.perf_counter(), time.process_time()
    action()
    return 1000 * (time.perf_counter() - wall), 1000 * (time.process_time() - cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bots", type=int, default=1000)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--matches", type=int, default=400)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--blas-threads", type=int, default=1)
    arguments = parser.parse_args()
    sizes = [int(size) for size in arguments.sizes.split(",")]
    # As run_tournament does (None: the BLAS libraries' own count, a thread per core).
    with threadpool_limits(limits=arguments.blas_threads, user_api="blas"):
        _run(arguments, sizes)


def _run(arguments: argparse.Namespace, sizes: list[int]) -> None:
    """Fill the store up to each size in turn and measure there."""
    field = _Field(arguments.bots, arguments.seed)
    settings = LadderSettings(top=10)
    with tempfile.TemporaryDirectory(prefix="aegis-coordinator-cost-") as scratch:
        output = Path(scratch)
        connection = open_store(output)
        ensure_meta(
            connection,
            name="coordinator-cost",
            rules={"target_score": 25},
            time_control={"decision_ms": 1000},
            seed=1,
            anchor=None,
            directory=output,
        )
        save_bots(connection, [resolve_bot("random", name) for name in field.names])
        stored = 0
        print(
            f"{arguments.bots} bots; {arguments.matches} matches measured at each size; "
            f"BLAS threads {arguments.blas_threads}; ms per match: wall / CPU"
        )
        print(
            "| matches stored | quiet display | live display | log display | standings (ms) | "
            "tables live / log | plan a round (ms) | RSS (MB) |",
            flush=True,
        )
        for size in sizes:
            fill = time.perf_counter()
            stored = _fill(connection, field, stored, size)
            fill = time.perf_counter() - fill
            standings_ms = _timed(lambda: load_standings(connection))
            plan_ms = _timed(
                functools.partial(
                    plan_round,
                    field.names,
                    field.outcomes,
                    field.round + 1,
                    7,
                    settings,
                    matches_played=size,
                )
            )
            console = Console(file=io.StringIO(), force_terminal=True, width=140)
            measured = []
            for display in (QuietDisplay(console), LiveDisplay(console), LinesDisplay(console)):
                *figures, used = _measure(
                    connection, field, output, arguments.matches, display, stored
                )
                measured.append(figures)
                stored += used
            quiet, live, lines = measured
            print(
                f"| {size:,} | {quiet[0]:.2f} / {quiet[1]:.2f} "
                f"| {live[0]:.2f} / {live[1]:.2f} | {lines[0]:.2f} / {lines[1]:.2f} "
                f"| {standings_ms[0]:.0f} / {standings_ms[1]:.0f} | {live[2]} / {lines[2]} "
                f"| {plan_ms[0]:.0f} / {plan_ms[1]:.0f} "
                f"| {_rss_mb():.0f} (fill {fill:.0f} s) |",
                flush=True,
            )
        connection.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
