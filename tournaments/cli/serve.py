"""The ``serve`` command: a run's live pages and JSON API over HTTP, and the ``--serve``
flag that starts it beside ``tournament`` and ``league``.

Exit codes: 0 stopped (Ctrl-C); 2 nothing to serve at the path, or a bad address or TLS
file.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated

import typer

from tournaments.cli.exit_codes import EXIT_USAGE
from tournaments.config.tournament import TournamentSetup
from tournaments.errors import TournamentError
from tournaments.league.submissions import LEAGUE_CONFIG, load_league

__all__ = ["ServeFlag", "ServedBeside", "app", "run_directory", "serve", "served_beside"]

app = typer.Typer(no_args_is_help=True)


#: ``--serve HOST:PORT`` of ``tournament`` and ``league``.
ServeFlag = Annotated[
    str | None,
    typer.Option(
        "--serve",
        metavar="HOST:PORT",
        help="Serve the run's live pages and JSON API at this address while it runs "
        "(as aegis-ref serve does, in a process of its own).",
    ),
]


def run_directory(path: Path) -> tuple[Path, TournamentSetup | None]:
    """The output folder to serve for ``path``, and its league if it is one: a league's
    folder or config (its output), or a tournament's output folder itself. Raises
    :class:`TournamentError`."""
    if path.suffix in (".yaml", ".yml") or (path / LEAGUE_CONFIG).is_file():
        setup = load_league(path)
        return setup.output, setup
    if path.exists() and not path.is_dir():
        raise TournamentError(f"{path}: neither a league nor a tournament's output folder")
    return path, None  # a folder not made yet: a run about to start (the pages say so)


def _address(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        raise typer.BadParameter(f"{text!r}: give HOST:PORT, such as 127.0.0.1:8000")
    return host.strip("[]") or "127.0.0.1", int(port)


def _parse_address(text: str) -> tuple[str, int]:
    try:
        return _address(text)
    except typer.BadParameter as error:
        typer.echo(f"--serve: {error.message}", err=True)
        raise typer.Exit(EXIT_USAGE) from None


class ServedBeside:
    """The server :func:`served_beside` started, if any (``url`` None: none)."""

    def __init__(self, url: str | None) -> None:
        self.url = url

    def linger(
        self,
        path: str,
        shown: Callable[[dict[str, object]], bool],
        *,
        timeout_s: float = 5.0,
        grace_s: float = 1.0,
    ) -> None:
        """Wait until the server's JSON document at ``path`` is ``shown`` (at most
        ``timeout_s``), then ``grace_s`` more, so that the open pages, told of the change,
        fetch it before the server stops. Without a server, return at once."""
        if self.url is None:
            return
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=1.0) as answer:
                    document = json.loads(answer.read())
                if isinstance(document, dict) and shown(document):
                    time.sleep(grace_s)
                    return
            except (OSError, ValueError):  # not up, not yet there, or cut off: try again
                pass
            time.sleep(0.1)


@contextlib.contextmanager
def served_beside(path: Path, address: str | None) -> Iterator[ServedBeside]:
    """With an ``address`` (HOST:PORT), run ``aegis-ref serve PATH`` there while the
    block runs, in a process of its own so that serving never takes the run's own time;
    without one, nothing."""
    if address is None:
        yield ServedBeside(None)
        return
    host, port = _parse_address(address)
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from tournaments.cli import main; main()",
            "serve",
            str(path),
            "--host",
            host,
            "--port",
            str(port),
        ],
        # Not in the run's process group: Ctrl-C stops the run, which then stops this.
        start_new_session=True,
    )
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    shown_host = f"[{shown_host}]" if ":" in shown_host else shown_host
    try:
        yield ServedBeside(f"http://{shown_host}:{port}/")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@app.command()
def serve(
    path: Annotated[
        Path,
        typer.Argument(help="A tournament's output folder, or a league (folder or config)."),
    ],
    host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="The tcp port.")] = 8000,
    certfile: Annotated[
        Path | None,
        typer.Option(exists=True, dir_okay=False, help="TLS: the server's certificate (PEM)."),
    ] = None,
    keyfile: Annotated[
        Path | None,
        typer.Option(exists=True, dir_okay=False, help="TLS: its private key (PEM)."),
    ] = None,
) -> None:
    """Serve a tournament, league or its output over HTTP while it runs or after: live
    standings, the latest matches and their replays, a page per bot, and the JSON API
    behind them (/api/v1/...)."""
    # Imported here: the commands that only take --serve start this one in a process.
    from tournaments.web.server import ServeOptions, insecure_warning, run_server

    if (certfile is None) != (keyfile is None):
        typer.echo("give both --certfile and --keyfile, or neither", err=True)
        raise typer.Exit(EXIT_USAGE)
    try:
        directory, league = run_directory(path)
    except TournamentError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(EXIT_USAGE) from None
    options = ServeOptions(host=host, port=port, certfile=certfile, keyfile=keyfile)
    warning = insecure_warning(options)
    if warning is not None:
        typer.echo(f"Warning: {warning}", err=True)
    typer.echo(f"Serving {directory} at {options.url} (Ctrl-C stops)", err=True)
    try:
        run_server(directory, options, league)
    except KeyboardInterrupt:
        pass
    except (OSError, ValueError) as error:  # the port is taken, a certificate is unreadable
        typer.echo(f"cannot serve at {options.url}: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
