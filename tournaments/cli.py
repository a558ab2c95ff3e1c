"""The ``aegis-ref`` command: every command group merged into one application."""

from __future__ import annotations

import typer

from protocol.cli import app as protocol_app
from referee.cli import app as referee_app
from referee.conformance_cli import app as conformance_app
from referee.match_cli import app as match_app
from tournaments.commands import app as tournament_app
from tournaments.play import app as play_app
from tournaments.sprt_cli import app as sprt_app

app = typer.Typer(
    name="aegis-ref",
    help="Referee, protocol and tournaments for Aegis, the two-player trick-taking game.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(referee_app)
app.add_typer(match_app)
app.add_typer(conformance_app)
app.add_typer(protocol_app)
app.add_typer(tournament_app)
app.add_typer(sprt_app)
app.add_typer(play_app)


def main() -> None:
    """Entry point of the ``aegis-ref`` console script."""
    app()
