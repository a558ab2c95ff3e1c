"""The referee's ZeroMQ edge: how its sockets are set up, how CurveZMQ admits remote bots,
the envelope of every message it sends, and how a stranger's ``hello`` is read and answered.

Both ends that face bots speak through this module: the match runner's server
(:mod:`referee.server`) and the tournament's remote bots' hub (:mod:`referee.hub`). Who may
say hello differs between them (a started bot's token and process, a remote bot's key and
its connection limit); what a hello is, which version is spoken and what a bot is answered
do not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack
import zmq
from zmq.auth.thread import ThreadAuthenticator

from protocol import builders
from protocol.codec import BOT_MESSAGE_DEPTH, MAX_MESSAGE_BYTES, decode_map, validate_bot_message
from protocol.codes import RejectCode
from protocol.errors import ProtocolError
from protocol.messages import Hello
from protocol.version import PROTOCOL_VERSION, negotiate_version
from referee.listeners import RemoteListener

__all__ = [
    "HARD_MESSAGE_LIMIT",
    "HELLO_BYTES",
    "SERVER_NAME",
    "ZAP_DOMAIN",
    "Envelopes",
    "Refusal",
    "ZapHandler",
    "agree_version",
    "authenticated_key",
    "read_hello",
    "router",
    "send_to",
    "sender_pid",
    "serve_curve",
    "source_descriptor",
    "welcome",
]

#: The referee's name in every ``welcome``.
SERVER_NAME = "aegis-ref/0.1"
#: A socket refuses anything larger outright (dropping the peer); between this and
#: MAX_MESSAGE_BYTES a message is received and refused as malformed, with a proper fault.
HARD_MESSAGE_LIMIT = 1 << 20
#: Largest message decoded from a peer that has not said hello (a hello is far smaller).
HELLO_BYTES = 4096
#: The ZAP domain of every CurveZMQ listener.
ZAP_DOMAIN = "aegis"
# A plain int: combining pyzmq's enum flags costs a microsecond per operation.
_SNDMORE = int(zmq.SNDMORE)


def router(
    context: zmq.Context[Any],
    *,
    receive_queue: int,
    send_queue: int,
    send_timeout_ms: int | None = None,
) -> zmq.Socket[bytes]:
    """A ROUTER socket facing bots: it closes at once, drops a peer that sends more than
    :data:`HARD_MESSAGE_LIMIT`, queues ``receive_queue`` messages per peer before it stops
    reading from it (bounding a flood) and ``send_queue`` towards it, and raises when
    sending to a peer that is gone. ``send_timeout_ms``: how long a send may wait for room
    in a peer's queue; None: for ever, unless the send is non-blocking."""
    socket: zmq.Socket[bytes] = context.socket(zmq.ROUTER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.MAXMSGSIZE, HARD_MESSAGE_LIMIT)
    socket.setsockopt(zmq.RCVHWM, receive_queue)
    socket.setsockopt(zmq.SNDHWM, send_queue)
    if send_timeout_ms is not None:
        socket.setsockopt(zmq.SNDTIMEO, send_timeout_ms)
    socket.setsockopt(zmq.ROUTER_MANDATORY, 1)  # sending to a gone peer raises
    return socket


def serve_curve(socket: zmq.Socket[bytes], listener: RemoteListener, heartbeat_ms: int) -> None:
    """Make ``socket`` a CurveZMQ server with the listener's key pair, whose clients the ZAP
    handler of its context admits (:class:`ZapHandler`), before it binds."""
    socket.setsockopt(zmq.CURVE_SERVER, 1)
    socket.setsockopt(zmq.CURVE_SECRETKEY, listener.secret_key.encode())
    socket.setsockopt(zmq.CURVE_PUBLICKEY, listener.public_key.encode())
    socket.setsockopt(zmq.ZAP_DOMAIN, ZAP_DOMAIN.encode())
    # ZMTP heartbeats: a peer that vanished without closing its connection (a host that
    # went down) is dropped, so sending to it fails instead of waiting.
    socket.setsockopt(zmq.HEARTBEAT_IVL, heartbeat_ms)
    socket.setsockopt(zmq.HEARTBEAT_TIMEOUT, 3 * heartbeat_ms)


class ZapHandler:
    """The ZAP handler of ``context``'s CurveZMQ servers, started at once (a thread): a
    client is admitted only if ``admits`` its public key (Z85 text). ``admits`` runs on the
    handler's thread. Stop the handler before destroying the context."""

    def __init__(self, context: zmq.Context[Any], admits: Callable[[str], bool]) -> None:
        self._authenticator = ThreadAuthenticator(context)
        try:
            self._authenticator.start()
            self._authenticator.configure_curve_callback(ZAP_DOMAIN, _KeyCheck(admits))
        except BaseException:
            with contextlib.suppress(Exception):
                self._authenticator.stop()
            raise

    def stop(self) -> None:
        """Stop the handler's thread."""
        self._authenticator.stop()


class _KeyCheck:
    """The ZAP callback of :class:`ZapHandler`."""

    def __init__(self, admits: Callable[[str], bool]) -> None:
        self._admits = admits

    def callback(self, domain: str, key: bytes) -> bool:
        return self._admits(key.decode() if isinstance(key, bytes) else str(key))


