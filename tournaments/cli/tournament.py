"""The ``tournament``, ``standings`` and ``report`` commands.

Exit codes: 0 done; 1 the run gave up (a worker died); 2 bad config or arguments, or a store
that cannot be used or written (a full disk, say, before or during the run); 3 a bot is broken:
it failed the preflight (nothing was played), or lost every match it played in the run to its
own faults; 130 (143 for SIGTERM) stopped by a signal before the end, resumable with the same
command.
"""

from __future__ import annotations

import enum
import shlex
import sqlite3
import sys
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer
from rich.console import Console

from tournaments.cli.common import invoked_as
from tournaments.cli.exit_codes import EXIT_BOT, EXIT_FAILED, EXIT_USAGE
from tournaments.cli.serve import ServeFlag, served_beside
from tournaments.config.tournament import TournamentSetup, load_config
from tournaments.errors import PreflightError, TournamentError
from tournaments.league.submissions import enter_submissions
from tournaments.report.html_report import REPORT_NAME, write_report
from tournaments.report.report_data import fault_summary
from tournaments.report.terminal import (
    LinesDisplay,
    LiveDisplay,
    QuietDisplay,
    decision_times_table,
    render_standings,
)
from tournaments.run.coordinator import RunSummary, StopRequest, handle_stop_signals, run_tournament
from tournaments.run.display import TournamentDisplay
from tournaments.stats.standings import load_standings
from tournaments.store.database import open_store, read_meta

__all__ = [
    "app",
    "report",
    "standings",
    "tournament",
]

app = typer.Typer(no_args_is_help=True)


class Progress(enum.StrEnum):
    """How ``aegis-ref tournament`` shows a run as it goes."""

    AUTO = "auto"
    BAR = "bar"
    LINES = "lines"
    NONE = "none"


_PROGRESS_HELP = (
    "How the run is shown as it goes. bar: a live progress bar and standings table, redrawn "
    "in place, with each forfeit printed above it as it happens (for a terminal). lines: one "
    "line per finished match (result, games, and why for a forfeit) and the standings every "
    "--standings-every matches, written as they happen (for a log). none: nothing until the "
    "final standings. auto: bar on a terminal, lines otherwise. Example: nohup aegis-ref "
    "tournament t.yaml --progress lines --standings-every 50 > t.log 2>&1 &"
)


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


def _is_live_terminal(console: Console) -> bool:
    """Whether standard output is a terminal that can redraw in place (not a pipe, a file,
    or a dumb terminal), whatever FORCE_COLOR says."""
    try:
        return console.file.isatty() and not console.is_dumb_terminal
    except (AttributeError, ValueError, OSError):
        return False


def _display(
    progress: Progress, quiet: bool, every: int | None, console: Console, setup: TournamentSetup
) -> TournamentDisplay:
    if quiet:
        return QuietDisplay(console)
    commands = {spec.name: spec.command for spec in setup.bots}
    if progress is Progress.AUTO:
        progress = Progress.BAR if _is_live_terminal(console) else Progress.LINES
    if progress is Progress.BAR:
        return LiveDisplay(console, commands=commands)
    if progress is Progress.LINES:
        return LinesDisplay(console, commands=commands, every=every)
    return QuietDisplay(console, brief=False)


def _same_command() -> str:
    return " ".join([invoked_as(), shlex.join(sys.argv[1:])])


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
    progress: Annotated[
        Progress, typer.Option(help=_PROGRESS_HELP, case_sensitive=False)
    ] = Progress.AUTO,
    standings_every: Annotated[
        int | None,
        typer.Option(
            "--standings-every",
            metavar="N",
            min=0,
            help="With --progress lines: print the standings every N matches (0: only at "
            "the end). Default: about a tenth of the matches to play, at least 10.",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="--progress none, and at the end only the line 'N/M matches stored' instead "
            "of the standings (notes, warnings and errors still appear).",
        ),
    ] = False,
    no_preflight: Annotated[
        bool,
        typer.Option(
            "--no-preflight",
            help="Skip the preflight: by default every started bot is first started once, "
            "as its matches will start it, and must say hello, or nothing is played.",
        ),
    ] = False,
    serve: ServeFlag = None,
) -> None:
    """Play a tournament; run the same command again to resume an interrupted one."""
    if quiet and progress in (Progress.BAR, Progress.LINES):
        raise _fail(f"--quiet shows no progress: it cannot go with --progress {progress.value}")
    try:
        setup = load_config(config).with_overrides(
            output=output, concurrency=concurrency, local_cluster=local_cluster
        )
    except TournamentError as error:
        raise _fail(str(error)) from None
    console = _console()
    display = _display(progress, quiet, standings_every, console, setup)
    stop = StopRequest()
    try:
        with (
            served_beside(setup.output, serve),
            handle_stop_signals(
                stop,
                "Stopping: no new matches; finishing the ones in progress (Ctrl-C again to abort)",
                "Aborted: matches in progress are lost; run the same command to resume",
            ),
        ):
            summary, _ = run_tournament(
                enter_submissions(setup),  # a league's: its submitted bots' latest versions
                display=display,
                stop=stop,
                warn=lambda text: typer.echo(text, err=True),
                preflight=not no_preflight,
            )
    except PreflightError as error:
        raise _fail(str(error), EXIT_BOT) from None
    except TournamentError as error:
        raise _fail(str(error)) from None
    missing = summary.total - summary.stored
    resume = (
        f"{summary.stored} of {summary.total} matches stored in {summary.output}. Run the same "
        f"command to play the {missing} still missing:\n  {_same_command()}"
    )
    if summary.rounds_open:  # a ladder: its later rounds are not planned yet
        resume = (
            f"{summary.stored} matches of the ladder's rounds so far stored in "
            f"{summary.output}. Run the same command to play on:\n  {_same_command()}"
        )
    if summary.failure is not None:
        _warn_forfeits(summary, setup)
        code = EXIT_USAGE if summary.store_failed else EXIT_FAILED
        raise _fail(f"Failed: {summary.failure}\n{resume}", code)
    if not summary.complete:
        _warn_forfeits(summary, setup)
        code = 128 + (stop.signal_number or 2) if summary.interrupted else EXIT_FAILED
        raise _fail(f"Interrupted: {resume}", code)
    if not quiet:
        console.print(
            f"Done: {summary.total} matches in {summary.output}; "
            f"re-print with: {invoked_as()} standings {shlex.quote(str(summary.output))}",
            highlight=False,
        )
    _warn_forfeits(summary, setup)
    broken = [bot.name for bot in summary.forfeits if bot.lost_all]
    if broken:
        raise _fail(
            f"Failed: bot(s) {', '.join(broken)} lost every match of this run to their own "
            "faults, so their results mean nothing: fix them, then play again in a new output "
            "directory (--output)",
            EXIT_BOT,
        )


