"""The Python bot SDK: write one class, call :func:`run`.

A complete bot::

    import random
    from protocol.sdk import Bot, run

    class RandomBot(Bot):
        name = "random"

        def decide(self, view, legal):  # or exchange(), bid() and play() separately
            return random.choice(legal)

    run(RandomBot())

:func:`run` takes the endpoint from ``--endpoint`` or ``AEGIS_ENDPOINT`` and the token from
``--token`` or ``AEGIS_TOKEN``, connects a ZeroMQ ``DEALER``, says ``hello`` and then answers
the referee until it says ``shutdown``: ``ready`` to ``match_start``, ``act`` to ``decide``
(asking the bot), ``pong`` to ``ping``. The bot's methods get a :class:`Decision` (the
request as typed, immutable values: the engine's ``Observation``, cards as
:class:`~referee.rules.cards.Card`) and the legal actions as :mod:`referee.rules.actions`
objects, and return an action object or an action string.

Failures, and what the SDK does about them:

- An exception in a bot method that answers a request (``exchange``, ``bid``, ``play``,
  ``decide``, ``on_match_start``, and ``on_events`` before a decision): the traceback goes to
  stderr and the request is answered with an ``error`` of code ``unexpected``, which the
  referee counts as a fault of the bot. Playing some legal action instead would hide the bug
  and record a move the bot never chose. The process carries on with its next match. An
  exception in ``on_match_end`` (or its ``on_events``) is logged and ignored.
- A malformed message from the referee is logged on stderr; if it was a request, it is
  answered with ``error`` code ``malformed``. A message of an unknown type is answered with
  ``error`` code ``unknown_type``. Either way the bot carries on.
- ``reject`` (or a ``welcome`` naming a major version this SDK does not speak): a message on
  stderr and exit code :data:`EXIT_REJECTED`.
- The connection to the referee dropped (its process died or restarted; on ``tcp``, ZeroMQ's
  own heartbeats notice a peer that vanished): the SDK closes its socket, connects afresh and
  says ``hello`` again. The same once the referee, having shown that it pings, then stays
  silent for longer than the idle limit (three heartbeats and a second, counted from the
  bot's last message, so never while the bot is deciding). A referee that never pings is
  never taken for dead by its silence alone: between matches a bot may wait for long.
- The parent process gone (a bot started by the referee, i.e. given a token, whose parent
  changes: the referee was killed), or, if ``max_idle`` is set, no message at all from the
  referee for that long: exit with :data:`EXIT_ORPHANED` or :data:`EXIT_IDLE` rather than
  linger forever.

Messages go to the ``protocol.sdk`` logger; without logging configured, Python prints
warnings and errors on stderr, where the referee keeps a bot's last lines.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import struct
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgpack
import zmq

from protocol.codes import ErrorCode
from protocol.errors import ProtocolError
from protocol.sdk_views import (
    BidMade,
    CardPlayed,
    Decision,
    Event,
    ExchangeMade,
    ExchangeStopped,
    ForfeitInfo,
    GameEnded,
    GameStarted,
    LegalActions,
    MatchEndInfo,
    MatchInfo,
    SlavePassed,
    TimeControlInfo,
    TrickTaken,
    UnknownEvent,
    decode_message,
    format_action,
    is_message_id,
    parse_decide,
    parse_match_end,
    parse_match_start,
    validate_strictly,
)
from protocol.version import PROTOCOL_VERSION, parse_version
from referee.rules.actions import Action
from referee.rules.cards import Card

__all__ = [
    "DEFAULT_HELLO_TIMEOUT",
    "EXIT_IDLE",
    "EXIT_OK",
    "EXIT_ORPHANED",
    "EXIT_REJECTED",
    "EXIT_USAGE",
    "Action",
    "BidMade",
    "Bot",
    "Card",
    "CardPlayed",
    "Decision",
    "Event",
    "ExchangeMade",
    "ExchangeStopped",
    "ForfeitInfo",
    "GameEnded",
    "GameStarted",
    "LegalActions",
    "MatchEndInfo",
    "MatchInfo",
    "Session",
    "SessionEnd",
    "SlavePassed",
    "TimeControlInfo",
    "TrickTaken",
    "UnknownEvent",
    "run",
]

log = logging.getLogger("protocol.sdk")

#: Exit codes of a bot process run by :func:`run`.
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_REJECTED = 3
EXIT_ORPHANED = 4
EXIT_IDLE = 5

#: Seconds to wait for ``welcome`` before saying ``hello`` again on a fresh connection.
DEFAULT_HELLO_TIMEOUT = 10.0
#: Added to three heartbeats to make the default idle limit, in seconds.
IDLE_MARGIN = 1.0
#: ZeroMQ's own (ZMTP) heartbeat on the connection, in ms: a referee host that vanishes
#: without closing the connection is noticed after the timeout. The referee's ZeroMQ answers
#: these by itself, however busy the referee is.
_TRANSPORT_HEARTBEAT_MS = 1000
_TRANSPORT_TIMEOUT_MS = 5000
_RECONNECT = -1  # not an exit code: the runner's signal to reconnect
_POLL_MS = 200  # how often a waiting bot checks its parent and its idle clocks
_MAX_ACTION_CHARS = 64
_MAX_ERROR_CHARS = 4000


class Bot:
    """Base class of a bot: override :meth:`exchange`, :meth:`bid` and :meth:`play` (or
    :meth:`decide` alone), and optionally the hooks.

    Every decision method receives the request as a :class:`Decision` and the legal
    actions, in the referee's order, as :mod:`referee.rules.actions` objects (``legal.text`` holds
    the strings); it returns one of them, or any action string. All methods run in the
    SDK's one thread: while one runs, nothing else happens.
    """

    #: The bot's name in records (1-64 characters); the class name if empty.
    name: str = ""
    #: Optional, up to 128 characters.
    author: str = ""
    #: Optional, up to 64 characters.
    bot_version: str = ""

    @property
    def rng(self) -> random.Random:
        """The bot's random numbers. The SDK reseeds them at every ``match_start`` with the
        match's ``seed`` (protocol 1.1), so a bot that draws all its randomness from here
        plays a match the same way however often, and in whichever process, it is played.
        A bot may set its own generator; one that is not a ``random.Random`` it seeds itself
        (from ``MatchInfo.seed``, in ``on_match_start``)."""
        rng: random.Random | None = self.__dict__.get("_rng")
        if rng is None:
            rng = self.__dict__["_rng"] = random.Random()
        return rng

    @rng.setter
    def rng(self, value: random.Random) -> None:
        self.__dict__["_rng"] = value

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action | str:
        """Choose an action; by default hands over to exchange, bid or play."""
        method: Callable[[Decision, Sequence[Action]], Action | str] = getattr(self, view.decision)
        return method(view, legal)

    def exchange(self, view: Decision, legal: Sequence[Action]) -> Action | str:
        """Exchange phase: ``stop`` (master only) or ``exchange`` with 0-5 cards."""
        raise NotImplementedError(f"{type(self).__name__} does not implement exchange()")

    def bid(self, view: Decision, legal: Sequence[Action]) -> Action | str:
        """Bidding: ``bid N`` or, for the slave, ``pass``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement bid()")

    def play(self, view: Decision, legal: Sequence[Action]) -> Action | str:
        """Play phase: ``play C``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement play()")

    def on_match_start(self, match: MatchInfo) -> None:
        """A match begins (the SDK answers ``ready`` when this returns)."""

    def on_events(self, events: Sequence[Event]) -> None:
        """What happened since the last decision, before each decision and at a match's
        end; by default calls :meth:`on_event` for each."""
        for event in events:
            self.on_event(event)

    def on_event(self, event: Event) -> None:
        """One event (see :meth:`on_events`)."""

    def on_match_end(self, result: MatchEndInfo) -> None:
        """A match is over."""


class SessionEnd(Exception):  # noqa: N818 - not an error: the session's normal end, too
    """The conversation is over: the referee said ``shutdown`` (code 0) or refused us."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        #: The process exit code it calls for.
        self.code = code
        self.reason = reason