class Envelopes:
    """Packs a message in its envelope (``version`` and ``id`` first, then the body: SPEC
    section 3), the same for every message the referee's side sends. One msgpack packer is
    reused (building one per message costs a third of packing), so an instance is not
    shared between threads."""

    __slots__ = ("_pack",)

    def __init__(self) -> None:
        self._pack: Callable[[object], bytes] = msgpack.Packer(use_bin_type=True).pack

    def pack(self, version: str, message_id: int, body: Mapping[str, Any]) -> bytes:
        """``body`` (a map from :mod:`protocol.builders`) as message ``message_id`` of a
        connection that speaks ``version``."""
        envelope: dict[str, Any] = {"version": version, "id": message_id}
        envelope.update(body)
        return self._pack(envelope)

    def rejection(
        self, message_id: int, refusal: Refusal, supported_versions: Sequence[str]
    ) -> bytes:
        """The ``reject`` of a hello (no version agreed: the newest is named)."""
        return self.pack(
            PROTOCOL_VERSION,
            message_id,
            builders.reject(refusal.reply_to, refusal.code, refusal.reason, supported_versions),
        )

    def repeated_shutdown(
        self, message_id: int, hello: Hello, supported_versions: Sequence[str], reason: str
    ) -> bytes:
        """The ``shutdown`` that answers the ``hello`` of a remote bot already told to shut
        down, which dialled in again meanwhile (SPEC section 5): in the version agreed with
        it, or the newest if there is none (it is to leave, not to play)."""
        chosen = agree_version(hello, supported_versions)
        version = chosen if isinstance(chosen, str) else PROTOCOL_VERSION
        return self.pack(version, message_id, builders.shutdown(reason))


def send_to(socket: zmq.Socket[bytes], identity: bytes, payload: bytes, flags: int = 0) -> None:
    """One message to the peer ``identity`` of a ROUTER socket (raises zmq.ZMQError:
    EHOSTUNREACH for a peer that is gone, EAGAIN for one that does not read). Two sends
    rather than send_multipart, which spends more time on its enum flags than ZeroMQ on the
    frames."""
    socket.send(identity, _SNDMORE | flags)
    socket.send(payload, flags)


# -- a stranger's hello --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a hello is refused: the ``reject`` its sender is sent (SPEC sections 3 and 5)."""

    reply_to: int | None
    code: RejectCode
    reason: str


def read_hello(frames: Sequence[bytes] | Sequence[zmq.Frame]) -> Hello | Refusal | None:
    """What a peer that has not said hello sent (its frames after the identity): its valid
    ``hello``; the refusal of a malformed one; None for anything else, dropped unanswered.

    Only a single frame of up to :data:`HELLO_BYTES` is decoded: a peer that has not even
    said hello gets no decoding time beyond what a hello needs (else any process that can
    connect could slow every match)."""
    if len(frames) != 1 or len(frames[0]) > HELLO_BYTES:
        return None
    frame = frames[0]
    data: dict[str, Any] | None = None
    try:
        payload = frame if isinstance(frame, bytes) else frame.bytes
        data = decode_map(payload, max_depth=BOT_MESSAGE_DEPTH)
        message = validate_bot_message(data)
    except ProtocolError as error:
        if data is not None and data.get("type") == "hello":
            return Refusal(None, RejectCode.MALFORMED, str(error))
        return None
    return message if isinstance(message, Hello) else None


def agree_version(hello: Hello, supported_versions: Sequence[str]) -> str | Refusal:
    """The protocol version to speak with the sender of ``hello`` (the newest both speak),
    or the refusal naming the versions it offered."""
    chosen = negotiate_version(hello.versions, supported_versions)
    if chosen is None:
        return Refusal(
            hello.id, RejectCode.VERSION, f"no common protocol version in {hello.versions}"
        )
    return chosen


def welcome(hello: Hello, version: str, heartbeat_ms: int) -> dict[str, Any]:
    """The answer to an accepted ``hello``, to be sent speaking ``version``."""
    return builders.welcome(hello.id, version, SERVER_NAME, heartbeat_ms, MAX_MESSAGE_BYTES)


# -- what a received frame tells about its sender ------------------------------------------


def source_descriptor(frame: zmq.Frame | None) -> int | None:
    """The descriptor of the connection ``frame`` came on (ZeroMQ's ``SRCFD``: it is closed
    once ZeroMQ drops the connection); None if the socket does not tell."""
    if frame is None:
        return None
    try:
        return int(frame.get(zmq.SRCFD))
    except (zmq.ZMQError, TypeError, ValueError):
        return None


def sender_pid(frame: zmq.Frame) -> int | None:
    """The pid of the process that sent ``frame`` over ipc (the socket's peer credentials,
    in ZeroMQ's ``Peer-Address``); None when the socket does not tell."""
    try:
        address = str(frame.get("Peer-Address"))
    except zmq.ZMQError:
        return None
    pid_text = address.rpartition(":")[2]
    return int(pid_text) if pid_text.isdigit() else None


def authenticated_key(frames: Sequence[zmq.Frame]) -> str:
    """The CurveZMQ public key the sender of a message (its frames, the identity first)
    authenticated with, as the ZAP handler reported it; empty if there is none."""
    return str(frames[-1].get("User-Id") or "") if len(frames) > 1 else ""
