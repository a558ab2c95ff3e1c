"""One bot as the referee's server knows it: its process or its remote connection, the state
of its conversation (ids, requests awaited, messages waiting) and its counters."""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from protocol.messages import Hello
from referee.bots import BotProcess, BotSpec
from referee.faults import Fault, FaultKind
from referee.peers import Connection

__all__ = ["BotSession"]


@dataclass(slots=True)
class BotSession:
    """One bot as the server knows it: its process, its connection and its counters."""

    spec: BotSpec
    token: str
    process: BotProcess | None = None
    identity: bytes | None = None
    protocol: str | None = None
    hello: Hello | None = None
    next_id: int = 0
    inbox: deque[dict[str, Any]] = field(default_factory=deque)
    #: A fault seen while the bot was not being waited for (garbage between its turns, say).
    pending_fault: Fault | None = None
    handshake_fault: Fault | None = None
    counters: Counter[str] = field(default_factory=Counter)
    closed: bool = False
    #: True for a bot that dialled in over tcp with CurveZMQ rather than being started.
    remote: bool = False
    #: When the bot last sent anything (monotonic seconds); idle bots are pinged.
    last_heard: float = 0.0
    #: Messages received from the bot since the referee last sent it a request, answers aside.
    unasked: int = 0
    #: Ids of the requests sent to the bot and not answered yet (their answers may still come,
    #: late); the server remembers a bounded number, the oldest forgotten first.
    awaited: set[int] = field(default_factory=set)
    #: Ids of requests whose answer has arrived and waits in the inbox to be matched.
    answered: set[int] = field(default_factory=set)
    #: The id of the bot's last message on this connection: each must be larger.
    last_id: int = -1
    #: The bot's connection in the referee's process (see :mod:`referee.peers`).
    connection: Connection | None = None
    #: Hellos with an unknown token that this bot's processes sent before a valid one.
    rejected_hellos: int = 0
    #: The bot's own endpoint (a started bot's ipc socket, bound for it alone).
    endpoint: str | None = None
    #: Where a started bot's output goes (the server's ``log_dir``), if anywhere.
    log_path: Path | None = None
    #: A remote bot reached through a hub (:mod:`referee.hub`): the lease asked for.
    lease: bytes | None = None
    #: A line lent by a hub: the referee's last id on it before the lease. An answer naming
    #: it or an earlier id answers a request of the hub's or of an earlier match: late.
    lease_floor: int = -1

    @property
    def name(self) -> str:
        """The configured bot name."""
        return self.spec.name

    @property
    def owed(self) -> int:
        """How many requests the bot has not answered (some may have timed out)."""
        return len(self.awaited)

    @property
    def connected(self) -> bool:
        """True once the handshake succeeded and the bot has not been stopped."""
        return self.identity is not None and not self.closed

    def stderr_tail(self) -> tuple[str, ...]:
        """The bot's last output lines, if the referee started it."""
        return tuple(self.process.stderr_tail()) if self.process is not None else ()

    def exited(self) -> bool:
        """True if the referee started this bot and its process has ended."""
        return self.process is not None and self.process.exit_code() is not None

    def fault(self, kind: FaultKind, detail: str) -> Fault:
        """A fault of this bot (counted, with its last output lines)."""
        self.counters[kind.value] += 1
        return Fault(kind, -1, self.name, detail, stderr_tail=self.stderr_tail())

    def note_fault(self, kind: FaultKind, detail: str) -> None:
        """A fault seen while the bot was not being waited for: the first is kept (as
        :attr:`pending_fault`) and answers its next request."""
        if self.pending_fault is None:
            self.pending_fault = self.fault(kind, detail)
