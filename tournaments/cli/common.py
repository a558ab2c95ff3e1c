"""What several commands share besides their flags: the record file they write at the end
and the counts they print."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import typer

from referee.record_files import write_record

__all__ = ["EXIT_UNREADABLE", "plural", "write_record_or_exit"]

#: The exit code of a command that cannot read or write a file, or cannot use its arguments.
EXIT_UNREADABLE = 2


def plural(count: int, noun: str) -> str:
    """``"1 match"``, ``"3 matches"``, ``"2 games"``."""
    if count == 1:
        return f"1 {noun}"
    return f"{count} {noun}es" if noun.endswith("ch") else f"{count} {noun}s"


def write_record_or_exit(path: Path, lines: Iterable[str], exit_code: int) -> None:
    """:func:`write_record`, then say where; on failure say why and exit with ``exit_code``."""
    try:
        write_record(path, lines)
    except OSError as error:
        typer.echo(f"cannot write record {path}: {error.strerror or error}", err=True)
        raise typer.Exit(exit_code) from None
    typer.echo(f"record: {path}")
