"""The ``aegis-ref`` command: every command group merged into one application."""

from __future__ import annotations

from typing import Annotated

import typer

from tournaments.cli.check_bot import app as conformance_app
from tournaments.cli.match import app as match_app
from tournaments.cli.play import app as play_app
from tournaments.cli.schema import app as protocol_app
from tournaments.cli.selfplay import app as referee_app
from tournaments.cli.sprt import app as sprt_app
from tournaments.cli.tournament import app as tournament_app

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


def _print_version(wanted: bool) -> None:
    if not wanted:
        return
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import zmq

    from protocol.version import PROTOCOL_VERSION
    from referee.build_info import hot_path_build

    try:
        installed = version("aegis-ref")
    except PackageNotFoundError:
        installed = "(not installed)"
    typer.echo(
        f"aegis-ref {installed} (protocol {PROTOCOL_VERSION}, hot path {hot_path_build()}); "
        f"Python {platform.python_version()}, pyzmq {zmq.__version__}, libzmq {zmq.zmq_version()}"
    )
    raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version, the protocol version and the build, then exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Referee, protocol and tournaments for Aegis, the two-player trick-taking game."""


def main() -> None:
    """Entry point of the ``aegis-ref`` console script."""
    app()
