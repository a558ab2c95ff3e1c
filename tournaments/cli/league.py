"""The ``league`` command, and the history of a bot that ``standings --history`` prints.

``league`` exit codes: 0 stopped (Ctrl-C, SIGTERM) or, with ``--once``, done; 1 it gave up
(a worker died); 2 the league cannot be used (no config, no sandbox, another league runs).
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from tournaments.cli.exit_codes import EXIT_FAILED, EXIT_USAGE
from tournaments.cli.serve import ServeFlag, served_beside
from tournaments.errors import TournamentError
from tournaments.league.runner import VersionHistory, bot_history, run_league
from tournaments.league.submissions import load_league
from tournaments.report.terminal import QuietDisplay
from tournaments.run.coordinator import StopRequest, handle_stop_signals
from tournaments.stats.standings import Standings

__all__ = ["app", "league", "print_history"]

app = typer.Typer(no_args_is_help=True)


class _LeagueDisplay(QuietDisplay):
    """A line for each round and each note, a note said once only: a league plays round
    after round, and each round would repeat the notes of the first."""

    def __init__(self, console: Console, say: Callable[[str], None]) -> None:
        super().__init__(console)
        self._said: set[str] = set()
        self._say = say

    def start(self, name: str, total: int, done: int, standings: Callable[[], Standings]) -> None:
        """Say how much the round has to play."""
        super().start(name, total, done, standings)
        if total > done:
            self._say(f"Playing: {total - done} of {total} matches to play")

    def note(self, text: str) -> None:
        """Print a note the first time it comes."""
        if text not in self._said:
            self._said.add(text)
            self._say(text)

    def finish(self, standings: Standings | None) -> None:
        """Print how many matches are stored, and the leader."""
        super().finish(standings)
        if standings is not None and standings.rows:
            leader = standings.rows[0]
            elo = leader.rating.elo
            shown = f"Elo {elo:.0f}" if elo is not None else "no Elo yet"
            self._say(f"Leader: {leader.name} ({shown}, {leader.record.wins} wins)")


@app.command()
def league(
    path: Annotated[
        Path, typer.Argument(help="The league: its folder (holding league.yaml) or its config.")
    ],
    once: Annotated[
        bool,
        typer.Option(
            "--once",
            help="Process the waiting submissions, play every match, then exit (for cron).",
        ),
    ] = False,
    poll: Annotated[
        float | None,
        typer.Option(
            min=0.05,
            help="Seconds between looks for new submissions (default: the config's poll_s).",
        ),
    ] = None,
    serve: ServeFlag = None,
) -> None:
    """Run a league until stopped: build and check each submission as it arrives, and play
    every bot's latest accepted version against every other; a new version's matches are
    scheduled against everyone, and the version it replaces leaves the standings."""
    try:
        setup = load_league(path)
    except TournamentError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(EXIT_USAGE) from None
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 120))

    def say(text: str) -> None:
        console.print(text, highlight=False, markup=False)

    stop = StopRequest()
    try:
        with (
            served_beside(path, serve),
            handle_stop_signals(
                stop,
                "Stopping: finishing the matches and the build in progress (again to abort)",
                "Aborted: matches in progress are lost; run the same command to go on",
            ),
        ):
            summary = run_league(
                setup,
                display=_LeagueDisplay(console, say),
                stop=stop,
                say=say,
                once=once,
                poll_s=poll,
            )
    except TournamentError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(EXIT_USAGE) from None
    say(
        f"League stopped: {summary.rounds} round(s), {summary.played} match(es) played, "
        f"{summary.accepted} submission(s) accepted, {summary.rejected} rejected"
    )
    if summary.failure is not None:
        typer.echo(f"Failed: {summary.failure}", err=True)
        raise typer.Exit(EXIT_FAILED)


def _history_rows(history: list[VersionHistory]) -> list[dict[str, Any]]:
    rows = []
    for version in history:
        record = version.record
        rows.append(
            {
                "bot": version.player,
                "version": version.version,
                "current": version.current,
                "entered_at": version.entered_at,
                "retired_at": version.retired_at,
                "replaced_by": version.replaced_by,
                "matches": record.matches,
                "wins": record.wins,
                "losses": record.losses,
                "void": record.void,
                "win_rate": None if record.win_rate is None else round(record.win_rate, 4),
                "elo": None if version.elo is None else round(version.elo, 1),
            }
        )
    return rows


def print_history(connection: sqlite3.Connection, name: str, format: str, console: Console) -> bool:
    """Print every version of bot ``name`` (``standings --history``) as a table, csv,
    json or markdown; False if the store never saw the bot."""
    history = bot_history(connection, name)
    if not history:
        return False
    rows = _history_rows(history)
    if format == "json":
        console.file.write(json.dumps(rows, indent=2) + "\n")
        return True
    if format == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        console.file.write(buffer.getvalue())
        return True
    shown = [_shown(row) for row in rows]
    if format == "markdown":
        header = list(shown[0])
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row.values()) + " |" for row in shown]
        console.file.write("\n".join(lines) + "\n")
        return True
    table = Table(title=f"{name}: {len(rows)} version(s); Elo over every stored match")
    for column in shown[0]:
        table.add_column(column, justify="right" if column in ("W-L", "win%", "Elo") else "left")
    for row in shown:
        table.add_row(*row.values())
    console.print(table)
    return True


def _shown(row: Mapping[str, Any]) -> dict[str, str]:
    if row["current"]:
        status = "plays"
    else:
        status = f"replaced by {row['replaced_by']}" if row["replaced_by"] else "retired"
    rate = row["win_rate"]
    return {
        "bot": str(row["bot"]),
        "status": status,
        "entered": str(row["entered_at"])[:19],
        "retired": str(row["retired_at"] or "")[:19],
        "W-L": f"{row['wins']}-{row['losses']}",
        "win%": "" if rate is None else f"{100 * rate:.1f}",
        "Elo": "" if row["elo"] is None else f"{row['elo']:.0f}",
    }
