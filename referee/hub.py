"""The remote bots' listener of a tournament: one CurveZMQ socket for every remote bot, lent
to the workers one match at a time.

A remote bot dials in to the tournament's one address; the referees that play the matches
are worker processes (a local pool, or Dask workers on other machines), each with a socket of
its own, and a TCP connection cannot be handed from one process to another. So the hub,
running in a thread of the coordinator, owns every remote bot's connections and relays:

- A **line** is one connection of a remote bot that said a valid ``hello``; the hub answers
  it with ``welcome``, pings it while it is idle (so that it never goes silent) and notices at
  once when it drops (a socket monitor reports the closed descriptor). A bot may keep up to
  its ``connections`` lines busy at once, each playing one match; a few spare connections
  (as many again) are welcomed and wait, taking over when a line drops; more are rejected.
- A **link** is a worker's referee (:class:`~referee.server.BotServer` with a
  :class:`~referee.listeners.RemoteLink`): a ``DEALER`` on the hub's ipc socket (local
  workers) or on the public listener with the run's worker key (Dask workers). For a match
  it **leases** a line of the bot, exchanges the match's messages through the hub as if the
  bot were its own peer, and releases the line at the end. A lease waits a bounded time for
  a free line; then the worker is told the bot is absent, and the match is forfeited as for
  a bot that never said hello.

Link frames (all bytes): a bot's message is ``[line, payload]`` both ways; a command is
``[b"", name, *arguments]``: ``lease request key absent_ms busy_ms``, ``cancel request`` and
``release line next_id`` from a worker; ``leased request line protocol next_id hello``,
``absent request reason`` and ``gone line reason`` from the hub.

The referee's message ids stay increasing on each connection across leases: a lease carries
the next id, and a release gives it back (a worker that vanished without releasing has its
lines reclaimed when its link drops, counting the messages it had the hub forward).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import struct
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import zmq

from protocol import builders
from protocol.codes import RejectCode
from protocol.messages import Hello
from protocol.version import SUPPORTED_VERSIONS
from referee.edge import (
    Envelopes,
    Refusal,
    ZapHandler,
    agree_version,
    authenticated_key,
    read_hello,
    router,
    send_to,
    serve_curve,
    source_descriptor,
    welcome,
)
from referee.listeners import RemoteLink, RemoteListener, bind_tcp, generate_keys
from referee.rundir import PrivateDirectory

__all__ = ["LineCounts", "RemoteHub"]

_QUEUE_LIMIT = 1000
_POLL_MS = 100
#: How long closing waits for the remote bots told ``shutdown`` to close their connections
#: (the protocol gives them one second to exit; the rest is room for a busy machine). Less
#: than :meth:`RemoteHub.close` waits for the hub's thread.
_SHUTDOWN_CONFIRM_S = 10.0
_EVENT = struct.Struct("=HI")
_POLLIN = int(zmq.POLLIN)
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LineCounts:
    """A remote bot's lines as the hub sees them: connected, and lent to a match now."""

    lines: int
    leased: int


@dataclass(slots=True, eq=False)
class _Line:
    """One welcomed connection of a remote bot."""

    line_id: bytes
    identity: bytes
    key: str
    descriptor: int | None
    protocol: str
    hello: bytes
    next_id: int
    #: The link it is lent to, and how many messages that link had forwarded to it.
    lessee: tuple[int, bytes] | None = None
    forwarded: int = 0
    last_sent: float = 0.0
    #: When it was last lent: the line lent longest ago goes next, spreading the matches.
    lent_at: float = 0.0


@dataclass(slots=True, eq=False)
class _Departure:
    """A connection of a remote bot that dialled in again while the hub was closing, and was
    told ``shutdown`` once more: the hub waits for it to close too."""

    identity: bytes


@dataclass(slots=True, eq=False)
class _Request:
    """A worker's lease request waiting for a free line."""

    link: tuple[int, bytes]
    request: bytes
    key: str
    absent_deadline: float
    busy_deadline: float