class Session:
    """The bot's side of the conversation, as bytes in and bytes out, without sockets.

    :meth:`start` gives the ``hello`` of a new connection; :meth:`handle` takes each message
    from the referee and returns the reply to send, if any, or raises :class:`SessionEnd`.
    :func:`run` drives it over ZeroMQ.
    """

    def __init__(self, bot: Bot, token: str = "", *, debug: bool = False) -> None:
        self.bot = bot
        self.token = token
        #: Validate every message with the pydantic models as well (slow; for development).
        self.debug = debug
        #: The protocol version of this connection (the one ``welcome`` named).
        self.protocol = PROTOCOL_VERSION
        #: The referee's ping interval, once welcomed.
        self.heartbeat_ms: int | None = None
        self.welcomed = False
        #: The referee has pinged on this connection: its silence now means trouble.
        self.pinged = False
        self._next_id = 1
        self._hello_id = 0
        self._matches: dict[str, MatchInfo] = {}
        bot_class = type(bot)
        self._wants_events = (
            bot_class.on_events is not Bot.on_events or bot_class.on_event is not Bot.on_event
        )
        self._decide = bot.decide
        self._packer = msgpack.Packer()
        self._handlers: dict[str, Callable[[dict[str, Any], float], bytes | None]] = {
            "decide": self._on_decide,
            "ping": self._on_ping,
            "match_start": self._on_match_start,
            "match_end": self._on_match_end,
            "welcome": self._on_welcome,
            "reject": self._on_reject,
            "shutdown": self._on_shutdown,
            "error": self._on_error,
        }

    # -- sending ---------------------------------------------------------------------------

    def _message(self, kind: str, fields: Mapping[str, Any]) -> bytes:
        message_id = self._next_id
        self._next_id = message_id + 1
        message = {"version": self.protocol, "type": kind, "id": message_id}
        message.update(fields)
        packed: bytes = self._packer.pack(message)
        return packed

    def _error(self, reply_to: Any, code: ErrorCode, text: str) -> bytes:
        if not is_message_id(reply_to):
            reply_to = None
        return self._message(
            "error", {"reply_to": reply_to, "code": code.value, "message": text[:_MAX_ERROR_CHARS]}
        )

    def start(self) -> bytes:
        """Begin a new connection: forget the old one and return the ``hello`` to send."""
        self.protocol = PROTOCOL_VERSION
        self.heartbeat_ms = None
        self.welcomed = False
        self.pinged = False
        self._next_id = 1
        self._matches.clear()
        bot = self.bot
        self._hello_id = self._next_id
        return self._message(
            "hello",
            {
                "versions": [PROTOCOL_VERSION],
                "name": (bot.name or type(bot).__name__)[:64],
                "author": bot.author[:128],
                "bot_version": bot.bot_version[:64],
                "token": self.token,
            },
        )

    def idle_limit(self) -> float | None:
        """Seconds of silence after which the referee is taken to be gone, or None for no
        limit: :data:`DEFAULT_HELLO_TIMEOUT` while waiting for the welcome; three heartbeats
        and :data:`IDLE_MARGIN` once the referee has pinged; none before that."""
        if not self.welcomed:
            return DEFAULT_HELLO_TIMEOUT
        if self.heartbeat_ms is None or not self.pinged:
            return None
        return 3 * self.heartbeat_ms / 1000 + IDLE_MARGIN

    # -- receiving -------------------------------------------------------------------------

    def handle(self, payload: bytes, received_at: float | None = None) -> bytes | None:
        """Handle one message from the referee; return the reply to send, if any.

        ``received_at`` (a :func:`time.monotonic` reading) defaults to now. Raises
        :class:`SessionEnd` when the conversation is over.
        """
        if received_at is None:
            received_at = time.monotonic()
        try:
            data = decode_message(payload)
        except ProtocolError as error:
            log.warning("aegis sdk: ignoring a malformed message from the referee: %s", error)
            return None
        kind: str = data["type"]
        handler = self._handlers.get(kind)
        if handler is None:
            return self._on_unknown(data)
        if self.debug:
            try:
                validate_strictly(data)
            except ProtocolError as error:
                return self._on_malformed(data, error)
        return handler(data, received_at)

    def _on_unknown(self, data: dict[str, Any]) -> bytes:
        kind = data["type"]
        if kind in ("hello", "ready", "act", "pong"):
            log.warning("aegis sdk: the referee sent a %r, a bot's message", kind)
            return self._error(
                data.get("id"), ErrorCode.UNEXPECTED, f"a bot does not accept {kind!r}"
            )
        log.warning("aegis sdk: answering a message of unknown type %r", kind)
        return self._error(data.get("id"), ErrorCode.UNKNOWN_TYPE, f"unknown message type {kind!r}")

    def _on_malformed(self, data: dict[str, Any], error: ProtocolError) -> bytes | None:
        log.warning("aegis sdk: malformed message from the referee: %s", error)
        if data["type"] in ("decide", "match_start", "ping"):
            return self._error(data.get("id"), ErrorCode.MALFORMED, str(error))
        return None

    def _on_decide(self, data: dict[str, Any], received_at: float) -> bytes | None:
        match_id = data.get("match_id")
        match = self._matches.get(match_id) if type(match_id) is str else None
        try:
            view = parse_decide(data, match, received_at)
        except ProtocolError as error:
            return self._on_malformed(data, error)
        try:
            if self._wants_events and view.events:
                self.bot.on_events(view.events)
            text = format_action(self._decide(view, view.legal))
        except Exception as error:  # the bot's own code: any failure is reported, not raised
            return self._bot_failed(view.request_id, f"{view.decision} decision", error)
        if len(text) > _MAX_ACTION_CHARS:
            log.error("aegis sdk: the bot chose an action of %d characters: %.80r", len(text), text)
            return self._error(
                view.request_id, ErrorCode.UNEXPECTED, "the bot's action is too long"
            )
        return self._message("act", {"reply_to": view.request_id, "action": text})

    def _bot_failed(self, request_id: int, where: str, error: Exception) -> bytes:
        log.error("aegis sdk: the bot failed in its %s", where, exc_info=error)
        # A legal string the referee sent but the SDK cannot parse is the referee's fault.
        code = ErrorCode.MALFORMED if isinstance(error, ProtocolError) else ErrorCode.UNEXPECTED
        return self._error(request_id, code, f"{type(error).__name__}: {error}")

    def _on_ping(self, data: dict[str, Any], received_at: float) -> bytes | None:
        request_id = data.get("id")
        if not is_message_id(request_id):
            problem = ProtocolError(f"a ping needs a valid id, got {request_id!r}")
            return self._on_malformed(data, problem)
        self.pinged = True
        return self._message("pong", {"reply_to": request_id})

    def _on_match_start(self, data: dict[str, Any], received_at: float) -> bytes | None:
        try:
            match = parse_match_start(data)
        except ProtocolError as error:
            return self._on_malformed(data, error)
        self._matches[match.match_id] = match
        try:
            rng = self.bot.rng
            if match.seed is not None and isinstance(rng, random.Random):
                rng.seed(match.seed)  # a generator of another kind is the bot's to seed
            self.bot.on_match_start(match)
        except Exception as error:  # the bot's own code
            return self._bot_failed(match.request_id, "on_match_start", error)
        return self._message("ready", {"reply_to": match.request_id})

    def _on_match_end(self, data: dict[str, Any], received_at: float) -> None:
        match_id = data.get("match_id")
        match = self._matches.pop(match_id, None) if type(match_id) is str else None
        try:
            result = parse_match_end(data, match)
        except ProtocolError as error:
            self._on_malformed(data, error)
            return
        try:
            if self._wants_events and result.events:
                self.bot.on_events(result.events)
            self.bot.on_match_end(result)
        except Exception:  # the bot's own code; nothing to answer
            log.exception("aegis sdk: the bot failed at the end of match %r", result.match_id)

    def _on_welcome(self, data: dict[str, Any], received_at: float) -> None:
        if data.get("reply_to") != self._hello_id:
            log.warning("aegis sdk: ignoring a welcome that does not answer our hello")
            return
        protocol = data.get("protocol")
        ours = parse_version(PROTOCOL_VERSION)
        try:
            chosen = parse_version(protocol)  # type: ignore[arg-type]
        except ValueError:
            chosen = (-1, -1)
        if chosen[0] != ours[0]:
            raise SessionEnd(
                EXIT_REJECTED,
                f"the referee chose protocol version {protocol!r}; this SDK speaks "
                f"{PROTOCOL_VERSION}",
            )
        # A higher minor version only adds what we may ignore; we still speak our own.
        self.protocol = protocol if chosen <= ours else PROTOCOL_VERSION  # type: ignore[assignment]
        self.welcomed = True
        heartbeat = data.get("heartbeat_ms")
        if type(heartbeat) is int and heartbeat > 0:
            self.heartbeat_ms = heartbeat
        else:
            log.warning("aegis sdk: the welcome has no valid heartbeat_ms: %r", heartbeat)

    def _on_reject(self, data: dict[str, Any], received_at: float) -> None:
        raise SessionEnd(
            EXIT_REJECTED,
            f"the referee rejected this bot ({data.get('code')}): {data.get('reason')} "
            f"(referee speaks {data.get('supported_versions')}, this SDK {PROTOCOL_VERSION})",
        )

    def _on_shutdown(self, data: dict[str, Any], received_at: float) -> None:
        raise SessionEnd(EXIT_OK, f"shutdown: {data.get('reason', '')}")

    def _on_error(self, data: dict[str, Any], received_at: float) -> None:
        log.warning(
            "aegis sdk: the referee reports %s (about message %r): %s",
            data.get("code"),
            data.get("reply_to"),
            data.get("message"),
        )


