"""Everything the tournament system shows: rich tables, the live display, and the standings
as CSV, JSON, Markdown and HTML. The only module that renders; it computes nothing."""

from __future__ import annotations

import csv
import html
import io
import json
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from rich import box
from rich.console import Console, Group, RenderableType
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
from rich.table import Table
from rich.text import Text

from tournaments.standings import Standings, StandingsRow

__all__ = [
    "CSV_COLUMNS",
    "FORMATS",
    "LiveDisplay",
    "QuietDisplay",
    "TournamentDisplay",
    "crosstable_table",
    "print_standings",
    "render_standings",
    "standings_json",
    "standings_table",
    "to_csv",
    "to_html",
    "to_json",
    "to_markdown",
]

#: The columns of the CSV form, in order.
CSV_COLUMNS = (
    "rank",
    "name",
    "elo",
    "elo_low",
    "elo_high",
    "matches",
    "wins",
    "losses",
    "win_pct",
    "games",
    "games_won",
    "avg_points_for",
    "avg_points_against",
    "forfeits",
    "void",
)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


_NONE = "-"


def _elo(value: float | None) -> str:
    return _NONE if value is None else f"{value:.0f}"


def _interval(row: StandingsRow) -> str:
    """Half the width of the confidence interval, which is symmetric: ``±43``."""
    rating = row.rating
    if rating.low is None or rating.high is None or rating.elo is None:
        return _NONE
    return f"±{rating.high - rating.elo:.0f}"


def _percent(value: float | None) -> str:
    return _NONE if value is None else f"{100 * value:.1f}"


def _average(value: float | None) -> str:
    return _NONE if value is None else f"{value:.2f}"


def _forfeits(row: StandingsRow) -> str:
    kinds = row.record.forfeits
    total = sum(kinds.values())
    if not total:
        return "0"
    return f"{total} ({', '.join(f'{kind} {count}' for kind, count in sorted(kinds.items()))})"


def _cell(table: Mapping[str, Mapping[str, tuple[int, int]]], row: str, column: str) -> str:
    if row == column:
        return "·"
    found = table.get(row, {}).get(column)
    return "" if found is None else f"{found[0]}-{found[1]}"


# ---------------------------------------------------------------------------------------------
# Plain data


def standings_json(standings: Standings) -> dict[str, Any]:
    """The standings as JSON-ready data (the ``--format json`` document)."""
    names = [row.name for row in standings.rows]
    return {
        "tournament": standings.name,
        "matches_played": standings.matches_played,
        "matches_scheduled": standings.matches_scheduled,
        "matches_retired": standings.matches_retired,
        "retired_bots": list(standings.retired_bots),
        "games": standings.games,
        "void": standings.void,
        "anchor": standings.anchor,
        "confidence": standings.fit.confidence,
        "virtual_draws": standings.fit.virtual_draws,
        "warnings": list(standings.warnings),
        "bots": [
            {
                "rank": row.rank,
                "name": row.name,
                "elo": _round(row.rating.elo, 1),
                "elo_low": _round(row.rating.low, 1),
                "elo_high": _round(row.rating.high, 1),
                "elo_stderr": _round(row.rating.stderr, 1),
                "matches": row.record.matches,
                "wins": row.record.wins,
                "losses": row.record.losses,
                "win_pct": _round(
                    None if row.record.win_rate is None else 100 * row.record.win_rate, 2
                ),
                "void": row.record.void,
                "games": row.record.games,
                "games_won": row.record.games_won,
                "avg_points_for": _round(row.record.points_for_per_game, 3),
                "avg_points_against": _round(row.record.points_against_per_game, 3),
                "forfeits": sum(row.record.forfeits.values()),
                "forfeits_by_kind": dict(sorted(row.record.forfeits.items())),
            }
            for row in standings.rows
        ],
        "crosstable": {
            name: {
                other: {"wins": found[0], "losses": found[1]}
                for other in names
                if (found := standings.crosstable.get(name, {}).get(other)) is not None
            }
            for name in names
        },
        "los": {
            name: {other: round(value, 4) for other, value in standings.fit.los[name].items()}
            for name in names
            if name in standings.fit.los
        },
    }


def to_json(standings: Standings) -> str:
    """The standings as an indented JSON document."""
    return json.dumps(standings_json(standings), indent=2, ensure_ascii=False) + "\n"


def to_csv(standings: Standings) -> str:
    """One line per bot under a header of :data:`CSV_COLUMNS`; empty cells for no value."""
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for bot in standings_json(standings)["bots"]:
        writer.writerow(["" if bot[column] is None else bot[column] for column in CSV_COLUMNS])
    return stream.getvalue()


