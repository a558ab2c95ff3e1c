"""What the tournament system shows at a terminal: rich tables and the live displays. The
only module below the command line that imports rich; the standings as text (CSV, JSON,
Markdown, HTML) are :mod:`tournaments.report.formats`. It computes nothing."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from referee.faults import Fault, explain_fault
from tournaments.report.formats import (
    FORMATS,
    column_headings,
    crosstable_cell,
    row_cells,
    summary_line,
)
from tournaments.report.report_data import BotActivity
from tournaments.stats.forfeits import row_faults
from tournaments.stats.standings import Standings
from tournaments.store.rows import ResultRow

__all__ = [
    "LaidOutOnce",
    "LinesDisplay",
    "LiveDisplay",
    "QuietDisplay",
    "StandingsPace",
    "crosstable_table",
    "has_fault",
    "match_line",
    "print_standings",
    "render_standings",
    "standings_table",
]

# ---------------------------------------------------------------------------------------------
# Rich


def standings_table(standings: Standings, *, limit: int | None = None) -> Table:
    """The standings as a rich table (the first ``limit`` rows if given)."""
    table = Table(
        title=f"{standings.name}: {summary_line(standings)}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for heading in column_headings(standings, short=True):
        table.add_column(
            heading,
            justify="left" if heading in ("bot", "forfeits") else "right",
            no_wrap=heading != "forfeits",
            # Forfeits by kind wrap, and fold rather than lose letters on a narrow terminal.
            overflow="fold" if heading == "forfeits" else "ellipsis",
        )
    rows = standings.rows if limit is None else standings.rows[:limit]
    for row in rows:
        table.add_row(*row_cells(row, standings))
    if limit is not None and len(standings.rows) > limit:
        table.caption = f"… and {len(standings.rows) - limit} more"
    return table


def decision_times_table(
    bots: Mapping[str, BotActivity], names: Sequence[str], decision_ms: int | None
) -> Table:
    """Each bot's time per decision: wall time and, on the CPU clock, the CPU time charged
    (median and 95th percentile, ms), and how close it came to its budget (its largest
    charge over ``decision_ms``)."""
    table = Table(
        title="Time per decision (ms): wall, and the CPU time charged on the CPU clock",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("bot", no_wrap=True)
    for heading in ("decisions", "wall median", "wall p95", "CPU median", "CPU p95", "budget"):
        table.add_column(heading, justify="right", no_wrap=True)
    for name in names:
        activity = bots.get(name) or BotActivity(name)
        cells = [name, str(activity.decisions)]
        for quantiles in (activity.wall_quantiles(), activity.cpu_quantiles()):
            cells += ["-", "-"] if quantiles is None else [f"{value:.1f}" for value in quantiles]
        share = activity.budget_share(decision_ms) if decision_ms else None
        cells.append("-" if share is None else f"{100 * share:.0f}%")
        table.add_row(*cells)
    return table


def crosstable_table(standings: Standings) -> Table:
    """The crosstable as a rich table (untitled): each cell is the row bot's wins-losses
    against the column bot."""
    names = [row.name for row in standings.rows]
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("", no_wrap=True)
    for name in names:
        table.add_column(name, justify="right", no_wrap=True)
    for name in names:
        table.add_row(
            name, *(crosstable_cell(standings.crosstable, name, other) for other in names)
        )
    return table


def print_standings(standings: Standings, console: Console) -> None:
    """Print the standings table, the crosstable and any warnings."""
    console.print(standings_table(standings))
    console.print("Crosstable: the row bot's wins-losses against the column bot", style="italic")
    console.print(crosstable_table(standings))
    for warning in standings.warnings:
        console.print(f"[yellow]Warning:[/yellow] {warning}")


def render_standings(standings: Standings, format: str, console: Console) -> None:
    """Print the standings in one of ``table`` or :data:`FORMATS`."""
    if format == "table":
        print_standings(standings, console)
        return
    text = FORMATS[format](standings)
    console.file.write(text)
    console.file.flush()


# ---------------------------------------------------------------------------------------------
# The displays of a running tournament


def _count(number: int, noun: str, nouns: str) -> str:
    return f"{number} {noun if number == 1 else nouns}"


def match_line(
    row: ResultRow,
    done: int,
    total: int,
    hints: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """One finished match in one line, for people: ``[ 3/12] r0001-a+b: a beat b 10-4 in 5
    games (2.1 s)``; a forfeit or a void match says why (:func:`referee.faults.explain_fault`,
    with the bot's last output line). ``hints``: the bots that get a hint where one is known,
    with their command lines (default: every bot, its command unknown)."""

    def explain(fault: Fault) -> str:
        if hints is None:
            return explain_fault(fault)
        return explain_fault(fault, hints.get(fault.bot, ()), hint=fault.bot in hints)

    seats = row.seats
    where = f"[{done:>{len(str(total))}}/{total}] {row.match_id}: "
    seconds = f"{row.duration_s:.1f} s"
    forfeit, faults = row_faults(row)
    winner_seat = row.winner_seat
    if row.void or winner_seat is None:
        reasons = "; ".join(explain(fault) for fault in faults)
        return f"{where}void, both bots failed before the first game ({seconds}): {reasons}"
    winner, loser = seats[winner_seat], seats[1 - winner_seat]
    scores = (row.score0, row.score1)
    games = row.games
    score = f"{scores[winner_seat]}-{scores[1 - winner_seat]}"
    if forfeit is None:
        return (
            f"{where}{winner} beat {loser} {score} in {_count(games, 'game', 'games')} ({seconds})"
        )
    reason = explain(forfeit)
    return (
        f"{where}{winner} beat {loser} by forfeit, {score} after {_count(games, 'game', 'games')} "
        f"({seconds}): {reason}"
    )


def has_fault(row: ResultRow) -> bool:
    """True for a stored match that a fault decided: a forfeit or a void match."""
    return row.void or row.forfeit_json is not None


class _Hints:
    """The bots' command lines, each given out once: a hint (which interpreter a Python bot
    ran under) is worth reading once, not at every one of the bot's forfeits."""

    def __init__(self, commands: Mapping[str, Sequence[str]] | None) -> None:
        self._commands = dict(commands or {})

    def take(self, row: ResultRow) -> dict[str, Sequence[str]]:
        """The commands, not given out yet, of the bots at fault in this stored match."""
        forfeit, faults = row_faults(row)
        names = {fault.bot for fault in (*faults, *([forfeit] if forfeit else []))}
        return {name: self._commands.pop(name) for name in names if name in self._commands}


