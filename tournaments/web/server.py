"""Run the web service of a run: uvicorn on one address, plain HTTP or TLS."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from tournaments.config.tournament import TournamentSetup
from tournaments.web.app import create_app

__all__ = ["ServeOptions", "insecure_warning", "run_server"]


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """Where and how to serve."""

    host: str = "127.0.0.1"
    port: int = 8000
    certfile: Path | None = None
    keyfile: Path | None = None
    #: Seconds between two looks at the store.
    poll_s: float = 0.5

    @property
    def url(self) -> str:
        """The address to open in a browser."""
        scheme = "https" if self.certfile else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}/"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def insecure_warning(options: ServeOptions) -> str | None:
    """A warning for plain HTTP on an address other machines can reach, else None."""
    if options.certfile is not None or _is_loopback(options.host):
        return None
    return (
        f"serving plain HTTP on {options.host}: anyone on the network path can read and "
        "change the pages; give --certfile and --keyfile, or put a TLS proxy in front "
        "(docs/running-a-tournament.md)"
    )


def run_server(
    directory: Path, options: ServeOptions, league: TournamentSetup | None = None
) -> None:
    """Serve the run whose output is ``directory`` (of ``league``, whose authors may then
    submit over the network) until interrupted."""
    config = uvicorn.Config(
        create_app(directory, poll_s=options.poll_s, league=league),
        host=options.host,
        port=options.port,
        ssl_certfile=str(options.certfile) if options.certfile else None,
        ssl_keyfile=str(options.keyfile) if options.keyfile else None,
        # The C parser (a dependency): h11's Python framing cost more per viewer.
        http="httptools",
        log_level="warning",
        access_log=False,
        # An idle keep-alive connection is closed soon: it costs a descriptor.
        timeout_keep_alive=5,
        # Event streams never end by themselves: a stop closes them after this long.
        timeout_graceful_shutdown=2,
        lifespan="on",
    )
    uvicorn.Server(config).run()