def _headings(standings: Standings, *, short: bool = False) -> list[str]:
    """Column headings of the human forms: ``short`` ones fit a terminal of 80 columns. A
    void column only when some match was void."""
    headings = [
        "#",
        "bot",
        "Elo",
        f"±{100 * standings.fit.confidence:.0f}%",
        "W-L",
        "win%" if short else "win %",
        "games" if short else "games won",
        "pts/g" if short else "pts/game",
        "opp/g" if short else "opp/game",
        "forfeits",
    ]
    return [*headings, "void"] if standings.void else headings


def _row_cells(row: StandingsRow, standings: Standings) -> list[str]:
    record = row.record
    cells = [
        str(row.rank),
        row.name,
        _elo(row.rating.elo),
        _interval(row),
        f"{record.wins}-{record.losses}",
        _percent(record.win_rate),
        f"{record.games_won}/{record.games}",
        _average(record.points_for_per_game),
        _average(record.points_against_per_game),
        _forfeits(row),
    ]
    return [*cells, str(record.void)] if standings.void else cells


def _summary(standings: Standings) -> str:
    return (
        f"{standings.matches_played}/{standings.matches_scheduled} matches, "
        f"{standings.games} games"
        + (f", {standings.void} void" if standings.void else "")
        + (f"; Elo anchor {standings.anchor} = 1500" if standings.anchor else "; mean Elo 1500")
    )


def to_markdown(standings: Standings) -> str:
    """The standings and the crosstable as Markdown tables."""

    def escape(text: str) -> str:
        return text.replace("|", "\\|")

    headings = _headings(standings)
    lines = [
        f"## Standings: {escape(standings.name)}",
        "",
        _summary(standings),
        "",
        "| " + " | ".join(headings) + " |",
        "|" + "|".join("---" if heading == "bot" else "---:" for heading in headings) + "|",
    ]
    lines += [
        "| " + " | ".join(escape(cell) for cell in _row_cells(row, standings)) + " |"
        for row in standings.rows
    ]
    for warning in standings.warnings:
        lines += ["", f"> Warning: {escape(warning)}"]
    names = [row.name for row in standings.rows]
    lines += [
        "",
        "### Crosstable: row's wins-losses against column",
        "",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    lines += [
        f"| {name} | "
        + " | ".join(_cell(standings.crosstable, name, other) for other in names)
        + " |"
        for name in names
    ]
    return "\n".join(lines) + "\n"


def to_html(standings: Standings) -> str:
    """A standalone HTML page with the standings and the crosstable."""
    escape = html.escape
    headings = _headings(standings)
    names = [row.name for row in standings.rows]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        '<head><meta charset="utf-8">',
        f"<title>Standings: {escape(standings.name)}</title>",
        "<style>body{font-family:sans-serif}table{border-collapse:collapse;margin:1em 0}"
        "th,td{border:1px solid #ccc;padding:.2em .6em;text-align:right}"
        "td.name,th.name{text-align:left}</style>",
        "</head>",
        "<body>",
        f"<h1>Standings: {escape(standings.name)}</h1>",
        f"<p>{escape(_summary(standings))}</p>",
    ]
    parts += [
        f'<p class="warning">Warning: {escape(warning)}</p>' for warning in standings.warnings
    ]
    parts.append('<table class="standings">')
    parts.append(
        "<tr>"
        + "".join(
            f'<th class="name">{escape(h)}</th>' if h == "bot" else f"<th>{escape(h)}</th>"
            for h in headings
        )
        + "</tr>"
    )
    for row in standings.rows:
        cells = _row_cells(row, standings)
        parts.append(
            "<tr>"
            + "".join(
                (
                    f'<td class="name">{escape(cell)}</td>'
                    if index == 1
                    else f"<td>{escape(cell)}</td>"
                )
                for index, cell in enumerate(cells)
            )
            + "</tr>"
        )
    parts.append("</table>")
    parts.append("<h2>Crosstable: row's wins-losses against column</h2>")
    parts.append('<table class="crosstable">')
    parts.append("<tr><th></th>" + "".join(f"<th>{escape(n)}</th>" for n in names) + "</tr>")
    for name in names:
        parts.append(
            f'<tr><th class="name">{escape(name)}</th>'
            + "".join(
                f"<td>{escape(_cell(standings.crosstable, name, other))}</td>" for other in names
            )
            + "</tr>"
        )
    parts += ["</table>", "</body>", "</html>"]
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------
# Rich


