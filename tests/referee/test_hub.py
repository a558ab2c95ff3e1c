"""The remote bots' hub (referee.hub): who is let in, how many connections a bot may keep,
and what happens to a lent connection when its worker vanishes. Real CurveZMQ on loopback,
with raw sockets on the bot's and the worker's side."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq

from referee.hub import LineCounts, RemoteHub
from referee.listeners import RemoteListener, generate_keys
from tests.processes import eventually
from tests.referee.bot_helpers import RAWBOT, remote_bot

REFEREE = generate_keys()
#: How long a message the test expects may take to come (a busy machine is slow).
WAIT_MS = 10_000


class Sockets:
    """The test's DEALER sockets, every one closed at its end."""

    def __init__(self) -> None:
        self.context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.made: list[zmq.Socket[bytes]] = []

    def dealer(self) -> zmq.Socket[bytes]:
        socket = self.context.socket(zmq.DEALER)
        socket.linger = 0
        self.made.append(socket)
        return socket

    def leave(self) -> None:
        """Close every socket, as bots do when told ``shutdown`` (a closing hub waits for
        its bots to leave)."""
        for socket in self.made:
            socket.close(0)

    def worker(self, hub: RemoteHub) -> zmq.Socket[bytes]:
        """A worker's link to the hub (as a local pool worker has)."""
        socket = self.dealer()
        socket.connect(hub.local_link().endpoint)
        return socket


@pytest.fixture
def context() -> Iterator[Sockets]:
    sockets = Sockets()
    yield sockets
    for socket in sockets.made:
        socket.close(0)
    sockets.context.term()


def hub_for(bots: dict[str, int]) -> RemoteHub:
    return RemoteHub(RemoteListener("127.0.0.1", 0, *REFEREE), bots, heartbeat_ms=1000)


def dial(context: Sockets, hub: RemoteHub, keys: tuple[str, str]) -> zmq.Socket[bytes]:
    """A remote bot's DEALER, connected with its key pair."""
    socket = context.dealer()
    socket.curve_serverkey = REFEREE[0].encode()
    socket.curve_publickey = keys[0].encode()
    socket.curve_secretkey = keys[1].encode()
    socket.connect(hub.endpoint)
    return socket


def hello(
    socket: zmq.Socket[bytes], versions: tuple[str, ...] = ("1.1",), wait_ms: int = WAIT_MS
) -> dict[str, Any]:
    """Say hello; the hub's answer, or {} if none comes within ``wait_ms`` (a busy machine
    may take seconds to complete a CurveZMQ handshake)."""
    message = {"version": "1.1", "type": "hello", "id": 1, "versions": list(versions)}
    socket.send(msgpack.packb({**message, "name": "raw"}))
    if not socket.poll(wait_ms):
        return {}
    answer: dict[str, Any] = msgpack.unpackb(socket.recv())
    return answer


def test_an_unknown_key_is_refused_before_any_message(
    context: Sockets,
) -> None:
    registered = generate_keys()
    with hub_for({registered[0]: 1}) as hub:
        intruder = dial(context, hub, generate_keys())
        assert hello(intruder, wait_ms=1000) == {}  # nothing comes
        assert hub.counts() == {registered[0]: LineCounts(0, 0)}
        assert hub.stray_messages == 0  # CurveZMQ refused it: nothing was even read
        assert hello(dial(context, hub, registered))["type"] == "welcome"
        assert hub.counts() == {registered[0]: LineCounts(1, 0)}
        context.leave()


def test_a_bot_keeps_its_connections_and_as_many_spare(
    context: Sockets,
) -> None:
    keys = generate_keys()
    with hub_for({keys[0]: 1}) as hub:
        assert hello(dial(context, hub, keys))["type"] == "welcome"
        assert hello(dial(context, hub, keys))["type"] == "welcome"  # a spare
        third = hello(dial(context, hub, keys))
        assert (third["type"], third["code"]) == ("reject", "auth")
        assert "connections: 1" in third["reason"]
        assert hub.counts()[keys[0]] == LineCounts(2, 0)
        assert hub.rejection(keys[0]) == third["reason"]
        context.leave()


def test_a_hello_without_a_common_version_is_rejected_and_remembered(
    context: Sockets,
) -> None:
    keys = generate_keys()
    with hub_for({keys[0]: 1}) as hub:
        answer = hello(dial(context, hub, keys), versions=("7.0",))
        assert (answer["type"], answer["code"]) == ("reject", "version")
        assert hub.rejection(keys[0]) == "no common protocol version in ['7.0']"
        assert hub.counts()[keys[0]] == LineCounts(0, 0)


def test_a_closed_connection_is_noticed_and_idle_ones_are_pinged(
    context: Sockets,
) -> None:
    keys = generate_keys()
    with hub_for({keys[0]: 1}) as hub:
        bot = dial(context, hub, keys)
        assert hello(bot)["type"] == "welcome"
        assert bot.poll(WAIT_MS)  # heartbeat_ms 1000: an idle line is pinged
        assert msgpack.unpackb(bot.recv())["type"] == "ping"
        bot.close(0)
        assert eventually(lambda: hub.counts()[keys[0]] == LineCounts(0, 0))


