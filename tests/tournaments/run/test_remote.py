"""The scheduling of matches with remote bots (tournaments.run.remote and the coordinator's
window): pure logic over the hub's counts, with a clock of our own."""

from __future__ import annotations

import io
import socket
from concurrent.futures import Executor

from rich.console import Console

from referee.bots import BotSpec
from referee.hub import LineCounts
from tournaments.config.tournament import TournamentSetup
from tournaments.report.terminal import QuietDisplay
from tournaments.run.coordinator import StopRequest, _Coordinator
from tournaments.run.remote import RemoteGate, advertised_host
from tournaments.schedule.pairings import ScheduledMatch

KEYS = {"far": "f" * 40, "near": "n" * 40}
BOTS = (
    BotSpec("local", ("true",)),
    BotSpec("far", curve_public_key=KEYS["far"], connections=2),
    BotSpec("near", curve_public_key=KEYS["near"]),
)


class World:
    """What the gate sees: the hub's counts, a clock, and the notes it wrote."""

    def __init__(self) -> None:
        self.lines = {"far": 0, "near": 0}
        self.now = 0.0
        self.notes: list[str] = []

    def counts(self) -> dict[str, LineCounts]:
        return {KEYS[name]: LineCounts(lines, 0) for name, lines in self.lines.items()}

    def gate(self, wait_s: float = 10.0) -> RemoteGate:
        return RemoteGate(
            BOTS,
            self.counts,
            wait_s=wait_s,
            note=self.notes.append,
            rejection=lambda key: "no common protocol version" if key == KEYS["near"] else None,
            clock=lambda: self.now,
        )


def match(number: int, first: str, second: str) -> ScheduledMatch:
    return ScheduledMatch(f"m{number}", 1, "+".join(sorted((first, second))), (first, second), 1)


def test_a_remote_bot_plays_as_many_matches_at_once_as_it_may() -> None:
    world = World()
    world.lines["far"] = 3  # one spare connection: still two matches at once
    gate = world.gate()
    first, second, third = (match(n, "far", "local") for n in range(3))
    assert gate.admit(first) == ()
    assert gate.admit(second) == ()
    assert gate.admit(third) is None  # its connections: 2
    gate.done(first)
    assert gate.admit(third) == ()
    world.lines["far"] = 1  # a connection dropped: one match at a time now
    gate.done(second)
    assert gate.admit(match(4, "far", "local")) is None
    assert world.notes == ["Remote bot far has connected"]


def test_a_missing_remote_bot_is_waited_for_then_forfeits_until_it_connects() -> None:
    world = World()
    gate = world.gate(wait_s=10.0)
    waiting = match(1, "near", "local")
    assert gate.admit(waiting) is None
    world.now = 9.9
    assert gate.admit(waiting) is None
    world.now = 10.0
    assert gate.admit(waiting) == ("near",)  # not waited for: a forfeit at once
    assert gate.admit(match(2, "local", "near")) == ("near",)  # nor for the next ones
    assert world.notes == [
        "Remote bot near has not connected in 10 s: it forfeits its matches (fault "
        "handshake) until it connects; its last hello was rejected: no common protocol version"
    ]
    world.lines["near"] = 1
    gate.done(waiting)
    gate.done(match(2, "local", "near"))
    assert gate.admit(match(3, "near", "local")) == ()
    assert world.notes[-1] == "Remote bot near has connected: its matches are played again"
    both = match(4, "far", "near")  # far never came: waited for from now on
    assert gate.admit(both) is None
    world.now = 25.0
    gate.done(match(3, "near", "local"))
    assert gate.admit(both) == ("far",)


class NoExecutor(Executor):
    """The coordinator's next_batch alone is tested: nothing is submitted."""


def coordinator(gate: RemoteGate, batch_size: int = 1) -> _Coordinator:
    setup = TournamentSetup(
        name="t",
        bots=BOTS,
        format="round_robin",
        gauntlet=(),
        matches_per_pair=2,
        options=None,  # type: ignore[arg-type]
        time_control=None,  # type: ignore[arg-type]
        concurrency=2,
        seed=1,
        output=None,  # type: ignore[arg-type]
    )
    display = QuietDisplay(Console(file=io.StringIO()))
    return _Coordinator(
        setup, NoExecutor(), display, StopRequest(), batch_size=batch_size, remote=(gate, None)
    )


def test_matches_waiting_for_a_remote_bot_let_the_others_go_first() -> None:
    world = World()
    world.lines["far"] = 1
    run = coordinator(world.gate(), batch_size=3)
    schedule = [
        match(1, "near", "local"),  # near is not connected: held back
        match(2, "far", "local"),
        match(3, "far", "near"),
        match(4, "local", "other"),
        match(5, "other", "local"),
    ]
    pending = iter(schedule)
    assert run.next_batch(pending) == [(schedule[1], ())]  # a remote bot's match goes alone
    assert run.next_batch(pending) == [(schedule[3], ()), (schedule[4], ())]
    assert list(run.held) == [schedule[0], schedule[2]]
    assert run.next_batch(pending) == []  # nothing may go now
    world.lines["near"] = 1
    assert run.next_batch(pending) == [(schedule[0], ())]  # in schedule order
    assert run.next_batch(pending) == []  # far's one connection is busy with match 2
    run.finished([schedule[1]])
    assert run.next_batch(pending) == []  # and near's with match 1
    run.finished([schedule[0]])
    assert run.next_batch(pending) == [(schedule[2], ())]
    assert not run.held


def test_workers_elsewhere_get_an_address_of_this_machine() -> None:
    assert advertised_host("10.1.2.3", "tcp://10.9.9.9:8786") == "10.1.2.3"
    assert advertised_host("0.0.0.0", "tcp://127.0.0.1:8786") == "127.0.0.1"
    if socket.has_ipv6:
        assert advertised_host("::", "tcp://[::1]:8786") in ("::1", socket.getfqdn())