def standings_table(standings: Standings, *, limit: int | None = None) -> Table:
    """The standings as a rich table (the first ``limit`` rows if given)."""
    table = Table(
        title=f"{standings.name}: {_summary(standings)}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for heading in _headings(standings, short=True):
        table.add_column(
            heading,
            justify="left" if heading in ("bot", "forfeits") else "right",
            no_wrap=heading != "forfeits",
        )
    rows = standings.rows if limit is None else standings.rows[:limit]
    for row in rows:
        table.add_row(*_row_cells(row, standings))
    if limit is not None and len(standings.rows) > limit:
        table.caption = f"… and {len(standings.rows) - limit} more"
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
        table.add_row(name, *(_cell(standings.crosstable, name, other) for other in names))
    return table


def print_standings(standings: Standings, console: Console) -> None:
    """Print the standings table, the crosstable and any warnings."""
    console.print(standings_table(standings))
    console.print("Crosstable: the row bot's wins-losses against the column bot", style="italic")
    console.print(crosstable_table(standings))
    for warning in standings.warnings:
        console.print(f"[yellow]Warning:[/yellow] {warning}")


#: The text forms of ``aegis-ref standings --format``.
FORMATS: dict[str, Callable[[Standings], str]] = {
    "csv": to_csv,
    "json": to_json,
    "markdown": to_markdown,
    "html": to_html,
}


def render_standings(standings: Standings, format: str, console: Console) -> None:
    """Print the standings in one of ``table`` or :data:`FORMATS`."""
    if format == "table":
        print_standings(standings, console)
        return
    text = FORMATS[format](standings)
    console.file.write(text)
    console.file.flush()


# ---------------------------------------------------------------------------------------------
# The live display of a running tournament


class TournamentDisplay(Protocol):
    """What the coordinator tells the person watching."""

    def start(self, name: str, total: int, done: int, standings: Callable[[], Standings]) -> None:
        """The run begins: ``done`` of ``total`` matches are already stored; ``standings``
        computes the current standings when called."""

    def match_stored(self, row: Mapping[str, Any]) -> None:
        """A match was stored."""

    def note(self, text: str) -> None:
        """A line of information."""

    def finish(self, standings: Standings | None) -> None:
        """The run is over (finished or stopped): final standings if any."""


class _GamesPerSecond(ProgressColumn):
    """Games per second since the display started."""

    def render(self, task: Task) -> Text:
        elapsed = task.elapsed or 0.0
        games = int(task.fields.get("games", 0))
        rate = games / elapsed if elapsed > 0 else 0.0
        return Text(f"{rate:.1f} games/s", style="progress.data.speed")


class LiveDisplay:
    """A progress bar (matches, ETA, games/s) and a standings table refreshed as results
    arrive, then the final standings and crosstable."""

    def __init__(self, console: Console, *, refresh_seconds: float = 1.0, rows: int = 20) -> None:
        self.console = console
        self._source: Callable[[], Standings] | None = None
        self._refresh_seconds = refresh_seconds
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
        self._next_refresh = 0.0
        self._games = 0

    def _renderable(self) -> RenderableType:
        return Group(self._progress, self._table)

    def _refresh_standings(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._source is None or (not force and now < self._next_refresh):
            return
        standings = self._source()
        spent = time.monotonic() - now
        # Never spend more than a tenth of the time recomputing the standings.
        self._next_refresh = time.monotonic() + max(self._refresh_seconds, 10 * spent)
        self._table = standings_table(standings, limit=self._rows)
        if self._live is not None:
            self._live.update(self._renderable())

    def start(self, name: str, total: int, done: int, standings: Callable[[], Standings]) -> None:
        """Begin the display."""
        self._source = standings
        self._task = self._progress.add_task(name, total=total, completed=done, games=0)
        self._live = Live(
            self._renderable(), console=self.console, refresh_per_second=4, transient=True
        )
        self._live.start()
        if done:
            self._refresh_standings(force=True)

    def match_stored(self, row: Mapping[str, Any]) -> None:
        """Advance the bar; refresh the standings at most once a second."""
        self._games += int(row.get("games", 0))
        if self._task is not None:
            self._progress.update(self._task, advance=1, games=self._games)
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
            task = self._progress.tasks[0]
            elapsed = task.elapsed or 0.0
            rate = self._games / elapsed if elapsed > 0 else 0.0
            self.console.print(
                f"{int(task.completed)}/{int(task.total or 0)} matches stored; this run played "
                f"{self._games} games in {elapsed:.1f} s ({rate:.1f} games/s)",
                highlight=False,
            )
        if standings is not None:
            print_standings(standings, self.console)


class QuietDisplay:
    """Only notes and a final summary line: for ``--quiet`` and scripts."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._total = 0
        self._done = 0

    def start(self, name: str, total: int, done: int, standings: Callable[[], Standings]) -> None:
        """Remember the counts."""
        self._total, self._done = total, done

    def match_stored(self, row: Mapping[str, Any]) -> None:
        """Count the match."""
        self._done += 1

    def note(self, text: str) -> None:
        """Print the line."""
        self.console.print(text, highlight=False, markup=False)

    def finish(self, standings: Standings | None) -> None:
        """Print how many matches are stored."""
        self.console.print(f"{self._done}/{self._total} matches stored", highlight=False)
