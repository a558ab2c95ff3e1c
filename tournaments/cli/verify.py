"""The ``verify`` command: re-simulate a record with the engine.

The record format is :mod:`referee.records`' business; this module only reads the file and
prints.
"""

from __future__ import annotations

import typer

from referee.record_files import verify_file
from tournaments.cli.common import EXIT_UNREADABLE, plural
from tournaments.cli.options import RecordFileArgument

__all__ = ["EXIT_DISAGREEMENT", "app", "verify"]

app = typer.Typer(no_args_is_help=True)

#: Exit code when the record disagrees with the engine (2 when it cannot be read).
EXIT_DISAGREEMENT = 1


@app.command()
def verify(
    file: RecordFileArgument,
) -> None:
    """Re-simulate every game of a record with the engine; report the first disagreement."""
    try:
        report = verify_file(file)
    except OSError as error:
        typer.echo(f"{file}: cannot read the record: {error.strerror or error}", err=True)
        raise typer.Exit(EXIT_UNREADABLE) from None
    disagreement = report.disagreement
    if disagreement is not None:
        where = f"{file}:{disagreement.line}" if disagreement.line else str(file)
        typer.echo(f"{where}: {disagreement}")
        raise typer.Exit(EXIT_DISAGREEMENT)
    typer.echo(
        f"OK: {plural(report.matches, 'match')}, {plural(report.games, 'game')}, "
        f"{plural(report.actions, 'action')} verified"
    )
