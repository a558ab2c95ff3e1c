"""The ``schema`` command: the protocol's JSON Schema."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from protocol.schema_gen import Direction, schema_text, write_schema_files

__all__ = ["app"]

app = typer.Typer(no_args_is_help=True)


@app.command()
def schema(
    direction: Annotated[
        Direction,
        typer.Option(
            help="Which messages: 'bot' (bot to referee), 'referee' (referee to bot) or 'all'."
        ),
    ] = Direction.ALL,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Write every schema file into this directory (e.g. protocol/schema) instead "
            "of printing one.",
            file_okay=False,
        ),
    ] = None,
) -> None:
    """Print the protocol's JSON Schema, or write all schema files with --out."""
    if out is None:
        typer.echo(schema_text(direction), nl=False)
        return
    for path in write_schema_files(out):
        typer.echo(f"wrote {path}", err=True)