# ---------------------------------------------------------------------------------------------
# Running over ZeroMQ


def _arguments(
    endpoint: str | None, token: str | None, argv: Sequence[str] | None
) -> tuple[str, str]:
    # Never abbreviated (SPEC section 1): a bot's own ``--tok`` is not ``--token``.
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--endpoint")
    parser.add_argument("--token")
    # Other arguments are the bot's own business.
    known, _others = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    endpoint = endpoint or known.endpoint or os.environ.get("AEGIS_ENDPOINT")
    if not endpoint:
        log.error("aegis sdk: no endpoint: pass --endpoint URL or set AEGIS_ENDPOINT")
        raise SystemExit(EXIT_USAGE)
    if token is None:
        token = known.token if known.token is not None else os.environ.get("AEGIS_TOKEN", "")
    return endpoint, token


def run(
    bot: Bot,
    endpoint: str | None = None,
    token: str | None = None,
    argv: Sequence[str] | None = None,
    *,
    idle_timeout: float | None = None,
    max_idle: float | None = None,
    debug: bool | None = None,
) -> None:
    """Play as ``bot`` until the referee says ``shutdown``, then return.

    ``endpoint``: else ``--endpoint`` in ``argv`` (default ``sys.argv``), else the
    environment's ``AEGIS_ENDPOINT``; ``token`` likewise from ``--token`` or ``AEGIS_TOKEN``
    (other arguments are ignored). ``idle_timeout``: seconds of referee silence before
    reconnecting (default: see :meth:`Session.idle_limit`; when given, it applies whether or
    not the referee pings). ``max_idle``: seconds of referee silence, across
    reconnections, before giving up (default: never). ``debug`` (default: environment
    ``AEGIS_SDK_DEBUG`` set): validate every message with the pydantic models too.

    Raises ``SystemExit`` with a non-zero code when the bot cannot go on: no endpoint
    (:data:`EXIT_USAGE`), rejected (:data:`EXIT_REJECTED`), parent gone
    (:data:`EXIT_ORPHANED`), referee silent for ``max_idle`` (:data:`EXIT_IDLE`).
    """
    endpoint, token = _arguments(endpoint, token, argv)
    curve = _curve_keys(argv)
    if debug is None:
        debug = bool(os.environ.get("AEGIS_SDK_DEBUG"))
    session = Session(bot, token, debug=debug)
    # A bot given a token was started by the referee: if its parent changes, the referee died.
    parent = os.getppid() if token else None
    code = _Runner(session, endpoint, idle_timeout, max_idle, parent, curve).serve()
    if code != EXIT_OK:
        raise SystemExit(code)


