"""The ``keygen`` command: a CurveZMQ key pair for the referee or a remote bot."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from referee.listeners import generate_keys
from tournaments.cli.exit_codes import EXIT_UNREADABLE

__all__ = ["app", "keygen"]

app = typer.Typer(no_args_is_help=True)


@app.command()
def keygen(
    path: Annotated[Path, typer.Argument(dir_okay=False, help="Where to write the secret key.")],
) -> None:
    """Make a CurveZMQ key pair: the secret key in PATH (mode 600), the public in PATH.pub."""
    if path.exists():
        typer.echo(f"error: {path} exists; not overwriting a key", err=True)
        raise typer.Exit(EXIT_UNREADABLE)
    public, secret = generate_keys()
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="ascii") as file:
            file.write(secret + "\n")
        Path(f"{path}.pub").write_text(public + "\n", encoding="ascii")
    except OSError as error:
        typer.echo(f"error: cannot write {path}: {error.strerror or error}", err=True)
        raise typer.Exit(EXIT_UNREADABLE) from None
    typer.echo(f"secret key: {path}\npublic key: {public} (also in {path}.pub)")