def test_the_lines_of_a_worker_that_vanishes_come_back(
    context: Sockets,
) -> None:
    """A worker leases a line, then its process dies without giving it back: the hub sees
    its link close and lends the line to the next worker, ids still increasing."""
    keys = generate_keys()
    with hub_for({keys[0]: 1}) as hub:
        bot = dial(context, hub, keys)
        welcome = hello(bot)
        worker = context.worker(hub)
        worker.send_multipart([b"", b"lease", b"1", keys[0].encode(), b"1000", b"1000"])
        assert worker.poll(WAIT_MS)
        leased = worker.recv_multipart()
        assert leased[:3] == [b"", b"leased", b"1"]
        line, protocol, next_id = leased[3], leased[4], int(leased[5])
        assert protocol == b"1.1"
        assert next_id >= welcome["id"]
        ping = {"version": "1.1", "type": "ping", "id": next_id + 1}
        worker.send_multipart([line, msgpack.packb(ping)])
        while True:  # the hub's own pings, sent before the lease, may come first
            assert bot.poll(WAIT_MS)
            seen = msgpack.unpackb(bot.recv())
            if seen["id"] == next_id + 1:
                break
        bot.send(msgpack.packb({"version": "1.1", "type": "pong", "id": 2, "reply_to": seen["id"]}))
        assert worker.poll(WAIT_MS)
        assert worker.recv_multipart()[0] == line  # the bot's answer reaches its lessee
        assert hub.counts()[keys[0]] == LineCounts(1, 1)
        worker.close(0)
        assert eventually(lambda: hub.counts()[keys[0]] == LineCounts(1, 0))
        again = context.worker(hub)
        again.send_multipart([b"", b"lease", b"2", keys[0].encode(), b"1000", b"1000"])
        assert again.poll(WAIT_MS)
        second = again.recv_multipart()
        assert second[:4] == [b"", b"leased", b"2", line]
        assert int(second[5]) >= next_id + 1  # the id the vanished worker used is behind
        context.leave()


def test_a_lease_for_a_bot_that_is_not_connected_waits_then_says_so(
    context: Sockets,
) -> None:
    keys = generate_keys()
    with hub_for({keys[0]: 1}) as hub:
        worker = context.worker(hub)
        started = time.monotonic()
        worker.send_multipart([b"", b"lease", b"7", keys[0].encode(), b"300", b"5000"])
        assert worker.poll(WAIT_MS)
        assert worker.recv_multipart() == [b"", b"absent", b"7", b"it was not connected"]
        assert 0.25 <= time.monotonic() - started < 2.0


def test_closing_waits_for_the_bots_to_leave_after_their_shutdown(context: Sockets) -> None:
    """The hub tells every remote bot ``shutdown`` and waits (bounded) for its connection to
    close: a bot that takes longer to exit than the socket's linger still gets its
    shutdown, rather than a dropped connection it would dial again for ever."""
    keys = generate_keys()
    left_at: list[float] = []

    def leave_slowly(socket: zmq.Socket[bytes]) -> None:
        if socket.poll(20_000) and msgpack.unpackb(socket.recv())["type"] == "shutdown":
            time.sleep(1.5)  # longer than the hub's linger
            left_at.append(time.monotonic())
            socket.close(0)

    with hub_for({keys[0]: 1}) as hub:
        bot = dial(context, hub, keys)
        assert hello(bot)["type"] == "welcome"
        assert eventually(lambda: hub.counts()[keys[0]].lines == 1)
        leaver = threading.Thread(target=leave_slowly, args=(bot,))
        leaver.start()
        hub.close()
        closed_at = time.monotonic()
        leaver.join(20)
    assert left_at, "the bot never got its shutdown"
    assert left_at[0] <= closed_at


def test_a_bot_that_dials_in_again_while_the_hub_closes_is_told_shutdown_again(
    tmp_path: Path,
) -> None:
    """A remote bot that dials in again with a new hello as its shutdown comes (as one whose
    connection dropped first would) gets ``shutdown`` on the new connection too, and the hub
    waits for that one to close (SPEC section 5), rather than leave the bot dialling a closed
    port for ever. A real rawbot process over CurveZMQ."""
    keys = generate_keys()
    log = tmp_path / "messages.jsonl"
    with hub_for({keys[0]: 1}) as hub:
        arguments = ("--fault", "redial_at_shutdown", "--log-messages", str(log))
        bot = remote_bot(hub.endpoint, REFEREE[0], keys, RAWBOT, *arguments)
        try:
            assert eventually(lambda: hub.counts()[keys[0]].lines == 1, WAIT_MS / 1000)
            hub.close("tournament over")
            # Exit status 3: no answer to its second hello within 30 s.
            assert bot.wait(WAIT_MS / 1000) == 0
        finally:
            if bot.poll() is None:
                bot.kill()
            bot.wait()
    kinds = [json.loads(line)["type"] for line in log.read_text().splitlines()]
    assert [kind for kind in kinds if kind != "ping"] == ["welcome", "shutdown", "shutdown"]