def _curve_keys(argv: Sequence[str] | None) -> tuple[str, str, str] | None:
    """A remote bot's CurveZMQ keys (Z85 text): the referee's public key, then the bot's
    public and secret keys, from ``--server-key``/``--public-key``/``--secret-key`` or
    ``AEGIS_SERVER_KEY``/``AEGIS_PUBLIC_KEY``/``AEGIS_SECRET_KEY``; None when not given."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for name in ("server", "public", "secret"):
        parser.add_argument(f"--{name}-key")
    known, _others = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    server = known.server_key or os.environ.get("AEGIS_SERVER_KEY")
    if not server:
        return None
    public = known.public_key or os.environ.get("AEGIS_PUBLIC_KEY")
    secret = known.secret_key or os.environ.get("AEGIS_SECRET_KEY")
    if not public or not secret:
        log.error("aegis sdk: a server key needs the bot's own public and secret keys too")
        raise SystemExit(EXIT_USAGE)
    return server, public, secret


def _send(socket: zmq.Socket[bytes], payload: bytes) -> None:
    try:
        socket.send(payload, zmq.NOBLOCK)
    except zmq.Again:
        log.warning("aegis sdk: the referee is unreachable; a message was dropped")


class _Runner:
    """Drives a :class:`Session` over a ZeroMQ ``DEALER``, reconnecting as needed."""

    def __init__(
        self,
        session: Session,
        endpoint: str,
        idle_timeout: float | None,
        max_idle: float | None,
        parent: int | None,
        curve: tuple[str, str, str] | None = None,
    ) -> None:
        self.curve = curve
        self.session = session
        self.endpoint = endpoint
        self.idle_timeout = idle_timeout
        self.max_idle = max_idle
        self.parent = parent
        #: When the referee's last message arrived, on any connection.
        self.heard = time.monotonic()

    def serve(self) -> int:
        """Converse until the end; return the exit code."""
        context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        try:
            while True:
                code = self._connection(context)
                if code is not None:
                    return code
        finally:
            context.term()

    def _connection(self, context: zmq.Context[zmq.Socket[bytes]]) -> int | None:
        """One connection: an exit code, or None to reconnect."""
        socket = context.socket(zmq.DEALER)
        monitor: zmq.Socket[bytes] | None = None
        try:
            socket.setsockopt(zmq.LINGER, 0)
            socket.setsockopt(zmq.RCVTIMEO, _POLL_MS)
            socket.setsockopt(zmq.HEARTBEAT_IVL, _TRANSPORT_HEARTBEAT_MS)
            socket.setsockopt(zmq.HEARTBEAT_TIMEOUT, _TRANSPORT_TIMEOUT_MS)
            socket.setsockopt(zmq.IPV6, 1)  # IPv6 endpoints too, such as tcp://[::1]:5555
            monitor = socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
            if self.curve is not None:  # a remote bot: encrypted, authenticated by its key
                server, public, secret = self.curve
                socket.setsockopt(zmq.CURVE_SERVERKEY, server.encode())
                socket.setsockopt(zmq.CURVE_PUBLICKEY, public.encode())
                socket.setsockopt(zmq.CURVE_SECRETKEY, secret.encode())
            try:
                socket.connect(self.endpoint)
            except zmq.ZMQError as error:
                log.error("aegis sdk: cannot connect to %r: %s", self.endpoint, error)
                return EXIT_USAGE
            session = self.session
            _send(socket, session.start())
            # Silence counts from our last message, so never while the bot is deciding.
            quiet_since = time.monotonic()
            while True:
                try:
                    payload = socket.recv()
                except zmq.Again:
                    if _has_disconnected(monitor):
                        log.warning("aegis sdk: lost the connection to the referee; reconnecting")
                        return None
                    code = self._check_silence(quiet_since)
                    if code == _RECONNECT:
                        return None
                    if code is not None:
                        return code
                    continue
                self.heard = received_at = time.monotonic()
                if socket.getsockopt(zmq.RCVMORE):
                    while socket.getsockopt(zmq.RCVMORE):
                        socket.recv()
                    log.warning("aegis sdk: ignoring a message of several frames")
                    continue
                try:
                    reply = session.handle(payload, received_at)
                except SessionEnd as end:
                    log.log(
                        logging.INFO if end.code == EXIT_OK else logging.ERROR,
                        "aegis sdk: %s",
                        end.reason,
                    )
                    return end.code
                if reply is not None:
                    _send(socket, reply)
                quiet_since = time.monotonic()
        finally:
            if monitor is not None:
                socket.disable_monitor()
                monitor.close(linger=0)
            socket.close(linger=0)

    def _check_silence(self, quiet_since: float) -> int | None:
        """While waiting: an exit code, :data:`_RECONNECT`, or None to go on waiting."""
        now = time.monotonic()
        if self.parent is not None and os.getppid() != self.parent:
            log.error("aegis sdk: the parent process %d is gone; exiting", self.parent)
            return EXIT_ORPHANED
        if self.max_idle is not None and now - self.heard > self.max_idle:
            log.error("aegis sdk: no word from the referee in %.1f s; exiting", self.max_idle)
            return EXIT_IDLE
        limit = self.session.idle_limit() if self.idle_timeout is None else self.idle_timeout
        if limit is not None and now - quiet_since > limit:
            log.warning(
                "aegis sdk: the referee has been silent for %.1f s; reconnecting",
                now - quiet_since,
            )
            return _RECONNECT
        return None


def _has_disconnected(monitor: zmq.Socket[bytes]) -> bool:
    """True if the socket's monitor reports that the connection dropped."""
    while True:
        try:
            frames = monitor.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return False
        # A monitor event's first frame: the event number (16 bits), then its value (32).
        # Read here rather than with zmq.utils.monitor, whose import (asyncio) would add a
        # sixth to every bot's start.
        if len(frames[0]) >= 2 and struct.unpack_from("=H", frames[0])[0] == int(
            zmq.EVENT_DISCONNECTED
        ):
            return True
