"""What several commands share besides their flags: the record file they write at the end
and the counts they print."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

import typer

from referee.record_files import write_record

__all__ = ["EXIT_UNREADABLE", "invoked_as", "plural", "write_record_or_exit"]

#: The exit code of a command that cannot read or write a file, or cannot use its arguments.
EXIT_UNREADABLE = 2


def invoked_as() -> str:
    """How to type this program again, for a hint that must work as printed.

    ``aegis-ref`` when that is what the shell finds on ``PATH``; otherwise the path it was
    started by (``.venv/bin/aegis-ref`` after the README's quick start, whose venv is not on
    ``PATH``), relative to the working directory when it lies below it.
    """
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is None or started.name != "aegis-ref" or not started.exists():
        return "aegis-ref"  # not the console script (a test calling main(), python -m …)
    on_path = shutil.which("aegis-ref")
    if on_path is not None and Path(on_path).resolve() == started.resolve():
        return "aegis-ref"
    absolute = started.absolute()
    try:
        typed = absolute.relative_to(Path.cwd())
    except ValueError:
        return shlex.quote(str(absolute))
    return shlex.quote(str(typed) if os.sep in str(typed) else f".{os.sep}{typed}")


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
