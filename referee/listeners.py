"""Where remote bots reach the referee, and with which CurveZMQ keys: the listener's address
and key pair, a worker's link to the hub, key files, and whether an address can be listened on.

A config, the command line and the hub read these; ZeroMQ is imported only by the functions
that use it, so reading a tournament's config does not load it (a test keeps it so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import zmq

__all__ = [
    "RemoteLink",
    "RemoteListener",
    "bind_tcp",
    "generate_keys",
    "listen_problem",
    "read_secret_key",
]


@dataclass(frozen=True, slots=True)
class RemoteListener:
    """Where and with which CurveZMQ key pair (Z85 text) the referee listens for remote bots.

    ``port`` 0 picks a free port; :attr:`referee.server.BotServer.remote_endpoint` tells which.
    """

    host: str
    port: int
    public_key: str
    secret_key: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class RemoteLink:
    """How a worker's referee reaches the tournament's remote bots through the hub: the
    hub's link endpoint and, over tcp, the CurveZMQ keys (the hub's public key and the run's
    worker key pair). Plain data: it travels in every match task."""

    endpoint: str
    server_key: str | None = None
    public_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)


def bind_tcp(socket: zmq.Socket[bytes], host: str, port: int) -> str:
    """Bind ``socket`` on tcp ``host:port`` (``tcp://`` prefix, IPv6 literals with or without
    brackets, port 0 for any free port); return the endpoint. Raises zmq.ZMQBaseError."""
    import zmq

    host = host.removeprefix("tcp://").strip("[]")
    if ":" in host:  # an IPv6 literal
        socket.setsockopt(zmq.IPV6, 1)
        host = f"[{host}]"
    if port == 0:
        port = socket.bind_to_random_port(f"tcp://{host}")
    else:
        socket.bind(f"tcp://{host}:{port}")
    return f"tcp://{host}:{port}"


def listen_problem(host: str, port: int) -> str | None:
    """Why the referee could not listen for remote bots on ``host:port`` (a port in use, an
    address not on this machine), or None if it can: it binds there as the referee will,
    then lets go."""
    if not 0 <= port <= 65535:
        return f"cannot listen on {host}:{port}: a port is 0 to 65535"
    import zmq

    context = zmq.Context()
    try:
        probe = context.socket(zmq.ROUTER)
        probe.setsockopt(zmq.LINGER, 0)
        try:
            bind_tcp(probe, host, port)
        except zmq.ZMQBaseError as error:
            code = error.errno if isinstance(error, zmq.ZMQError) else None
            reason = zmq.strerror(code) if code is not None else str(error)  # without "(addr=…)"
            return f"cannot listen on {host}:{port}: {reason}"
        finally:
            probe.close(0)
    finally:
        context.term()
    return None


def read_secret_key(path: Path) -> tuple[str, str]:
    """The key pair (public, secret) of a secret key file written by ``aegis-ref keygen``;
    raise ValueError naming the file and the problem. A ``.pub`` file, or a key whose
    ``.pub`` neighbour holds another public key, is refused: any 40 Z85 characters pass for
    a secret key, and remote bots would be given the wrong public key."""
    if path.suffix == ".pub":
        raise ValueError(f"{path} is a public key; give the secret key file (without .pub)")
    import zmq

    try:
        secret = path.read_text(encoding="ascii").strip()
        public = zmq.curve_public(secret.encode()).decode()
    except OSError as error:
        raise ValueError(f"cannot read key file {path}: {error.strerror or error}") from None
    except (UnicodeError, ValueError, zmq.ZMQError) as error:
        raise ValueError(
            f"{path} does not hold a CurveZMQ secret key (40 Z85 characters, as "
            f"'aegis-ref keygen' writes): {error}"
        ) from None
    paired = path.with_name(path.name + ".pub")
    try:
        stated = paired.read_text(encoding="ascii").strip() if paired.is_file() else public
    except (OSError, UnicodeError) as error:
        raise ValueError(f"cannot read {paired}: {error}") from None
    if stated != public:
        raise ValueError(
            f"the secret key in {path} does not match {paired.name} next to it: remote bots "
            "would be given the wrong public key"
        )
    return public, secret


def generate_keys() -> tuple[str, str]:
    """A new CurveZMQ key pair as Z85 text: (public, secret)."""
    import zmq

    public, secret = zmq.curve_keypair()
    return public.decode(), secret.decode()