def _warn_forfeits(summary: RunSummary, setup: TournamentSetup) -> None:
    """A loud warning on standard error for each bot that lost most of the run's matches
    to its own faults, whatever the display."""
    commands = {spec.name: spec.command for spec in setup.bots}
    for bot in summary.forfeits:
        typer.secho(bot.warning(commands.get(bot.name, ())), err=True, fg="yellow", bold=True)


@app.command()
def standings(
    output_dir: Annotated[Path, typer.Argument(help="A tournament's output directory.")],
    format: Annotated[
        StandingsFormat, typer.Option("--format", "-f", help="Output form.")
    ] = StandingsFormat.TABLE,
    anchor: Annotated[
        str | None, typer.Option(help="Fix this bot's Elo at 1500 (default: mean 1500).")
    ] = None,
    history: Annotated[
        str | None,
        typer.Option(
            "--history",
            metavar="BOT",
            help="Instead: every version of BOT in a league, when each entered and was "
            "replaced, and its record (table, csv, json or markdown).",
        ),
    ] = None,
) -> None:
    """Print the standings of a tournament's output directory, even while it runs."""
    try:
        connection = open_store(output_dir, read_only=True)
    except TournamentError as error:
        raise _fail(str(error)) from None
    if history is not None:
        try:
            _print_history(connection, history, format)
        finally:
            connection.close()
        return
    try:
        table = load_standings(connection, anchor=anchor)
        names = [row.name for row in table.rows]
        # The table form also shows each bot's time per decision (a pass over every match).
        times = fault_summary(connection, names) if format is StandingsFormat.TABLE else None
        meta = read_meta(connection)
    except TournamentError as error:
        raise _fail(str(error)) from None
    finally:
        connection.close()
    if anchor is not None and anchor not in {row.name for row in table.rows}:
        known = ", ".join(row.name for row in table.rows)
        raise _fail(f"--anchor: unknown bot {anchor!r}; bots: {known}")
    render_standings(table, format.value, _console())
    if times is not None:
        decision_ms = None if meta is None else meta.time_control.get("decision_ms")
        _console().print(
            decision_times_table(
                times.bots, names, decision_ms if isinstance(decision_ms, int) else None
            )
        )


def _print_history(connection: sqlite3.Connection, name: str, format: StandingsFormat) -> None:
    from tournaments.cli.league import print_history  # the league's own part of standings

    if format is StandingsFormat.HTML:
        raise _fail("--history: give --format table, csv, json or markdown")
    if not print_history(connection, name, format.value, _console()):
        raise _fail(f"--history: no bot {name!r} (nor any version of it) in this store")


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
    live: Annotated[
        str | None,
        typer.Option(
            "--live",
            metavar="URL",
            help="Link the run's live pages (aegis-ref serve) from the report, such as "
            "https://league.example.org/.",
        ),
    ] = None,
) -> None:
    """Write a self-contained HTML report: standings, Elo chart, crosstable heat map, rating
    progression, faults per bot and links to every match record. Works during a run too."""
    if live is not None and not _is_web_address(live):
        raise _fail(f"--live: {live!r}: give an http:// or https:// address")
    try:
        path = write_report(output_dir, output, anchor=anchor, show_seed=show_seed, live_url=live)
    except TournamentError as error:
        raise _fail(str(error)) from None
    typer.echo(f"report: {path}")


def _is_web_address(text: str) -> bool:
    """True for an absolute http or https URL (never ``javascript:`` or a bare path)."""
    parsed = urlsplit(text)
    return parsed.scheme in ("http", "https") and bool(parsed.netloc)