class _RunClock:
    """What every display counts: matches stored of the schedule, games and time of the run."""

    def __init__(self) -> None:
        self.total = 0
        self.done = 0
        self.played = 0
        self.games = 0
        self.started = time.monotonic()
        self.source: Callable[[], Standings] | None = None

    def begin(self, total: int, done: int, standings: Callable[[], Standings]) -> None:
        self.total, self.done, self.source = total, done, standings
        self.started = time.monotonic()

    def count(self, row: ResultRow) -> None:
        self.done += 1
        self.played += 1
        self.games += row.games

    def summary(self) -> str:
        """``12/12 matches stored; this run played 40 games in 4.4 s (9.1 games/s)``."""
        elapsed = time.monotonic() - self.started
        rate = self.games / elapsed if elapsed > 0 else 0.0
        return (
            f"{self.done}/{self.total} matches stored; this run played {self.games} games in "
            f"{elapsed:.1f} s ({rate:.1f} games/s)"
        )


class _GamesPerSecond(ProgressColumn):
    """Games per second since the display started."""

    def render(self, task: Task) -> Text:
        elapsed = task.elapsed or 0.0
        games = int(task.fields.get("games", 0))
        rate = games / elapsed if elapsed > 0 else 0.0
        return Text(f"{rate:.1f} games/s", style="progress.data.speed")