class RemoteHub:
    """The listener of every remote bot of a tournament (a thread; see the module).

    ``bots`` maps each remote bot's public key to its ``connections`` limit. Workers on
    this machine link through an ipc socket (:meth:`local_link`), workers elsewhere through
    the public listener with the run's worker key (:meth:`tcp_link`). Raises OSError if it
    cannot listen.
    """

    def __init__(
        self,
        listener: RemoteListener,
        bots: Mapping[str, int],
        *,
        heartbeat_ms: int = 5000,
        supported_versions: tuple[str, ...] = SUPPORTED_VERSIONS,
    ) -> None:
        self.heartbeat_ms = heartbeat_ms
        self.supported_versions = supported_versions
        self._limits = dict(bots)
        self._worker_public, self._worker_secret = generate_keys()
        self._listener = listener
        self._lock = threading.Lock()
        self._counts: dict[str, LineCounts] = {key: LineCounts(0, 0) for key in self._limits}
        #: Why the last hello of each key was rejected (over the limit, no common version).
        self._rejections: dict[str, str] = {}
        #: Messages dropped: from strangers, idle lines, or for lines not lent to the sender.
        self.stray_messages = 0
        self._context = zmq.Context()
        self._directory = PrivateDirectory()
        self._zap: ZapHandler | None = None
        self._sockets: list[zmq.Socket[bytes]] = []
        try:
            self._zap = ZapHandler(self._context, self.is_admitted)
            self._public = self._router()
            # A peer that vanished without closing (its host went down) is dropped by the
            # heartbeats, and its descriptor reported closed.
            serve_curve(self._public, listener, heartbeat_ms)
            self._public_monitor = self._public.get_monitor_socket(zmq.EVENT_DISCONNECTED)
            self._sockets.append(self._public_monitor)
            try:
                #: Where remote bots dial in (the port chosen, if the listener's was 0).
                self.endpoint = bind_tcp(self._public, listener.host, listener.port)
            except zmq.ZMQError as error:
                raise OSError(
                    f"cannot listen on {listener.host}:{listener.port}: {error}"
                ) from None
            self._local = self._router()
            self._local_monitor = self._local.get_monitor_socket(zmq.EVENT_DISCONNECTED)
            self._sockets.append(self._local_monitor)
            self.local_endpoint = f"ipc://{self._directory.path}/referee"
            self._local.bind(self.local_endpoint)
            self._wake = self._context.socket(zmq.PAIR)
            self._wake_in = self._context.socket(zmq.PAIR)
            self._sockets += [self._wake, self._wake_in]
            self._wake.bind(f"inproc://hub-wake-{id(self)}")
            self._wake_in.connect(f"inproc://hub-wake-{id(self)}")
        except BaseException:
            self._teardown()
            raise
        self._envelopes = Envelopes()
        self._lines: dict[bytes, _Line] = {}  # by the connection's identity
        self._by_line_id: dict[bytes, _Line] = {}
        self._descriptors: dict[tuple[int, int], Any] = {}  # (socket, fd) -> line or link
        self._links: dict[tuple[int, bytes], int | None] = {}  # link -> its descriptor
        self._waiting: deque[_Request] = deque()
        self._line_numbers = itertools.count(1)
        self._hub_id = 0
        self._stop = threading.Event()
        self._closing_reason = "tournament over"
        self._thread = threading.Thread(target=self._serve, name="remote-hub", daemon=True)
        self._thread.start()

    def _router(self) -> zmq.Socket[bytes]:
        socket = router(self._context, receive_queue=_QUEUE_LIMIT, send_queue=_QUEUE_LIMIT)
        self._sockets.append(socket)
        return socket

    # -- what the coordinator sees ---------------------------------------------------------

    def counts(self) -> dict[str, LineCounts]:
        """Each remote bot's lines (by public key), as of now."""
        with self._lock:
            return dict(self._counts)

    def rejection(self, key: str) -> str | None:
        """Why the last hello with ``key`` was rejected, if one was."""
        with self._lock:
            return self._rejections.get(key)

    def local_link(self) -> RemoteLink:
        """The link of a worker on this machine (ipc, in a directory of this user alone)."""
        return RemoteLink(self.local_endpoint)

    def tcp_link(self, host: str) -> RemoteLink:
        """The link of a worker on another machine, which reaches the listener at ``host``
        with the run's worker key."""
        port = self.endpoint.rsplit(":", 1)[1]
        host = f"[{host}]" if ":" in host and not host.startswith("[") else host
        return RemoteLink(
            f"tcp://{host}:{port}",
            self._listener.public_key,
            self._worker_public,
            self._worker_secret,
        )

    def close(self, reason: str = "tournament over") -> None:
        """Send every connected remote bot ``shutdown`` and stop listening; idempotent."""
        if self._stop.is_set():
            return
        self._closing_reason = reason
        self._stop.set()
        with contextlib.suppress(zmq.ZMQError):
            self._wake_in.send(b"", zmq.NOBLOCK)
        self._thread.join(_SHUTDOWN_CONFIRM_S + 5.0)
        self._teardown()

    def __enter__(self) -> RemoteHub:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _teardown(self) -> None:
        for socket in self._sockets:
            # The public socket may still hold the bots' shutdowns: a moment to send them.
            socket.close(500 if socket is getattr(self, "_public", None) else 0)
        if self._zap is not None:
            self._zap.stop()
        self._context.destroy(linger=0)
        self._directory.remove()

    def is_admitted(self, key: str) -> bool:
        """The ZAP check: a configured remote bot's key, or the worker key."""
        return key in self._limits or key == self._worker_public

    # -- the thread --------------------------------------------------------------------------

    def _serve(self) -> None:
        poller = zmq.Poller()
        for socket in (self._public, self._local, self._public_monitor, self._local_monitor):
            poller.register(socket, zmq.POLLIN)
        poller.register(self._wake, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                try:
                    self._turn(poller)
                except Exception:  # the thread's boundary: never die, and say why
                    _log.exception("remote bots' hub: unexpected error; carrying on")
                    time.sleep(_POLL_MS / 1000)
        finally:
            for line in list(self._lines.values()):
                with contextlib.suppress(zmq.ZMQError):
                    self._to_line(line, builders.shutdown(self._closing_reason), zmq.NOBLOCK)
            self._await_departures()

    def _await_departures(self) -> None:
        """Wait, up to :data:`_SHUTDOWN_CONFIRM_S`, for the bots told ``shutdown`` to close
        their connections (the monitor reports each): a shutdown is confirmed, not hoped
        for. Meanwhile a bot that dials in again is told anew (:meth:`_answer_while_closing`).
        Connections whose descriptor is unknown cannot be watched."""
        deadline = time.monotonic() + _SHUTDOWN_CONFIRM_S
        poller = zmq.Poller()
        poller.register(self._public_monitor, zmq.POLLIN)
        poller.register(self._public, zmq.POLLIN)
        while open_ones := self._still_open():
            left = deadline - time.monotonic()
            if left <= 0:
                _log.warning(
                    "remote bots' hub: %d connection(s) still open %.0f s after shutdown",
                    open_ones,
                    _SHUTDOWN_CONFIRM_S,
                )
                return
            try:
                ready = dict(poller.poll(min(_POLL_MS, int(left * 1000) + 1)))
                if self._public_monitor in ready:
                    self._read_monitor(self._public_monitor, self._public)
                if self._public in ready:
                    self._answer_while_closing()
            except zmq.ZMQError:
                return

    def _still_open(self) -> int:
        """How many connections told ``shutdown`` the hub can watch are still open."""
        lines = sum(line.descriptor is not None for line in self._lines.values())
        return lines + sum(isinstance(owner, _Departure) for owner in self._descriptors.values())

    def _answer_while_closing(self) -> None:
        """Read the public socket while closing: a remote bot's ``hello`` on a new connection
        (it dialled in again, maybe because its connection dropped before the shutdown
        reached it) is answered with ``shutdown`` once more, and that connection awaited too
        (SPEC section 5). Everything else is dropped: no match is played any more."""
        for _ in range(4 * _QUEUE_LIMIT):  # bounded, as _read
            if not cast(int, self._public.getsockopt(zmq.EVENTS)) & _POLLIN:
                return
            parts = self._public.recv_multipart(zmq.NOBLOCK, copy=False)
            identity = parts[0].bytes
            if identity in self._lines or authenticated_key(parts) not in self._limits:
                continue
            hello = read_hello(parts[1:])
            if not isinstance(hello, Hello):
                continue
            self._hub_id += 1
            payload = self._envelopes.repeated_shutdown(
                self._hub_id, hello, self.supported_versions, self._closing_reason
            )
            try:
                send_to(self._public, identity, payload, zmq.NOBLOCK)
            except zmq.ZMQError:
                continue
            descriptor = source_descriptor(parts[-1])
            if descriptor is not None:
                self._descriptors[(1, descriptor)] = _Departure(identity)

    def _turn(self, poller: zmq.Poller) -> None:
        """Wait a little for messages; handle them, expired leases and idle lines."""
        ready = dict(poller.poll(_POLL_MS))
        if self._public_monitor in ready:
            self._read_monitor(self._public_monitor, self._public)
        if self._local_monitor in ready:
            self._read_monitor(self._local_monitor, self._local)
        if self._public in ready:
            self._read(self._public)
        if self._local in ready:
            self._read(self._local)
        now = time.monotonic()
        self._expire(now)
        self._ping_idle(now)

    def _read(self, socket: zmq.Socket[bytes]) -> None:
        for _ in range(4 * _QUEUE_LIMIT):  # bounded: a flood cannot starve the other socket
            # Asking EVENTS is much cheaper than a receive that raises zmq.Again.
            if not cast(int, socket.getsockopt(zmq.EVENTS)) & _POLLIN:
                return
            parts = socket.recv_multipart(zmq.NOBLOCK, copy=False)
            identity = parts[0].bytes
            if socket is self._local:
                self._from_link((0, identity), parts)
                continue
            # Identities are the socket's own, one per connection: a known one needs no
            # look at the key it authenticated with.
            line = self._lines.get(identity)
            if line is not None:
                self._from_line(line, parts)
                continue
            user = authenticated_key(parts)
            if user == self._worker_public:
                self._from_link((1, identity), parts)
            else:
                self._stranger(identity, parts, user)

    def _read_monitor(self, monitor: zmq.Socket[bytes], socket: zmq.Socket[bytes]) -> None:
        """Connections that closed: a line is gone (its lessee told), a link's lines return."""
        which = 1 if socket is self._public else 0
        while True:
            try:
                frames = monitor.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(frames[0]) < _EVENT.size:
                continue
            event, descriptor = _EVENT.unpack_from(frames[0])
            if event != int(zmq.EVENT_DISCONNECTED):
                continue
            owner = self._descriptors.pop((which, descriptor), None)
            if isinstance(owner, _Line):
                self._drop_line(owner, "its connection closed")
            elif owner is not None and not isinstance(owner, _Departure):
                self._drop_link(owner)

    # -- remote bots -------------------------------------------------------------------------

    def _stranger(self, identity: bytes, parts: list[zmq.Frame], key: str) -> None:
        """A message from a connection that has not said hello: only a hello is read."""
        if key not in self._limits:
            self.stray_messages += 1
            return
        hello = read_hello(parts[1:])
        if not isinstance(hello, Hello):
            self.stray_messages += 1
            if hello is not None:  # a malformed hello
                self._reject(identity, hello)
            return
        chosen = agree_version(hello, self.supported_versions)
        if isinstance(chosen, Refusal):
            self._note_rejected(key, chosen.reason)
            self._reject(identity, chosen)
            return
        # Closed connections first: a bot that reconnected must not find its old line in
        # the way (the monitor reports a close before the new connection's hello arrives).
        self._read_monitor(self._public_monitor, self._public)
        limit = self._limits[key]
        lines = sum(1 for line in self._lines.values() if line.key == key)
        if lines >= 2 * limit:
            reason = (
                f"this key has {lines} connections already: it may play on {limit} at once "
                f"(connections: {limit}) and keep as many spare"
            )
            self._note_rejected(key, reason)
            self._reject(identity, Refusal(hello.id, RejectCode.AUTH, reason))
            return
        line = _Line(
            line_id=b"L%d" % next(self._line_numbers),
            identity=identity,
            key=key,
            descriptor=source_descriptor(parts[-1]),
            protocol=chosen,
            hello=parts[1].bytes,
            next_id=0,
        )
        self._lines[identity] = line
        self._by_line_id[line.line_id] = line
        if line.descriptor is not None:
            self._descriptors[(1, line.descriptor)] = line
        self._recount(key)  # before the welcome: whoever sees it sees the line counted
        try:
            self._to_line(line, welcome(hello, chosen, self.heartbeat_ms), zmq.NOBLOCK)
        except zmq.ZMQError:
            self._drop_line(line, "gone before its welcome")
            return
        self._serve_waiting()

    def _note_rejected(self, key: str, reason: str) -> None:
        with self._lock:
            self._rejections[key] = reason

    def _reject(self, identity: bytes, refusal: Refusal) -> None:
        self._hub_id += 1
        payload = self._envelopes.rejection(self._hub_id, refusal, self.supported_versions)
        with contextlib.suppress(zmq.ZMQError):
            send_to(self._public, identity, payload, zmq.NOBLOCK)

    def _to_line(self, line: _Line, message: dict[str, Any], flags: int = 0) -> None:
        """Send the hub's own message (welcome, ping, shutdown) on a line."""
        line.next_id += 1
        send_to(
            self._public,
            line.identity,
            self._envelopes.pack(line.protocol, line.next_id, message),
            flags,
        )
        line.last_sent = time.monotonic()

    def _from_line(self, line: _Line, parts: list[zmq.Frame]) -> None:
        if line.lessee is None:
            # Idle: pongs to the hub's pings, late answers; nothing to decode.
            return
        # A bot that floods its worker loses messages here (the worker judges the flood),
        # never the worker's link.
        self._to_link(line.lessee, [line.line_id, *(part.bytes for part in parts[1:])])

    def _ping_idle(self, now: float) -> None:
        interval = self.heartbeat_ms / 1000
        for line in list(self._lines.values()):
            if line.lessee is None and now - line.last_sent >= interval:
                try:
                    self._to_line(line, builders.ping(), zmq.NOBLOCK)
                except zmq.ZMQError:
                    self._drop_line(line, "its connection is gone")

    def _drop_line(self, line: _Line, reason: str) -> None:
        if self._lines.get(line.identity) is not line:
            return
        del self._lines[line.identity]
        del self._by_line_id[line.line_id]
        if line.descriptor is not None and self._descriptors.get((1, line.descriptor)) is line:
            del self._descriptors[(1, line.descriptor)]
        if line.lessee is not None:
            self._to_link(line.lessee, [b"", b"gone", line.line_id, reason.encode()])
        self._recount(line.key)
        self._serve_waiting()

    def _recount(self, key: str) -> None:
        lines = [line for line in self._lines.values() if line.key == key]
        counts = LineCounts(len(lines), sum(line.lessee is not None for line in lines))
        with self._lock:
            self._counts[key] = counts

    # -- workers -----------------------------------------------------------------------------

    def _from_link(self, link: tuple[int, bytes], parts: list[zmq.Frame]) -> None:
        if link not in self._links:
            descriptor = source_descriptor(parts[-1])
            self._links[link] = descriptor
            if descriptor is not None:
                self._descriptors[(link[0], descriptor)] = link
        if len(parts) < 2:
            return
        head = parts[1].bytes
        if head:
            line = self._by_line_id.get(head)
            if line is None or line.lessee != link:
                self.stray_messages += 1
                return
            line.forwarded += 1
            try:
                self._public.send_multipart(
                    [line.identity, *(part.bytes for part in parts[2:])], zmq.NOBLOCK
                )
            except zmq.ZMQError:
                self._drop_line(line, "its connection is gone")
            return
        command = [part.bytes for part in parts[2:]]
        if not command:
            return
        name, arguments = command[0], command[1:]
        try:
            self._command(link, name, arguments)
        except ValueError:  # not a number where one belongs: a broken worker's, ignored
            self.stray_messages += 1

    def _command(self, link: tuple[int, bytes], name: bytes, arguments: list[bytes]) -> None:
        if name == b"lease" and len(arguments) == 4:
            now = time.monotonic()
            request = _Request(
                link,
                arguments[0],
                arguments[1].decode(errors="replace"),
                now + int(arguments[2]) / 1000,
                now + int(arguments[3]) / 1000,
            )
            if not self._grant(request):
                self._waiting.append(request)
        elif name == b"cancel" and len(arguments) == 1:
            self._waiting = deque(
                waiting
                for waiting in self._waiting
                if (waiting.link, waiting.request) != (link, arguments[0])
            )
        elif name == b"release" and len(arguments) == 2:
            line = self._by_line_id.get(arguments[0])
            if line is not None and line.lessee == link:
                line.next_id = max(line.next_id + line.forwarded, int(arguments[1]))
                self._return(line)

    def _grant(self, request: _Request) -> bool:
        """Lend a free line of the bot to the request; False if none is free."""
        limit = self._limits.get(request.key, 0)
        lines = [line for line in self._lines.values() if line.key == request.key]
        if sum(line.lessee is not None for line in lines) >= limit:
            return False
        free = [line for line in lines if line.lessee is None]
        if not free:
            return False
        line = min(free, key=lambda candidate: candidate.lent_at)
        line.lessee = request.link
        line.lent_at = time.monotonic()
        line.forwarded = 0
        granted = self._to_link(
            request.link,
            [
                b"",
                b"leased",
                request.request,
                line.line_id,
                line.protocol.encode(),
                b"%d" % line.next_id,
                line.hello,
            ],
        )
        if not granted:
            line.lessee = None
            return True  # nobody to lend it to: the request is done with
        self._recount(line.key)
        return True

    def _return(self, line: _Line) -> None:
        line.lessee = None
        line.last_sent = 0.0  # pinged at once: late answers of the match are then behind it
        self._recount(line.key)
        self._serve_waiting()

    def _reclaim(self, line: _Line) -> None:
        line.next_id += line.forwarded
        self._return(line)

    def _serve_waiting(self) -> None:
        if not self._waiting:
            return
        self._waiting = deque(request for request in self._waiting if not self._grant(request))

    def _expire(self, now: float) -> None:
        if not self._waiting:
            return
        kept: deque[_Request] = deque()
        for request in self._waiting:
            connected = any(line.key == request.key for line in self._lines.values())
            deadline = request.busy_deadline if connected else request.absent_deadline
            if now < deadline:
                kept.append(request)
                continue
            reason = "every connection of it was busy" if connected else "it was not connected"
            self._to_link(request.link, [b"", b"absent", request.request, reason.encode()])
        self._waiting = kept

    def _to_link(self, link: tuple[int, bytes], frames: list[bytes]) -> bool:
        """Send to a worker; False if it could not be sent (a link that is gone is dropped,
        one that does not read loses the message)."""
        socket = self._local if link[0] == 0 else self._public
        try:
            socket.send_multipart([link[1], *frames], zmq.NOBLOCK)
        except zmq.ZMQError as error:
            if error.errno != zmq.EAGAIN:
                self._drop_link(link)
            return False
        return True

    def _drop_link(self, link: tuple[int, bytes]) -> None:
        """A worker is gone: its lines come back (the bots may still answer, late)."""
        descriptor = self._links.pop(link, None)
        if descriptor is not None:
            self._descriptors.pop((link[0], descriptor), None)
        self._waiting = deque(request for request in self._waiting if request.link != link)
        for line in list(self._lines.values()):
            if line.lessee == link:
                self._reclaim(line)
