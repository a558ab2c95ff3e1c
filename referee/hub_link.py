"""A worker's end of the link to the tournament's hub (:mod:`referee.hub`, whose docstring
describes the link's frames): the socket, and the leases of remote bots' lines that the
worker's server plays its matches on.

A lease is a :class:`~referee.session.BotSession` like any other once its line is lent: the
server sends and receives through the link as if the bot were its own peer, and only gives
the line back instead of shutting the bot down.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from typing import Any

import zmq

from protocol.codec import BOT_MESSAGE_DEPTH, decode_map, validate_bot_message
from protocol.errors import ProtocolError
from protocol.messages import Hello
from referee.bots import BotSpec
from referee.faults import FaultKind
from referee.listeners import RemoteLink
from referee.session import BotSession

__all__ = ["HubLink"]

#: Messages queued each way between a worker and the hub.
_QUEUE_LIMIT = 1000
_NOBLOCK = int(zmq.NOBLOCK)


class HubLink:
    """A server's link to the hub: a ``DEALER`` on the hub's endpoint (over tcp, a CurveZMQ
    client with the run's worker key) and the leases asked for on it.

    ``lent``: the server's table of remote bots by connection identity; a line lent is
    entered there under its line id, so the server reads the bot's messages as any remote
    bot's. Raises zmq.ZMQError if the link cannot be set up.
    """

    def __init__(
        self, context: zmq.Context[Any], link: RemoteLink, lent: dict[bytes, BotSession]
    ) -> None:
        socket: zmq.Socket[bytes] = context.socket(zmq.DEALER)
        try:
            socket.setsockopt(zmq.LINGER, 0)
            socket.setsockopt(zmq.SNDHWM, _QUEUE_LIMIT)
            socket.setsockopt(zmq.RCVHWM, _QUEUE_LIMIT)
            socket.setsockopt(zmq.IPV6, 1)
            if link.server_key is not None:
                assert link.public_key is not None
                assert link.secret_key is not None
                socket.setsockopt(zmq.CURVE_SERVERKEY, link.server_key.encode())
                socket.setsockopt(zmq.CURVE_PUBLICKEY, link.public_key.encode())
                socket.setsockopt(zmq.CURVE_SECRETKEY, link.secret_key.encode())
            socket.connect(link.endpoint)
        except BaseException:
            socket.close(0)
            raise
        #: The link's socket: the server polls it, sends lent bots' messages on it
        #: (``[line, payload]``) and closes it.
        self.socket = socket
        self._lent = lent
        #: Sessions whose lease is asked for or held, by the lease's request id.
        self._leases: dict[bytes, BotSession] = {}
        self._numbers = itertools.count(1)

    def lease(self, spec: BotSpec, *, absent_wait_s: float, busy_wait_s: float) -> BotSession:
        """Ask the hub for a line of the remote bot with ``spec.curve_public_key``: its
        session says hello once the hub lends one (see :meth:`read`), or has a handshake
        fault if the hub reports the bot absent (none within ``absent_wait_s`` when it has
        no connection, ``busy_wait_s`` when all its connections are busy)."""
        assert spec.curve_public_key is not None
        session = BotSession(spec=spec, token="", remote=True)
        session.lease = b"%d" % next(self._numbers)
        self._leases[session.lease] = session
        self._command(
            b"lease",
            session.lease,
            spec.curve_public_key.encode(),
            b"%d" % int(absent_wait_s * 1000),
            b"%d" % int(busy_wait_s * 1000),
        )
        return session

    def end(self, session: BotSession) -> None:
        """Give the session's line back to the hub (or cancel the lease still asked for)."""
        lease, session.lease = session.lease, None
        if lease is None or self.socket.closed:
            return
        self._leases.pop(lease, None)
        if session.identity is None:
            self._command(b"cancel", lease)
        else:
            self._command(b"release", session.identity, b"%d" % session.next_id)

    def read(self, frames: list[bytes]) -> bool:
        """Handle a message from the link if it is the hub's own (a line lent, a bot absent,
        a line gone) and return True; False for a lent bot's message (``[line, payload]``),
        which is the server's to read."""
        if len(frames) < 2 or frames[0]:
            return False
        name, arguments = frames[1], frames[2:]
        if name == b"leased" and len(arguments) == 5:
            request, line, protocol, next_id, hello = arguments
            session = self._leases.get(request)
            if session is None or session.identity is not None:
                # Asked for and given up on: back at once.
                self._command(b"release", line, next_id)
                return True
            try:
                message = validate_bot_message(decode_map(hello, max_depth=BOT_MESSAGE_DEPTH))
            except ProtocolError:
                message = None
            session.identity = line
            session.protocol = protocol.decode()
            session.hello = message if isinstance(message, Hello) else None
            session.next_id = session.lease_floor = int(next_id)
            session.last_heard = time.monotonic()
            self._lent[line] = session
        elif name == b"absent" and len(arguments) == 2:
            absent = self._leases.pop(arguments[0], None)
            if absent is not None and absent.identity is None:
                absent.lease = None
                absent.handshake_fault = absent.fault(
                    FaultKind.HANDSHAKE, f"remote bot: {arguments[1].decode()}"
                )
        elif name == b"gone" and len(arguments) == 2:
            gone = self._lent.get(arguments[0])
            if gone is not None:
                gone.note_fault(FaultKind.DISCONNECT, f"remote bot: {arguments[1].decode()}")
                gone.closed = True
        return True

    def _command(self, *command: bytes) -> None:
        with contextlib.suppress(zmq.ZMQError):  # a hub that is gone answers no lease
            self.socket.send_multipart([b"", *command], _NOBLOCK)
