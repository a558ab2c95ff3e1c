"""Clients that do not play fair: a thousand event streams that are never read, and
slowloris clients that send their request a byte at a time. Neither stalls the other
viewers, nor the writer of the store."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.processes import MachineWatch
from tests.tournaments.stored import new_store, store_match
from tests.tournaments.web.serving import served, wait_for_version

STREAMS = 1000
SLOW_CLIENTS = 50
#: A new result must reach a fair viewer within this many seconds.
LIVE_S = 2.0


@contextlib.contextmanager
def _silent_streams(base: str, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections that ask for the event stream and never read a byte."""
    host, port = base.removeprefix("http://").split(":")
    opened = []
    try:
        for _ in range(count):
            connection = socket.create_connection((host, int(port)), timeout=10)
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            connection.sendall(b"GET /api/v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
            opened.append(connection)
        yield opened
    finally:
        for connection in opened:
            connection.close()


@contextlib.contextmanager
def _slowloris(base: str, count: int) -> Iterator[None]:
    """``count`` connections that send a request's headers one byte every 0.2 s, never
    ending them."""
    host, port = base.removeprefix("http://").split(":")
    stop = threading.Event()
    connections = [socket.create_connection((host, int(port)), timeout=10) for _ in range(count)]

    def trickle() -> None:
        for connection in connections:
            connection.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        while not stop.wait(0.2):
            for connection in connections:
                with contextlib.suppress(OSError):
                    connection.sendall(b"X")

    sender = threading.Thread(target=trickle)
    sender.start()
    try:
        yield
    finally:
        stop.set()
        sender.join()
        for connection in connections:
            connection.close()


class _Viewer:
    """A fair viewer: reads the event stream, and on each update fetches the standings, as
    the page does; notes when it saw how many matches played."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.seen: list[tuple[float, int]] = []
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        events = f"{self.base}/api/v1/events"
        with (
            contextlib.suppress(httpx.HTTPError),
            httpx.Client(timeout=30) as client,
            client.stream("GET", events, timeout=None) as stream,
        ):
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    standings = client.get(f"{self.base}/api/v1/standings").json()
                    self.seen.append((time.monotonic(), standings["matches_played"]))

    def saw_at(self, played: int) -> float | None:
        """When the viewer first saw at least ``played`` matches, if it did."""
        return next((when for when, count in self.seen if count >= played), None)


def test_silent_streams_and_slowloris_stall_neither_viewers_nor_writer(tmp_path: Path) -> None:
    output = tmp_path / "out"
    names = ["a", "b", "c", "d"]
    connection = new_store(output, names)
    try:
        store_match(connection, 1, ("a", "b"), 0)
        with served(output) as base:
            wait_for_version(base)
            with _silent_streams(base, STREAMS), _slowloris(base, SLOW_CLIENTS):
                viewer = _Viewer(base)
                deadline = time.monotonic() + 10
                while not viewer.seen:
                    assert time.monotonic() < deadline, "the fair viewer got no event"
                    time.sleep(0.05)
                stored: list[tuple[float, int]] = []
                writes = []
                pairs = [(x, y) for x in names for y in names if x != y]
                for number, seats in enumerate(pairs[:10], start=2):
                    started = time.monotonic()
                    store_match(connection, number, seats, number % 2)
                    done = time.monotonic()
                    writes.append(done - started)
                    stored.append((done, 1 + len(stored) + 1))
                    # The page's own request, answered at once all the same (the time the
                    # machine kept tasks waiting for a CPU aside).
                    asked = MachineWatch()
                    answered = httpx.get(f"{base}/api/v1/matches", timeout=5)
                    assert answered.status_code == 200
                    assert asked.unstalled() < 1.0
                    time.sleep(0.3)
                last = stored[-1][1]
                deadline = time.monotonic() + LIVE_S + 1
                while viewer.saw_at(last) is None and time.monotonic() < deadline:
                    time.sleep(0.05)
                late = []
                for when, played in stored:
                    seen = viewer.saw_at(played)
                    if seen is None or seen - when > LIVE_S:
                        late.append((played, None if seen is None else round(seen - when, 2)))
                assert late == [], f"results the fair viewer saw late or never: {late}"
                assert max(writes) < 0.5, f"the writer waited: {writes}"
                # The server still holds the silent streams (it did not drop them to cope).
                status = httpx.get(f"{base}/api/v1/standings", timeout=5)
                assert status.json()["matches_played"] == last
    finally:
        connection.close()