class StandingsPace:
    """When a display may compute the standings again. Each computation reads the whole
    store and fits every rating, so its cost grows with the field and the results (a second
    and more for 1,000 bots and 10^5 matches), while storing a match costs the coordinator
    about a millisecond. The next computation waits until the matches stored since the last
    have paid for it at :attr:`per_match_seconds` each (amortised, from what the last one
    took), or, when matches come slowly, until :attr:`idle_share` of the time has paid for
    it; and, with ``min_seconds``, at least that long and a tenth of the time. One that takes
    a millisecond is due after one match, one that takes a second after a thousand (or 100
    seconds): the coordinator's cost per match stays flat as the store grows."""

    #: What a standings computation may cost per stored match, amortised.
    per_match_seconds = 0.001
    #: The share of the time it may take however few matches come.
    idle_share = 0.01

    def __init__(self, min_seconds: float = 0.0) -> None:
        self.min_seconds = min_seconds
        #: Matches stored since the last computation.
        self.matches = 0
        self._spent = 0.0
        self._finished = -math.inf
        self._next = -math.inf

    def stored(self) -> None:
        """A match was stored."""
        self.matches += 1

    def due(self, now: float) -> bool:
        """Whether matches came in and the last computation is paid for."""
        return (
            self.matches > 0
            and now >= self._next
            and (
                self.matches * self.per_match_seconds >= self._spent
                or (now - self._finished) * self.idle_share >= self._spent
            )
        )

    def computed(self, started: float, finished: float) -> None:
        """A computation ran from ``started`` to ``finished`` (``time.monotonic``)."""
        self._spent = finished - started
        self._finished = finished
        if self.min_seconds:  # and never more than a tenth of the time
            self._next = finished + max(self.min_seconds, 10 * self._spent)
        self.matches = 0


class LaidOutOnce:
    """A renderable laid out once for each width, then drawn from its lines: the live display
    redraws a few times a second, and laying out a standings table afresh each time cost
    about 25 ms of CPU (a tenth of a core at four redraws a second, taken from the bots)."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable
        self._width: int | None = None
        self._lines: list[list[Segment]] = []

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width != self._width:  # a new width (a resized terminal): lay out
            self._lines = console.render_lines(self.renderable, options, pad=False, new_lines=True)
            self._width = options.max_width
        for line in self._lines:
            yield from line


class LiveDisplay:
    """For a terminal (``--progress bar``): a progress bar (matches, ETA, games/s) and the
    standings so far, redrawn in place; every match a fault decided printed above it as it
    is stored; then the final standings and crosstable.

    The standings are recomputed at most every ``refresh_seconds`` (longer when computing
    them takes more than a tenth of that, or more than the matches stored since have paid
    for: :class:`StandingsPace`), as matches arrive and in between, so the table never
    stays behind the bar longer than it must."""

    def __init__(
        self,
        console: Console,
        *,
        commands: Mapping[str, Sequence[str]] | None = None,
        refresh_seconds: float = 0.25,
        rows: int = 20,
    ) -> None:
        self.console = console
        self._hints = _Hints(commands)
        self._clock = _RunClock()
        self._rows = rows
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("matches"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            _GamesPerSecond(),
            console=console,
        )
        self._task: TaskID | None = None
        self._table: RenderableType = Text("")
        self._live: Live | None = None
        self._pace = StandingsPace(refresh_seconds)

    def _renderable(self) -> RenderableType:
        return Group(self._progress, self._table)

    def _refresh_standings(self, force: bool = False) -> None:
        now = time.monotonic()
        source = self._clock.source
        if source is None or not (force or self._pace.due(now)):
            return
        standings = source()
        self._pace.computed(now, time.monotonic())
        self._table = LaidOutOnce(standings_table(standings, limit=self._rows))
        if self._live is not None:
            self._live.update(self._renderable(), refresh=True)

    def start(self, name: str, total: int, done: int, standings: Callable[[], Standings]) -> None:
        """Begin the display, with the standings so far (every bot, before any match)."""
        self._clock.begin(total, done, standings)
        self._task = self._progress.add_task(name, total=total, completed=done, games=0)
        self._refresh_standings(force=True)
        self._live = Live(
            self._renderable(), console=self.console, refresh_per_second=4, transient=True
        )
        self._live.start(refresh=True)

    def match_stored(self, row: ResultRow) -> None:
        """Advance the bar; print a match a fault decided above the display; refresh the
        standings when due."""
        self._clock.count(row)
        if self._task is not None:
            self._progress.update(self._task, advance=1, games=self._clock.games)
        if has_fault(row):
            line = match_line(row, self._clock.done, self._clock.total, self._hints.take(row))
            self.console.print(line, style="yellow", highlight=False, markup=False)
        self._pace.stored()
        self._refresh_standings()

    def tick(self) -> None:
        """Refresh the standings if matches came in since they were last computed."""
        self._refresh_standings()

    def note(self, text: str) -> None:
        """Print a line above the live display."""
        self.console.print(text, highlight=False, markup=False)

    def finish(self, standings: Standings | None) -> None:
        """Stop the live display; print the final standings and crosstable."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._task is not None:
            self.console.print(self._clock.summary(), highlight=False)
        if standings is not None:
            print_standings(standings, self.console)


