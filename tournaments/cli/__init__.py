"""The ``aegis-ref`` command line: a module per command (or family of commands) in this
package, merged here into one application; :mod:`tournaments.cli.options` defines the flags
that several commands share."""

from __future__ import annotations

from typing import Annotated

import typer

from tournaments.cli import (
    authors,
    check_bot,
    keygen,
    league,
    match,
    play,
    replay,
    schema,
    selfplay,
    serve,
    sprt,
    submit,
    tournament,
    verify,
)
from tournaments.cli.help import HelpGroup
from tournaments.cli.help import install as _install_help_names

__all__ = ["app", "main"]

_install_help_names()
app = typer.Typer(
    name="aegis-ref",
    help="Referee, protocol and tournaments for Aegis, the two-player trick-taking game.",
    no_args_is_help=True,
    add_completion=False,
    cls=HelpGroup,  # lists the commands in help.COMMAND_ORDER, each with its examples
)
# help.COMMAND_ORDER, not this order, is the order of ``aegis-ref --help``.
for module in (
    selfplay,
    verify,
    match,
    keygen,
    replay,
    check_bot,
    schema,
    tournament,
    sprt,
    play,
    submit,
    league,
    serve,
    authors,
):
    app.add_typer(module.app)


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
