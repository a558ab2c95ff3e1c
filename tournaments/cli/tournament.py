"""The ``tournament``, ``standings`` and ``report`` commands.

Exit codes: 0 done; 1 the run gave up (a worker died); 2 bad config or arguments, or a store
that cannot be used or written (a full disk, say, before or during the run); 130 (143 for
SIGTERM) stopped by a signal before the end, resumable with the same command.
"""

from __future__ import annotations

import enum
import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from tournaments.config import load_config
from tournaments.errors import TournamentError
from tournaments.render import LiveDisplay, QuietDisplay, TournamentDisplay, render_standings
from tournaments.report import REPORT_NAME, write_report
from tournaments.standings import load_standings
from tournaments.store import open_store
from tournaments.tournament import StopRequest, handle_stop_signals, run_tournament

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "app",
    "report",
    "standings",
    "tournament",
]

app = typer.Typer(no_args_is_help=True)

EXIT_FAILED = 1
EXIT_USAGE = 2
#: 128 + SIGINT, as a shell reports a process ended by Ctrl-C.
EXIT_INTERRUPTED = 130


class StandingsFormat(enum.StrEnum):
    """The forms of ``aegis-ref standings``."""

    TABLE = "table"
    CSV = "csv"
    JSON = "json"
    MARKDOWN = "markdown"
    HTML = "html"


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(code)


def _console() -> Console:
    """Standard output; piped or redirected, at least 120 columns wide so that the tables
    are not squeezed to a terminal width that does not exist."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 120))
    return console


def _same_command() -> str:
    return shlex.join(["aegis-ref", *sys.argv[1:]])


@app.command()
def tournament(
    config: Annotated[Path, typer.Argument(help="The tournament's YAML config.")],
    output: Annotated[
        Path | None,
        typer.Option(help="Output directory (overrides the config's 'output')."),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="Matches played at once (overrides the config)."),
    ] = None,
    local_cluster: Annotated[
        int | None,
        typer.Option(
            "--local-cluster",
            metavar="N",
            min=1,
            max=256,
            help="Play on a Dask LocalCluster of N one-thread workers started here, instead "
            "of the config's executor: to try the cluster executor (needs the cluster extra).",
        ),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No live display: one line at the end.")
    ] = False,
) -> None:
    """Play a tournament; run the same command again to resume an interrupted one."""
    try:
        setup = load_config(config).with_overrides(
            output=output, concurrency=concurrency, local_cluster=local_cluster
        )
    except TournamentError as error:
        raise _fail(str(error)) from None
    console = _console()
    display: TournamentDisplay = QuietDisplay(console) if quiet else LiveDisplay(console)
    stop = StopRequest()
    try:
        with handle_stop_signals(
            stop,
            "Stopping: no new matches; finishing the ones in progress (Ctrl-C again to abort)",
            "Aborted: matches in progress are lost; run the same command to resume",
        ):
            summary, _ = run_tournament(
                setup, display=display, stop=stop, warn=lambda text: typer.echo(text, err=True)
            )
    except TournamentError as error:
        raise _fail(str(error)) from None
    missing = summary.total - summary.stored
    resume = (
        f"{summary.stored} of {summary.total} matches stored in {summary.output}. Run the same "
        f"command to play the {missing} still missing:\n  {_same_command()}"
    )
    if summary.failure is not None:
        code = EXIT_USAGE if summary.store_failed else EXIT_FAILED
        raise _fail(f"Failed: {summary.failure}\n{resume}", code)
    if not summary.complete:
        code = 128 + (stop.signal_number or 2) if summary.interrupted else EXIT_FAILED
        raise _fail(f"Interrupted: {resume}", code)
    if not quiet:
        console.print(
            f"Done: {summary.total} matches in {summary.output}; "
            f"re-print with: aegis-ref standings {shlex.quote(str(summary.output))}",
            highlight=False,
        )


@app.command()
def standings(
    output_dir: Annotated[Path, typer.Argument(help="A tournament's output directory.")],
    format: Annotated[
        StandingsFormat, typer.Option("--format", "-f", help="Output form.")
    ] = StandingsFormat.TABLE,
    anchor: Annotated[
        str | None, typer.Option(help="Fix this bot's Elo at 1500 (default: mean 1500).")
    ] = None,
) -> None:
    """Print the standings of a tournament's output directory, even while it runs."""
    try:
        connection = open_store(output_dir, read_only=True)
    except TournamentError as error:
        raise _fail(str(error)) from None
    try:
        table = load_standings(connection, anchor=anchor)
    except TournamentError as error:
        raise _fail(str(error)) from None
    finally:
        connection.close()
    if anchor is not None and anchor not in {row.name for row in table.rows}:
        known = ", ".join(row.name for row in table.rows)
        raise _fail(f"--anchor: unknown bot {anchor!r}; bots: {known}")
    render_standings(table, format.value, _console())


@app.command()
def report(
    output_dir: Annotated[Path, typer.Argument(help="A tournament's output directory.")],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            dir_okay=False,
            help=f"Where to write the page (default: OUTPUT_DIR/{REPORT_NAME}).",
        ),
    ] = None,
    anchor: Annotated[
        str | None, typer.Option(help="Fix this bot's Elo at 1500 (default: mean 1500).")
    ] = None,
    show_seed: Annotated[
        bool,
        typer.Option(
            "--show-seed",
            help="Show the master seed, from which every deal follows: for a report published "
            "once the tournament is over, so that anyone can check the deals.",
        ),
    ] = False,
) -> None:
    """Write a self-contained HTML report: standings, Elo chart, crosstable heat map, rating
    progression, faults per bot and links to every match record. Works during a run too."""
    try:
        path = write_report(output_dir, output, anchor=anchor, show_seed=show_seed)
    except TournamentError as error:
        raise _fail(str(error)) from None
    typer.echo(f"report: {path}")