class LinesDisplay:
    """For a log (``--progress lines``, the default where standard output is not a
    terminal): one line per stored match (:func:`match_line`: the result, the games and,
    for a forfeit, why), the standings every ``every`` matches of the run, and at the end
    the final standings and crosstable. Nothing is redrawn; every line is written whole, as
    it happens. By default a table waits, beyond its ``every`` matches, until the matches
    since the last have paid for it (:class:`StandingsPace`): on a large store a table
    costs far more than a match."""

    def __init__(
        self,
        console: Console,
        *,
        commands: Mapping[str, Sequence[str]] | None = None,
        every: int | None = None,
    ) -> None:
        """``every``: matches between two standings tables; None: about a tenth of the
        matches left to play, at least 10; 0: only at the end."""
        self.console = console
        self._hints = _Hints(commands)
        self._clock = _RunClock()
        self._every = every
        #: Tables at the default pace only: a given ``every`` is kept to the match.
        self._pace = StandingsPace() if every is None else None
        self._since = 0

    def start(self, name: str, total: int, done: int, standings: Callable[[], Standings]) -> None:
        """Say what is about to be played."""
        self._clock.begin(total, done, standings)
        if self._every is None:
            self._every = max(10, -(-(total - done) // 10))
        left = total - done
        self.console.print(
            f"{name}: {_count(left, 'match', 'matches')} to play"
            + (f" ({done} of {total} stored already)" if done else ""),
            highlight=False,
            markup=False,
        )

    def match_stored(self, row: ResultRow) -> None:
        """Print the match's line; every ``every`` matches, the standings."""
        clock = self._clock
        clock.count(row)
        line = match_line(row, clock.done, clock.total, self._hints.take(row))
        # One line per match however long, so that a log can be read with grep.
        self.console.print(line, highlight=False, markup=False, soft_wrap=True)
        self._since += 1
        pace = self._pace
        if pace is not None:
            pace.stored()
        due = (
            self._every
            and self._since >= self._every
            and clock.done < clock.total
            and (pace is None or pace.due(time.monotonic()))
        )
        if due and clock.source is not None:
            started = time.monotonic()
            self.console.print(standings_table(clock.source()))
            if pace is not None:
                pace.computed(started, time.monotonic())
            self._since = 0

    def tick(self) -> None:
        """Nothing to redraw."""

    def note(self, text: str) -> None:
        """Print the line, unwrapped: a log is read with grep, not at a terminal's width."""
        self.console.print(text, highlight=False, markup=False, soft_wrap=True)

    def finish(self, standings: Standings | None) -> None:
        """Print the run's summary line, then the final standings and crosstable."""
        if self._clock.source is not None:
            self.console.print(self._clock.summary(), highlight=False)
        if standings is not None:
            print_standings(standings, self.console)


class QuietDisplay:
    """Nothing while matches are played (``--progress none``, and ``--quiet``): the notes,
    and at the end a summary line, then the final standings and crosstable unless
    ``brief`` (``--quiet``: the line ``12/12 matches stored`` alone)."""

    def __init__(self, console: Console, *, brief: bool = True) -> None:
        self.console = console
        self._clock = _RunClock()
        self._brief = brief

    def start(self, name: str, total: int, done: int, standings: Callable[[], Standings]) -> None:
        """Remember the counts."""
        self._clock.begin(total, done, standings)

    def match_stored(self, row: ResultRow) -> None:
        """Count the match."""
        self._clock.count(row)

    def tick(self) -> None:
        """Nothing to show."""

    def note(self, text: str) -> None:
        """Print the line, unwrapped: a log is read with grep, not at a terminal's width."""
        self.console.print(text, highlight=False, markup=False, soft_wrap=True)

    def finish(self, standings: Standings | None) -> None:
        """Print how many matches are stored (and the standings, unless brief)."""
        clock = self._clock
        if self._brief:
            self.console.print(f"{clock.done}/{clock.total} matches stored", highlight=False)
            return
        self.console.print(clock.summary(), highlight=False)
        if standings is not None:
            print_standings(standings, self.console)
