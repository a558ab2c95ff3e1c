"""The referee's end of the protocol: the bots' sessions, their handshake, and bounded
request/reply exchanges with each connected bot.

Every wait here is bounded, every bot failure becomes a :class:`~referee.faults.Fault`, and
messages that arrive late or from strangers are discarded, never raised.

The server stands on :mod:`referee.edge` (its sockets, CurveZMQ, the envelope, what a hello
is and how it is answered), :mod:`referee.peers` (which connection and process a message came
from), :mod:`referee.session` (one bot's state) and :mod:`referee.hub_link` (remote bots lent
by a tournament's hub).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import os
import re
import resource
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import zmq

from protocol import builders
from protocol.codec import (
    BOT_MESSAGE_DEPTH,
    MAX_MESSAGE_BYTES,
    check_act,
    decode_map,
    validate_bot_message,
)
from protocol.codes import ErrorCode, RejectCode
from protocol.errors import ProtocolError, quoted
from protocol.messages import MAX_ID, Hello
from protocol.version import PROTOCOL_VERSION, SUPPORTED_VERSIONS
from referee import peers
from referee.bots import BotProcess, BotSpec, LogBudget
from referee.cpu_clock import CpuMeter
from referee.edge import (
    Envelopes,
    Refusal,
    ZapHandler,
    agree_version,
    authenticated_key,
    read_hello,
    router,
    send_to,
    sender_pid,
    serve_curve,
    source_descriptor,
    welcome,
)
from referee.faults import Fault, FaultKind
from referee.hub_link import HubLink
from referee.listeners import RemoteLink, RemoteListener, bind_tcp
from referee.rundir import PrivateDirectory, remove_stale_directories
from referee.sandbox import SandboxPlan
from referee.session import BotSession

__all__ = ["BotServer", "Reply"]

_log = logging.getLogger(__name__)

#: Messages queued per peer before ZeroMQ stops reading from it: bounds a flooding bot.
_QUEUE_LIMIT = 64
#: Outgoing messages queued per peer. The referee has at most one request open per bot, but
#: ZeroMQ returns send credit in batches, so a small limit makes a ROUTER refuse sends to a
#: peer that reads promptly (seen at 64: 1.5 % of sends in a tight request/reply loop).
_SEND_QUEUE_LIMIT = 1000
#: How long a send may wait for queue room before the peer counts as disconnected.
_SEND_TIMEOUT_MS = 500
#: Messages a bot may send between two requests to it besides its answers (a correct bot sends
#: none). Beyond this it is flooding: the referee notes a fault and drops the rest undecoded,
#: so its memory and time stay bounded (at most this many messages of up to 64 KiB are held).
_UNASKED_LIMIT = 16
#: Unanswered requests remembered per bot, so that a late answer is told from a wrong one.
_AWAITED_LIMIT = 1024
#: How long closing the remote socket may take to send what it holds (bots' shutdowns).
_SHUTDOWN_LINGER_MS = 1000
#: How long a remote bot told ``shutdown`` has to close its connection before the referee
#: closes its own anyway: the protocol's one second to exit, and room for a busy machine.
_SHUTDOWN_CONFIRM_S = 10.0
#: Largest message read from a bot that is not being asked; anything longer is not decoded.
_UNASKED_MESSAGE_BYTES = 4096
#: What a bot's last output says when an allocation failed under an rlimit (no cgroup).
_OUT_OF_MEMORY = re.compile(r"MemoryError|bad_alloc|[Oo]ut of memory|Cannot allocate memory")
_POLL_SLICE = 0.05  # seconds between liveness checks of a bot process while waiting
#: Seconds a bot whose connection dropped has to exit before it counts as disconnected rather
#: than crashed (the kernel closes a dying process's sockets before it can be reaped).
_EXIT_GRACE = 0.3
#: Peers whose process ancestry is remembered (to tell which bot sent a bad hello).
_SENDER_CACHE_LIMIT = 256
#: The folder of the log-cap ledgers, in a server's ``log_budget_dir``.
_LEDGERS = ".log-budget"
# Plain ints: combining pyzmq's enum flags costs a microsecond per operation on the hot path.
_NOBLOCK = int(zmq.NOBLOCK)
_EVENTS = int(zmq.EVENTS)
_POLLIN = int(zmq.POLLIN)


@dataclass(frozen=True, slots=True)
class Reply:
    """A valid reply and how long it took, in milliseconds."""

    message: dict[str, Any]
    elapsed_ms: float
    #: The CPU time charged, ms, under the CPU clock (None under the wall clock).
    charged_ms: float | None = None
    #: How long the machine kept the bot from running while it thought, ms (CPU clock).
    stall_ms: float = 0.0


class BotServer:
    """Owns the referee's ROUTER socket. Each started bot gets an ipc endpoint of its own in
    a private temporary directory, bound for it alone (and, sandboxed, visible in its
    sandbox alone). Remote bots dial in to a second, CurveZMQ listener (``remote``), or are
    lent by a tournament's hub (``remote_link``).

    ``sandbox``: how bots are started (:func:`referee.sandbox.plan_sandbox`); default:
    unsandboxed. With the sandbox's ``freeze_opponent``, a bot is frozen while another bot
    of this server is being asked for something.
    """

    def __init__(
        self,
        *,
        heartbeat_ms: int = 5000,
        log_dir: Path | None = None,
        remote: RemoteListener | None = None,
        supported_versions: Sequence[str] = SUPPORTED_VERSIONS,
        sandbox: SandboxPlan | None = None,
        remote_link: RemoteLink | None = None,
        log_budget_dir: Path | None = None,
    ) -> None:
        """``log_dir``: where each started bot's output goes, ``<name>.log``;
        ``log_budget_dir``: where the ledgers of the bots' log caps are kept, to share them
        with other servers of the same run (the worker processes of a tournament); by
        default each bot's cap is counted over this server's processes of it."""
        self.heartbeat_ms = heartbeat_ms
        self.sandbox = sandbox or SandboxPlan(False, problem="not requested")
        self._freezing = self.sandbox.enabled and self.sandbox.freeze_opponent
        #: The session last asked for something: the one left running while others freeze.
        self._focus: BotSession | None = None
        self._endpoint_numbers = itertools.count(1)
        #: The protocol versions this server accepts in a hello and names in a reject; only a
        #: conformance check offers others (to see a bot handle a version it cannot speak).
        self.supported_versions = tuple(supported_versions)
        self.log_dir = log_dir
        self.log_budget_dir = log_budget_dir
        #: Each bot's log budget, by name: one for all its processes.
        self._log_budgets: dict[str, LogBudget] = {}
        remove_stale_directories()  # those of referees killed before they could
        _raise_file_limit()
        self._dir = PrivateDirectory()
        #: The private directory holding every bot's endpoint.
        self.directory = self._dir.path
        self._context = zmq.Context()
        try:
            self._socket = self._router()
        except BaseException:
            self._context.destroy(linger=0)
            self._dir.remove()
            raise
        self._receive_timeout_ms = -1
        #: The session a request is waiting for, if any: only it may send large messages.
        self._asking: BotSession | None = None
        self._envelopes = Envelopes()
        self._by_identity: dict[bytes, BotSession] = {}
        self._awaiting: dict[str, BotSession] = {}
        # Remote bots: a second ROUTER on tcp with CurveZMQ; a ZAP handler admits only the
        # public keys of remote bots the referee expects. Identities of the two sockets live
        # in separate tables, so a local peer can never pose as a remote one.
        self.remote_endpoint: str | None = None
        self._remote_socket: zmq.Socket[bytes] | None = None
        self._zap: ZapHandler | None = None
        self._by_remote_identity: dict[bytes, BotSession] = {}
        self._awaiting_keys: dict[str, BotSession] = {}
        #: Remote bots told ``shutdown``, by key: the reason, told again to a bot that dials
        #: in anew before its old connection closed (it did not get the first).
        self._departing_keys: dict[str, str] = {}
        self._poller: zmq.Poller | None = None
        self._closed = False
        #: Remote bots reached through a tournament's hub instead (``remote_link``).
        self._hub: HubLink | None = None
        if remote is not None or remote_link is not None:
            try:
                if remote_link is not None:
                    self._hub = HubLink(self._context, remote_link, self._by_remote_identity)
                    self._poll_remote(self._hub.socket)
                else:
                    assert remote is not None
                    self._listen_remote(remote)
            except BaseException:
                self.close()  # the context, the ZAP handler's thread and the directory
                raise
        self._next_id = 0
        self.stray_messages = 0
        #: The connections of remote bots told ``shutdown`` that have yet to close.
        self._departures: list[peers.Connection] = []
        #: The pid and ancestors of recent strangers' processes, by connection.
        self._senders: dict[bytes, tuple[int, ...]] = {}

    def _router(self) -> zmq.Socket[bytes]:
        return router(
            self._context,
            receive_queue=_QUEUE_LIMIT,
            send_queue=_SEND_QUEUE_LIMIT,
            send_timeout_ms=_SEND_TIMEOUT_MS,
        )

    def _listen_remote(self, remote: RemoteListener) -> None:
        self._zap = ZapHandler(self._context, self._admits_key)
        socket = self._router()
        try:
            serve_curve(socket, remote, self.heartbeat_ms)
            self.remote_endpoint = bind_tcp(socket, remote.host, remote.port)
        except BaseException:
            socket.close(0)  # else closing the context would wait for it forever
            raise
        self._poll_remote(socket)

    def _poll_remote(self, socket: zmq.Socket[bytes]) -> None:
        """Read remote bots' messages from ``socket`` too (the listener, or the hub link)."""
        self._remote_socket = socket
        self._poller = zmq.Poller()
        self._poller.register(self._socket, zmq.POLLIN)
        self._poller.register(socket, zmq.POLLIN)

    def _admits_key(self, key: str) -> bool:
        """The ZAP check (on the handler's thread): a remote bot with the public key ``key``
        is expected or connected."""
        if key in self._awaiting_keys or key in self._departing_keys:
            return True
        return any(
            session.spec.curve_public_key == key
            for session in list(self._by_remote_identity.values())
        )

    @property
    def links_remote(self) -> bool:
        """True when remote bots are lent by a tournament's hub, one match at a time."""
        return self._hub is not None

    def expect_remote(
        self, spec: BotSpec, *, absent_wait_s: float = 0.0, busy_wait_s: float = 0.0
    ) -> BotSession:
        """Admit the remote bot with ``spec.curve_public_key``; it must dial in and say hello
        (see :meth:`handshake`). Through a hub, ask for one of its connections instead,
        waiting up to ``absent_wait_s`` if it has none, ``busy_wait_s`` if all are busy."""
        if self._hub is not None and spec.curve_public_key is not None:
            return self._hub.lease(spec, absent_wait_s=absent_wait_s, busy_wait_s=busy_wait_s)
        if self._remote_socket is None or spec.curve_public_key is None:
            session = BotSession(spec=spec, token="", remote=True)
            session.closed = True
            session.handshake_fault = Fault(
                FaultKind.HANDSHAKE,
                -1,
                spec.name,
                "a remote bot needs a public key and a referee listening on tcp with CurveZMQ",
            )
            return session
        session = BotSession(spec=spec, token="", remote=True)
        self._awaiting_keys[spec.curve_public_key] = session
        self._departing_keys.pop(spec.curve_public_key, None)  # welcome again
        return session

    # -- lifecycle ---------------------------------------------------------------------------

    def start_bot(self, spec: BotSpec, *, extra_env: dict[str, str] | None = None) -> BotSession:
        """Start a bot's process; it must then say hello (see :meth:`handshake`)."""
        session = BotSession(spec=spec, token=secrets.token_hex(16))
        log_path = None
        if self.log_dir is not None:
            with contextlib.suppress(OSError):  # then the log is lost, not the match
                self.log_dir.mkdir(parents=True, exist_ok=True)
            log_path = self.log_dir / log_file_name(spec.name)
            session.log_path = log_path
        # An endpoint for this bot alone: in its sandbox it sees no other bot's.
        socket_path = f"{self._dir.path}/bot-{next(self._endpoint_numbers)}"
        endpoint = f"ipc://{socket_path}"
        try:
            self._socket.bind(endpoint)
        except zmq.ZMQError as error:
            session.handshake_fault = Fault(
                FaultKind.CRASH, -1, spec.name, f"could not bind an endpoint for it: {error}"
            )
            session.closed = True
            return session
        session.endpoint = endpoint
        try:
            session.process = BotProcess(
                spec,
                endpoint=endpoint,
                token=session.token,
                log_path=log_path,
                extra_env=extra_env,
                sandbox=self.sandbox,
                socket_path=socket_path,
                log_budget=self._log_budget(spec),
            )
        except OSError as error:
            self._release_endpoint(session)
            session.handshake_fault = Fault(
                FaultKind.CRASH, -1, spec.name, f"could not start {spec.command[0]!r}: {error}"
            )
            session.closed = True
            return session
        self._awaiting[session.token] = session
        return session

    def _log_budget(self, spec: BotSpec) -> LogBudget:
        """The bot's log budget, shared by all its processes (and, with a
        ``log_budget_dir``, with other servers)."""
        budget = self._log_budgets.get(spec.name)
        if budget is None:
            ledger = None
            if self.log_budget_dir is not None:
                ledger = self.log_budget_dir / _LEDGERS / f"{_safe_name(spec.name)}.bytes"
            budget = LogBudget(spec.limits.log_bytes, ledger)
            self._log_budgets[spec.name] = budget
        return budget

    def handshake(self, session: BotSession, timeout_s: float) -> Fault | None:
        """Wait for the bot's valid ``hello``; None on success, else the fault."""
        deadline = time.monotonic() + timeout_s
        while session.identity is None and session.handshake_fault is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                session.handshake_fault = self._memory_crash(
                    session, "before a valid hello"
                ) or session.fault(
                    FaultKind.HANDSHAKE,
                    f"no valid hello within {timeout_s * 1000:.0f} ms",
                )
                break
            if session.exited():
                memory = self._memory_crash(session, "before a valid hello")
                crash = memory or self._crash_fault(session, "before a valid hello")
                # Killed over its memory limit, it is a crash however early (the limit is
                # the bot's to keep); otherwise a bot that never said hello.
                session.handshake_fault = memory or dataclasses.replace(
                    crash, kind=FaultKind.HANDSHAKE
                )
                break
            self._pump(min(remaining, _POLL_SLICE))
        self._awaiting.pop(session.token, None)
        if session.spec.curve_public_key is not None:
            self._awaiting_keys.pop(session.spec.curve_public_key, None)
        if session.lease is not None and session.identity is None:
            self._end_lease(session)
        fault = session.handshake_fault
        if fault is not None and session.rejected_hellos:
            fault = dataclasses.replace(
                fault,
                detail=f"{fault.detail}; meanwhile {session.rejected_hellos} hello(s) from its "
                "process with an unknown token were rejected",
            )
            session.handshake_fault = fault
        return fault

    def stop_bot(self, session: BotSession, reason: str = "done", grace: float = 1.0) -> None:
        """Send ``shutdown`` (if connected), then make sure the process group is gone."""
        self.stop_bots([session], reason, grace)

    def stop_bots(
        self, sessions: Sequence[BotSession], reason: str = "done", grace: float = 1.0
    ) -> None:
        """:meth:`stop_bot` for several bots at once: every one is told first, so they all
        exit in the same grace period. A remote bot's shutdown is confirmed: its connection
        must close (the bot exits), within a bound."""
        departing: list[peers.Connection] = []
        for session in sessions:
            # A lent remote bot is given back, never shut down: the tournament goes on.
            if session.connected and session.lease is None:
                with contextlib.suppress(_SendError):
                    self._send(session, builders.shutdown(reason))
                    key = session.spec.curve_public_key
                    if session.remote and key is not None and session.connection is not None:
                        self._departing_keys[key] = reason
                        departing.append(session.connection)
            self.forget(session)
        for session in sessions:
            if session.process is not None:
                session.process.stop(grace)
            self._release_endpoint(session)
        if departing:
            self._await_departures(departing)

    def _await_departures(self, connections: list[peers.Connection]) -> None:
        """Wait, up to :data:`_SHUTDOWN_CONFIRM_S`, for remote bots told ``shutdown`` to close
        their connections, reading meanwhile: a bot whose connection dropped before the
        shutdown reached it dials in again, and is told anew (:meth:`_stranger`)."""
        self._departures = connections
        deadline = time.monotonic() + _SHUTDOWN_CONFIRM_S
        try:
            while any(not peers.is_dropped(connection) for connection in self._departures):
                left = deadline - time.monotonic()
                if left <= 0:
                    _log.warning(
                        "remote bot(s) told to shut down still connected after %.0f s",
                        _SHUTDOWN_CONFIRM_S,
                    )
                    return
                self._pump(min(left, _POLL_SLICE))
        finally:
            self._departures = []

    @staticmethod
    def _close_endpoint(session: BotSession) -> None:
        """Once a bot is connected, its socket file admits no one else (mode 0: the
        connection made stays): every connection costs the referee a descriptor, and a bot
        opening thousands could exhaust them. Sandboxed, the bot sees the file through a
        read-only mount and cannot change it back."""
        if session.endpoint is not None:
            with contextlib.suppress(OSError):
                os.chmod(session.endpoint.removeprefix("ipc://"), 0)

    def _release_endpoint(self, session: BotSession) -> None:
        """Unbind a stopped bot's endpoint (after its process is gone: unbinding first could
        drop the shutdown it is reading)."""
        if session.endpoint is not None and not self._closed:
            with contextlib.suppress(zmq.ZMQError):
                self._socket.unbind(session.endpoint)
            with contextlib.suppress(OSError):
                os.unlink(session.endpoint.removeprefix("ipc://"))
        session.endpoint = None

    def forget(self, session: BotSession) -> None:
        """Drop a session without a word to its peer (its process, if any, is left alone): a
        remote bot whose connection is gone may dial in again when :meth:`expect_remote`
        admits its key anew."""
        if session.lease is not None:
            self._end_lease(session)
        session.closed = True
        if self._focus is session:
            self._focus = None
        if session.identity is not None:
            table = self._by_remote_identity if session.remote else self._by_identity
            table.pop(session.identity, None)
        self._awaiting.pop(session.token, None)
        key = session.spec.curve_public_key
        if key is not None and self._awaiting_keys.get(key) is session:
            del self._awaiting_keys[key]

    def _end_lease(self, session: BotSession) -> None:
        """Give a lent remote bot's line back to the hub (or cancel the lease asked for)."""
        if self._hub is not None:
            self._hub.end(session)

    def close(self) -> None:
        """Close the socket and remove the private directory; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._socket.close(0)
        if self._remote_socket is not None:
            # It may still hold the remote bots' shutdowns (sent on ZeroMQ's own thread): a
            # moment to send them, else a bot that reconnects when its connection drops
            # would dial a closed port for ever.
            self._remote_socket.close(_SHUTDOWN_LINGER_MS)
        if self._zap is not None:
            self._zap.stop()
        self._context.destroy(linger=0)  # closes any socket left behind by a failure
        self._dir.remove()

    def __enter__(self) -> BotServer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- messaging ---------------------------------------------------------------------------

    def notify(self, session: BotSession, message: dict[str, Any]) -> Fault | None:
        """Send a message that expects no answer."""
        try:
            self._send(session, message)
        except _SendError as failure:
            return self._memory_crash(session, "as a message was sent") or session.fault(
                FaultKind.DISCONNECT, str(failure)
            )
        return None

    def cpu_clocked(self, session: BotSession) -> bool:
        """Whether ``session``'s decisions can be charged CPU time: a bot this server
        started, in a cgroup that counts its CPU time and can be frozen."""
        process = session.process
        return process is not None and process.cgroup is not None and process.cgroup.counts_cpu

    def request(
        self,
        session: BotSession,
        message: dict[str, Any],
        reply_type: str,
        timeout_s: float,
        *,
        cpu_ms: float | None = None,
        backstop: float = 3.0,
    ) -> Reply | Fault:
        """Send a request and wait up to ``timeout_s`` for its reply of type ``reply_type``.

        ``cpu_ms``: charge the bot CPU time instead (:mod:`referee.cpu_clock`), if
        :meth:`cpu_clocked`: it may use that many CPU ms, and ``backstop`` times as many ms
        of wall time; it stays frozen after its answer until it is asked again.

        With ``reply_type`` ``"error"`` the request is one a bot must refuse (a message of an
        unknown type, say): its ``error`` is then the expected reply, not a fault.
        """
        if session.pending_fault is not None:
            return session.pending_fault
        if peers.is_dropped(session.connection):
            return self._lost(session, f"before {reply_type} was asked for")
        meter = None
        if cpu_ms is not None and self.cpu_clocked(session):
            assert session.process is not None
            assert session.process.cgroup is not None
            meter = CpuMeter.start(session.process.cgroup, cpu_ms, backstop)
        previous = self._focus
        # Before the clock starts: neither is this bot's time. (The CPU clock leaves a bot
        # frozen after its answer; so does a freeze while its opponent thought.)
        self._thaw(session)
        if previous is not session:
            self._focus = session
            if self._freezing and previous is not None:
                # While this one thinks, the one asked before gets no CPU, so a bot that
                # spins between its turns cannot slow its opponent.
                self._freeze(previous)
        started = time.monotonic()
        if meter is not None:
            meter.started = started
        try:
            request_id = self._send(session, message)
        except _SendError as failure:
            return self._memory_crash(
                session, f"before {reply_type} was asked for"
            ) or session.fault(FaultKind.DISCONNECT, str(failure))
        session.unasked = 0
        awaited = session.awaited
        awaited.add(request_id)
        if len(awaited) > _AWAITED_LIMIT:
            awaited.discard(min(awaited))
        self._asking = session
        try:
            return self._await_reply(session, request_id, reply_type, started, timeout_s, meter)
        finally:
            self._asking = None

    def _await_reply(
        self,
        session: BotSession,
        request_id: int,
        reply_type: str,
        started: float,
        timeout_s: float,
        meter: CpuMeter | None,
    ) -> Reply | Fault:
        deadline = started + timeout_s
        while True:
            while session.inbox:
                reply = session.inbox.popleft()
                outcome = self._match_reply(session, reply, request_id, reply_type)
                if outcome is not None:
                    if isinstance(outcome, Fault):
                        return outcome
                    elapsed_ms = (time.monotonic() - started) * 1000
                    if meter is None:
                        return Reply(outcome, elapsed_ms)
                    reading = meter.settle()
                    if reading.over is not None:
                        return session.fault(FaultKind.TIMEOUT, reading.over)
                    return Reply(outcome, elapsed_ms, reading.charged_ms, reading.stall_ms)
            pending = _pending_fault(session)  # set by _pump for messages between turns
            if pending is not None:
                return pending
            now = time.monotonic()
            over: str | None = None
            if meter is not None:
                stop, wait = meter.look(now)
                if stop is not None:
                    over = stop.over or "over its CPU time"
            elif now >= deadline:
                over = f"no {reply_type} within {timeout_s * 1000:.0f} ms"
            else:
                wait = min(deadline - now, _POLL_SLICE)
            if over is not None:
                # Silent because the kernel killed (part of) it for its memory: a crash.
                return self._memory_crash(
                    session, f"while {reply_type} was awaited"
                ) or session.fault(FaultKind.TIMEOUT, over)
            # Check the process only when nothing arrived: waitpid on every reply is costly.
            # One message at a time: the reply is usually the first, and asking whether more
            # are waiting costs as much as reading one.
            pumped = self._pump(wait, read_all=False)
            if meter is not None:
                meter.waited(wait, time.monotonic() - now)
            if not pumped:
                if session.exited():
                    return self._crash_fault(session, f"while {reply_type} was awaited")
                if peers.is_dropped(session.connection):
                    return self._lost(session, f"while {reply_type} was awaited")

    @staticmethod
    def _thaw(session: BotSession) -> None:
        if session.process is not None:
            session.process.freeze(False)

    @staticmethod
    def _freeze(session: BotSession) -> None:
        if session.process is not None and not session.closed:
            session.process.freeze(True)

    def thaw_all(self, sessions: Sequence[BotSession]) -> None:
        """Let every one of ``sessions`` run again (at the end of a match, say)."""
        for session in sessions:
            self._thaw(session)
        if self._focus in sessions:
            self._focus = None

    def still_connected(self, session: BotSession) -> bool:
        """Whether a remote bot's connection is still open: a ``ping`` is sent to find out
        (sending to a closed connection fails at once)."""
        if session.identity is None or self._remote_socket is None:
            return False
        payload = self._envelopes.pack(
            session.protocol or PROTOCOL_VERSION, session.next_id + 1, builders.ping()
        )
        try:
            send_to(self._remote_socket, session.identity, payload, _NOBLOCK)
        except zmq.ZMQError as error:
            return error.errno == zmq.EAGAIN  # not reading, but there
        session.next_id += 1
        return True

    def drain(self, timeout_s: float = 0.0) -> None:
        """Read whatever is waiting (faults between turns are noticed this way)."""
        self._pump(timeout_s)

    # -- internals ---------------------------------------------------------------------------

    def _match_reply(
        self, session: BotSession, reply: dict[str, Any], request_id: int, reply_type: str
    ) -> dict[str, Any] | Fault | None:
        kind = reply.get("type")
        reply_to = reply.get("reply_to")
        # An answer to a request sent and not yet answered (_dispatch noted it as such).
        answered = type(reply_to) is int and reply_to in session.answered
        if answered:
            session.answered.discard(reply_to)
        if kind == "error":
            if reply_to == request_id and reply_type == "error":
                try:
                    validate_bot_message(reply)
                except ProtocolError as error:
                    return self._malformed(session, reply, str(error))
                return reply
            if reply_to == request_id:
                return session.fault(
                    FaultKind.BOT_ERROR,
                    f"bot answered with error {quoted(reply.get('code'))}: "
                    f"{str(reply.get('message'))[:300]}",
                )
            session.counters["bot_errors_ignored"] += 1
            return None
        if kind == "hello":
            return self._malformed(session, reply, "a second hello on one connection")
        if not isinstance(reply_to, int) or isinstance(reply_to, bool):
            return self._malformed(session, reply, f"{quoted(kind)} without an integer reply_to")
        if reply_to == request_id:
            if kind != reply_type:
                return self._malformed(
                    session,
                    reply,
                    f"answered request {request_id} with {quoted(kind)}, expected {reply_type!r}",
                )
            try:
                if kind == "act":
                    check_act(reply)
                else:
                    validate_bot_message(reply)
            except ProtocolError as error:
                return self._malformed(session, reply, str(error))
            return reply
        if answered:
            session.counters["late_replies"] += 1  # a reply to a request that timed out
            return None
        self._send_error(
            session, reply, ErrorCode.WRONG_REPLY_ID, f"no request {reply_to} awaits an answer"
        )
        return session.fault(
            FaultKind.WRONG_REPLY_ID,
            f"reply_to {reply_to} names no request awaiting an answer (never sent, not a "
            f"request, or answered already; the open request is {request_id})",
        )

    def _pump(self, timeout_s: float, *, read_all: bool = True) -> bool:
        """Wait up to ``timeout_s`` for messages and dispatch the first, then (``read_all``)
        every other one waiting; return whether any arrived."""
        if self._poller is not None:
            return self._pump_both(timeout_s)
        socket = self._socket
        # A blocking receive with a timeout costs far less than building a poller per call.
        timeout_ms = max(0, int(timeout_s * 1000))
        if timeout_ms != self._receive_timeout_ms:
            socket.setsockopt(zmq.RCVTIMEO, timeout_ms)
            self._receive_timeout_ms = timeout_ms
        try:
            frames, last = _receive(socket, 0)
        except zmq.Again:
            return False
        self._dispatch(frames, last=last)
        if read_all:
            for _ in range(4 * _QUEUE_LIMIT):  # bounded: a flood cannot starve the caller
                # Asking EVENTS is much cheaper than a NOBLOCK receive that raises zmq.Again.
                if not cast(int, socket.getsockopt(_EVENTS)) & _POLLIN:
                    break
                frames, last = _receive(socket, zmq.NOBLOCK)
                self._dispatch(frames, last=last)
        return True

    def _pump_both(self, timeout_s: float) -> bool:
        """The same over the local and the remote socket (only when remote bots are enabled)."""
        assert self._poller is not None
        assert self._remote_socket is not None
        ready = dict(self._poller.poll(max(0, int(timeout_s * 1000))))
        if not ready:
            return False
        for _ in range(4 * _QUEUE_LIMIT):
            if self._socket in ready:
                try:
                    local = self._socket.recv_multipart(zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    ready.pop(self._socket)
                else:
                    self._dispatch([part.bytes for part in local], last=local[-1])
            if self._remote_socket in ready:
                try:
                    parts = self._remote_socket.recv_multipart(zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    ready.pop(self._remote_socket)
                else:
                    if self._hub is not None:
                        self._from_link([part.bytes for part in parts])
                        continue
                    self._dispatch(
                        [part.bytes for part in parts],
                        remote_user=authenticated_key(parts),
                        last=parts[-1],
                    )
            if not ready:
                break
        return True

    def _from_link(self, frames: list[bytes]) -> None:
        """A message from the hub: a lent bot's (``[line, payload]``) or the hub's own."""
        assert self._hub is not None
        if self._hub.read(frames):
            return
        if frames[0] in self._by_remote_identity:
            self._dispatch(frames, remote_user="")
        else:
            self.stray_messages += 1  # a line given back: a late answer

    def _dispatch(
        self, frames: list[bytes], remote_user: str | None = None, last: zmq.Frame | None = None
    ) -> None:
        """One message: its frames (the sender's identity first) and the last as received,
        which tells the sender's connection and, over ipc, its process."""
        identity = frames[0]
        remote = remote_user is not None
        table = self._by_remote_identity if remote else self._by_identity
        session = table.get(identity)
        if session is None:
            self._stranger(identity, frames[1:], remote_user, last)
            return
        session.last_heard = time.monotonic()
        session.unasked += 1  # taken back below if the message is an answer the bot owed
        if session.unasked > _UNASKED_LIMIT:
            if session.unasked == _UNASKED_LIMIT + 1:
                session.note_fault(
                    FaultKind.MALFORMED,
                    f"flooding: more than {_UNASKED_LIMIT} messages it was not asked for "
                    "since the referee's last request",
                )
            session.counters["messages_dropped"] += 1
            return
        if len(frames) != 2:
            self._refuse(session, None, f"message of {len(frames) - 1} frames (must be 1)")
            return
        payload = frames[1]
        if len(payload) > MAX_MESSAGE_BYTES:
            self._refuse(
                session, None, f"message of {len(payload)} bytes exceeds {MAX_MESSAGE_BYTES}"
            )
            return
        if session is not self._asking and len(payload) > _UNASKED_MESSAGE_BYTES:
            # This bot is not being asked, so this is no answer it owes now: refuse it
            # undecoded, or a bot could spend the referee's time, charged to the clock of
            # the bot being asked, on junk (late answers are small).
            session.note_fault(
                FaultKind.MALFORMED,
                f"flooding: a message of {len(payload)} bytes it was not asked for",
            )
            session.counters["messages_dropped"] += 1
            return
        try:
            message = decode_map(payload, max_depth=BOT_MESSAGE_DEPTH)
        except ProtocolError as error:
            self._refuse(session, None, str(error))
            return
        message_id = message.get("id")
        last_id = session.last_id
        if type(message_id) is not int or not last_id < message_id <= MAX_ID:
            self._refuse(session, message, _id_problem(message_id, last_id))
            return
        session.last_id = message_id
        kind = message["type"]
        if kind not in _BOT_TYPES:
            self._send_error(
                session, message, ErrorCode.UNKNOWN_TYPE, f"unknown message type {kind!r}"
            )
            session.counters["unknown_types"] += 1
            return
        reply_to = message.get("reply_to")
        if type(reply_to) is int and reply_to <= session.lease_floor:
            session.unasked -= 1
            session.counters["late_replies"] += 1  # to the hub, or to an earlier match
            return
        if type(reply_to) is int and reply_to in session.awaited:
            # An answer to a request, maybe one that timed out: a bot that was stuck may
            # answer many at once when it recovers, and is not flooding.
            session.awaited.discard(reply_to)
            session.answered.add(reply_to)
            session.unasked -= 1
        session.inbox.append(message)

    def _stranger(
        self,
        identity: bytes,
        frames: list[bytes],
        remote_user: str | None,
        last: zmq.Frame | None = None,
    ) -> None:
        """A message from a peer that has not completed a handshake."""
        remote = remote_user is not None
        message = read_hello(frames)
        if not isinstance(message, Hello):
            self.stray_messages += 1
            if message is not None:  # a malformed hello
                self._reply_stranger(identity, remote, message)
            return
        refusal: str | None = None
        blame_sender = not remote
        if remote and (remote_user or "") in self._departing_keys:
            self._repeat_shutdown(identity, message, remote_user or "", last)
            return
        if remote:
            # CurveZMQ already authenticated the key; ZAP reported it as the User-Id.
            session = self._awaiting_keys.get(remote_user or "") or self._reconnecting(
                self._by_remote_identity, lambda known: known.spec.curve_public_key == remote_user
            )
            if session is None:
                refusal = "unknown key"
        else:
            session = self._awaiting.get(message.token)
            live = None if session is not None else self._live_session(message.token)
            if session is not None:
                # The right token from elsewhere: read from /proc by any process of the same
                # user (unsandboxed, or a sandbox's first process), maybe before the bot
                # itself could say hello.
                refusal = self._foreign_hello(session, last)
                if refusal is not None:
                    session.counters["hello_refused"] += 1
            elif live is not None:
                # The token of a live session, from a new connection: anyone with the bot's
                # token (unsandboxed, any process of the same user can read it) could be
                # saying this, so a session never moves.
                live.counters["hello_refused"] += 1
                refusal = (
                    "this bot is connected already; a session never moves to another connection"
                )
                blame_sender = False
            else:
                refusal = "unknown token"
        if refusal is not None:
            sender = self._sender(identity, last) if blame_sender else None
            if sender is not None:
                sender.rejected_hellos += 1
            self._reply_stranger(identity, remote, Refusal(message.id, RejectCode.AUTH, refusal))
            self.stray_messages += 1
            return
        assert session is not None
        chosen = agree_version(message, self.supported_versions)
        if isinstance(chosen, Refusal):
            self._reply_stranger(identity, remote, chosen)
            session.handshake_fault = session.fault(
                FaultKind.VERSION,
                f"bot speaks {', '.join(message.versions)}; "
                f"referee speaks {', '.join(self.supported_versions)}",
            )
            return
        session.identity = identity
        session.protocol = chosen
        session.hello = message
        session.last_id = message.id
        session.connection = peers.connection_of(source_descriptor(last))
        session.last_heard = time.monotonic()
        if remote:
            self._by_remote_identity[identity] = session
            self._awaiting_keys.pop(remote_user or "", None)
        else:
            self._by_identity[identity] = session
            self._awaiting.pop(session.token, None)
            self._close_endpoint(session)
        self._send(session, welcome(message, chosen, self.heartbeat_ms))

    @staticmethod
    def _foreign_hello(session: BotSession, last: zmq.Frame | None) -> str | None:
        """Why a hello with this bot's token is not the bot's: it came on another bot's
        endpoint, or from a process that is neither the bot's nor one of its descendants.
        None when it is the bot's, or where the socket does not tell (the token alone decides
        then). Read afresh, not from the cache: a peer chooses its own identity, and may
        reuse another's."""
        if last is None:
            return None
        where = peers.endpoint_path(peers.connection_of(source_descriptor(last)))
        own = None if session.endpoint is None else session.endpoint.removeprefix("ipc://")
        if where is not None and own is not None and where != own:
            return "this hello came on another bot's endpoint"
        lineage = peers.lineage(sender_pid(last))
        if lineage and session.process is not None and session.process.pid not in lineage:
            return "this hello comes from a process that is not the bot's or one it started"
        return None

    def _sender(self, identity: bytes, last: zmq.Frame | None) -> BotSession | None:
        """The started bot awaited for its hello whose process, or one of its descendants,
        sent this message, if any: over ipc the socket tells the sender's pid."""
        if last is None or not self._awaiting:
            return None
        lineage = self._senders.get(identity)
        if lineage is None:
            lineage = peers.lineage(sender_pid(last))
            if len(self._senders) >= _SENDER_CACHE_LIMIT:
                self._senders.clear()
            self._senders[identity] = lineage
        for session in self._awaiting.values():
            if session.process is not None and session.process.pid in lineage:
                return session
        return None

    def _lost(self, session: BotSession, when: str) -> Fault:
        """The fault of a bot whose connection dropped: a crash if its process ends soon,
        or if the kernel killed a process of it for its memory."""
        session.connection = None
        memory = self._memory_crash(session, when)
        if memory is not None:
            return memory
        deadline = time.monotonic() + _EXIT_GRACE
        while session.process is not None and not session.exited():
            if time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        if session.exited():
            return self._crash_fault(session, when)
        session.closed = True
        return session.fault(
            FaultKind.DISCONNECT,
            f"its connection dropped {when} and its process still runs: the referee's socket "
            f"drops, unread, a message over 1 MiB (SPEC section 1: at most {MAX_MESSAGE_BYTES} "
            "bytes), and with it the connection; so does a bot that closes its socket",
        )

    def _live_session(self, token: str) -> BotSession | None:
        for known in self._by_identity.values():
            if known.token == token and not known.closed:
                return known
        return None

    def _reconnecting(
        self, table: dict[bytes, BotSession], is_it: Callable[[BotSession], bool]
    ) -> BotSession | None:
        """A connected bot saying hello again from a new connection (its end dropped and
        reconnected): the session moves to the new identity, nothing else changes."""
        for old_identity, known in list(table.items()):
            if is_it(known) and not known.closed:
                del table[old_identity]
                known.counters["reconnects"] += 1
                return known
        return None

    def _reply_stranger(self, identity: bytes, remote: bool, refusal: Refusal) -> None:
        """Reject a ``hello`` (no session exists, so the id is the server's own)."""
        payload = self._envelopes.rejection(self._take_id(), refusal, self.supported_versions)
        socket = self._remote_socket if remote and self._remote_socket else self._socket
        with contextlib.suppress(zmq.ZMQError):  # never wait for a stranger that does not read
            send_to(socket, identity, payload, _NOBLOCK)

    def _repeat_shutdown(
        self, identity: bytes, hello: Hello, key: str, last: zmq.Frame | None
    ) -> None:
        """Answer the hello of a remote bot already told to shut down with ``shutdown``
        again, and wait for this connection to close too."""
        payload = self._envelopes.repeated_shutdown(
            self._take_id(), hello, self.supported_versions, self._departing_keys[key]
        )
        if self._remote_socket is None:
            return
        with contextlib.suppress(zmq.ZMQError):
            send_to(self._remote_socket, identity, payload, _NOBLOCK)
            connection = peers.connection_of(source_descriptor(last))
            if connection is not None:
                self._departures.append(connection)

    def _take_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _send(self, session: BotSession, message: dict[str, Any], flags: int = 0) -> int:
        """Send ``message`` in an envelope; return its id. ``flags`` zmq.NOBLOCK: fail at once
        rather than wait up to the send timeout when the bot's queue is full."""
        if session.identity is None or session.closed:
            raise _SendError(f"{session.name} is not connected")
        session.next_id += 1
        message_id = session.next_id
        socket = self._remote_socket if session.remote and self._remote_socket else self._socket
        payload = self._envelopes.pack(session.protocol or PROTOCOL_VERSION, message_id, message)
        try:
            send_to(socket, session.identity, payload, flags)
        except zmq.ZMQError as error:  # EHOSTUNREACH: the peer is gone; EAGAIN: not reading
            raise _SendError(f"cannot send to {session.name}: {error}") from None
        return message_id

    def _send_error(
        self, session: BotSession, about: dict[str, Any] | None, code: ErrorCode, text: str
    ) -> None:
        reply_to = about.get("id") if about is not None else None
        if not isinstance(reply_to, int) or isinstance(reply_to, bool):
            reply_to = None
        with contextlib.suppress(_SendError):  # a bot that does not read is not waited for
            self._send(session, builders.error(reply_to, code, text), _NOBLOCK)

    def _malformed(self, session: BotSession, about: dict[str, Any], detail: str) -> Fault:
        """A malformed answer: the bot is told why in an ``error``; its fault."""
        self._send_error(session, about, ErrorCode.MALFORMED, detail)
        return session.fault(FaultKind.MALFORMED, detail)

    def _refuse(self, session: BotSession, about: dict[str, Any] | None, detail: str) -> None:
        """A malformed message, whenever it came: tell the bot why, and note its fault."""
        self._send_error(session, about, ErrorCode.MALFORMED, detail)
        session.note_fault(FaultKind.MALFORMED, detail)

    def _memory_crash(self, session: BotSession, when: str) -> Fault | None:
        """A crash if the kernel killed a process of the bot for its cgroup's memory limit,
        whatever the referee noticed first (its exit, its dropped connection, its silence);
        the bot is then stopped. None otherwise."""
        process = session.process
        if process is None or not process.memory_exceeded():
            return None
        if process.exit_code() is not None:
            return self._crash_fault(session, when)
        session.closed = True
        process.stop(0.0)  # what is left of it, silent or cut off
        return session.fault(
            FaultKind.CRASH,
            f"a process of it was killed {when}: over its memory limit of "
            f"{process.spec.limits.memory_mb} MiB",
        )

    def _crash_fault(self, session: BotSession, when: str) -> Fault:
        process = session.process
        code = process.exit_code() if process is not None else None
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        session.closed = True
        memory = ""
        if process is not None:
            limits = process.spec.limits
            if process.memory_exceeded():
                memory = f": over its memory limit of {limits.memory_mb} MiB"
            # Give the log reader a moment to collect the last lines the bot wrote.
            process.stop(0.0)
            if not memory and _OUT_OF_MEMORY.search("\n".join(process.stderr_tail())):
                memory = ": it ran out of memory" + (
                    f" (address-space limit of {limits.address_space_mb} MiB)"
                    if limits.address_space_mb is not None
                    else ""
                )
        return session.fault(FaultKind.CRASH, f"process ended ({how}) {when}{memory}")


def _raise_file_limit() -> None:
    """Let this process open as many descriptors as it may: every connection to a bot's
    endpoint costs the referee one, and libzmq aborts the whole process when it cannot
    accept one (see :meth:`BotServer._close_endpoint`)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft >= hard:
        return
    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _id_problem(message_id: object, last_id: int) -> str:
    """Why ``message_id`` cannot follow the bot's message ``last_id`` (-1: none yet)."""
    if type(message_id) is not int:
        return f"id: expected an integer, got {quoted(message_id)}"
    if message_id > MAX_ID:
        return f"id {message_id} is over {MAX_ID}"
    return (
        f"id {message_id} does not follow the bot's previous id {last_id}: each message's id "
        "must be larger than the one before on the connection"
    )


def _pending_fault(session: BotSession) -> Fault | None:
    return session.pending_fault


def _receive(socket: zmq.Socket[bytes], flags: int) -> tuple[list[bytes], zmq.Frame]:
    """One message from a ROUTER socket: the sender's identity, then every frame it sent (at
    least one; ZeroMQ delivers a message's frames together); and the last frame as received
    (it tells the connection it came on)."""
    frames = [socket.recv(flags)]
    while True:
        # A frame tells whether more follow: cheaper than asking the socket for RCVMORE.
        frame = socket.recv(copy=False)
        frames.append(frame.bytes)
        if not frame.more:
            return frames, frame


class _SendError(Exception):
    """A message could not be handed to ZeroMQ for this peer."""


_BOT_TYPES = frozenset({"hello", "ready", "act", "pong", "error"})


def _safe_name(name: str) -> str:
    return "".join(char if char.isalnum() or char in "-_." else "_" for char in name)[:64]


def log_file_name(name: str) -> str:
    """The name of bot ``name``'s log file in a log folder (each worker's, the preflight's)."""
    return f"{_safe_name(name)}.log"
