"""The ``verify`` command: re-simulate records with the engine, one file or a whole folder.

The record format is :mod:`referee.records`' business; this module only finds and reads the
files and prints.
"""

from __future__ import annotations

import typer

from referee.record_files import find_records, verify_file
from tournaments.cli.common import plural
from tournaments.cli.exit_codes import EXIT_DISAGREEMENT, EXIT_UNREADABLE
from tournaments.cli.options import RecordPathsArgument

__all__ = ["app", "verify"]

app = typer.Typer(no_args_is_help=True)


@app.command()
def verify(paths: RecordPathsArgument) -> None:
    """Re-simulate every game of the records with the engine; report each record's first
    disagreement, then one line for them all.

    A folder stands for every record (*.jsonl) in it, at any depth: a tournament's output
    directory, or its records/ folder.
    """
    try:
        files = find_records(paths)
    except FileNotFoundError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(EXIT_UNREADABLE) from None
    matches = games = actions = verified = disagreeing = unreadable = 0
    for file in files:
        try:
            report = verify_file(file)
        except OSError as error:
            typer.echo(f"{file}: cannot read the record: {error.strerror or error}", err=True)
            unreadable += 1
            continue
        disagreement = report.disagreement
        if disagreement is not None:
            where = f"{file}:{disagreement.line}" if disagreement.line else str(file)
            typer.echo(f"{where}: {disagreement}")
            disagreeing += 1
            continue
        verified += 1
        matches += report.matches
        games += report.games
        actions += report.actions
    counts = f"{plural(matches, 'match')}, {plural(games, 'game')}, {plural(actions, 'action')}"
    single = len(files) == 1
    if not disagreeing and not unreadable:
        typer.echo(
            f"OK: {counts} verified" if single else f"OK: {_records(verified)}, {counts} verified"
        )
        return
    if not single:
        problems = [f"{disagreeing} disagree{'s' if disagreeing == 1 else ''}"] * bool(disagreeing)
        problems += [f"{unreadable} cannot be read"] * bool(unreadable)
        typer.echo(
            f"FAILED: of {_records(len(files))}, {' and '.join(problems)}; "
            f"{verified} verified ({counts})"
        )
    raise typer.Exit(EXIT_DISAGREEMENT if disagreeing else EXIT_UNREADABLE)


def _records(count: int) -> str:
    return f"{count} record{'s' if count != 1 else ''}"
