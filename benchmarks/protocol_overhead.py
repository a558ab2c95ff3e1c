"""Protocol overhead: how close the referee comes to a bare ZeroMQ round trip.

In one run, over ipc on this machine:

(a) a raw pyzmq ROUTER/DEALER msgpack ping-pong: the ROUTER packs a map the size of a real
    ``decide`` for a play, the DEALER (another process) unpacks it and answers a small map,
    the ROUTER unpacks that: the floor for one decision;
(b) the referee playing whole matches between two trivial bots that answer every request
    with its first legal action (raw msgpack bots, so the bot side costs what (a)'s does);
(c) the same with two uniform random bots written with the Python SDK: games/s.

Reports decisions/s of (a) and (b) and their ratio, and games/s of (c).

    python benchmarks/protocol_overhead.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import msgpack
import zmq

from referee.bots import BotSpec
from referee.runner import MatchRunner, TimeControl

_ECHO_PEER = textwrap.dedent(
    """
    import sys, msgpack, zmq
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(sys.argv[1])
    socket.send(msgpack.packb({"type": "hello"}))
    while True:
        message = msgpack.unpackb(socket.recv(), raw=False)
        if message.get("type") == "shutdown":
            break
        socket.send(msgpack.packb(
            {"version": "1.0", "id": message["id"], "type": "act",
             "reply_to": message["id"], "action": message["legal"][0]}))
    """
)

_FIRST_LEGAL_BOT = textwrap.dedent(
    """
    import os, msgpack, zmq
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(os.environ["AEGIS_ENDPOINT"])
    next_id = 1
    socket.send(msgpack.packb({"version": "1.0", "id": next_id, "type": "hello",
                               "versions": ["1.0"], "name": "first",
                               "token": os.environ["AEGIS_TOKEN"]}))
    while True:
        message = msgpack.unpackb(socket.recv(), raw=False)
        kind = message["type"]
        answer = None
        if kind == "decide":
            answer = {"type": "act", "action": message["legal"][0]}
        elif kind == "match_start":
            answer = {"type": "ready"}
        elif kind == "ping":
            answer = {"type": "pong"}
        elif kind in ("shutdown", "reject"):
            break
        if answer is not None:
            next_id += 1
            answer.update(version="1.0", id=next_id, reply_to=message["id"])
            socket.send(msgpack.packb(answer))
    """
)


def _play_request() -> dict[str, object]:
    """A real play-phase ``decide`` map, built by the referee's own code."""
    import random

    from protocol.views import EventTracker, legal_to_wire, observation_to_wire
    from referee.game import Phase, Seat, apply, legal_actions, new_game, observation, shuffled_deck

    game = new_game(
        __import__("referee.options").options.RulesOptions(),
        Seat.FIRST,
        shuffled_deck(random.Random(1)),
    )
    tracker = EventTracker()
    while game.phase is not Phase.PLAY or len(game.tricks) < 2:
        legal = legal_actions(game)
        game = apply(game, game.to_move, legal[min(1, len(legal) - 1)])  # type: ignore[arg-type]
    seat = game.to_move
    assert seat is not None
    seen = observation(game, seat)
    tracker.observe(seen)
    return {
        "version": "1.0",
        "id": 0,
        "type": "decide",
        "match_id": "bench",
        "decision": "play",
        "events": tracker.take()[-4:],
        "observation": observation_to_wire(seen),
        "legal": legal_to_wire(legal_actions(game)),
        "deadline_ms": 1000,
        "bank_ms": None,
    }


def raw_ping_pong(seconds: float) -> tuple[float, int]:
    """(a): round trips per second and the request size in bytes."""
    request = _play_request()
    size = len(msgpack.packb(request))
    directory = tempfile.mkdtemp(prefix="aegis-bench-")
    endpoint = f"ipc://{directory}/echo"
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.bind(endpoint)
    peer = subprocess.Popen([sys.executable, "-c", _ECHO_PEER, endpoint])
    try:
        identity, _hello = router.recv_multipart()
        count = 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            request["id"] = count
            router.send_multipart([identity, msgpack.packb(request)])
            _identity, reply = router.recv_multipart()
            assert msgpack.unpackb(reply, raw=False)["reply_to"] == count
            count += 1
        rate = count / (time.perf_counter() - started)
        router.send_multipart([identity, msgpack.packb({"type": "shutdown"})])
    finally:
        peer.wait(5)
        router.close(0)
        context.term()
        shutil.rmtree(directory, ignore_errors=True)
    return rate, size


def referee_rate(seconds: float, command: list[str]) -> tuple[float, float]:
    """(b)/(c): decisions per second and games per second of whole matches."""
    spec_a = BotSpec("a", tuple(command))
    spec_b = BotSpec("b", tuple(command))
    decisions = games = 0
    with MatchRunner(time_control=TimeControl(decision_ms=5000)) as runner:
        runner.play([spec_a, spec_b], seed=0)  # start and warm both processes
        started = time.perf_counter()
        seed = 1
        while time.perf_counter() - started < seconds:
            report = runner.play([spec_a, spec_b], seed=seed)
            assert not report.faults, report.faults
            decisions += sum(len(timings) for timings in report.timings)
            games += len(report.games)
            seed += 1
        elapsed = time.perf_counter() - started
    return decisions / elapsed, games / elapsed


def _has_sdk_bot() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("protocol.examples.random_bot") is not None
    except ModuleNotFoundError:
        return False


def main() -> None:
    """Run (a), (b) and (c) and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aegis-bench-") as scratch:
        bot = Path(scratch) / "first_legal.py"
        bot.write_text(_FIRST_LEGAL_BOT)
        raw, size = raw_ping_pong(arguments.seconds)
        referee, referee_games = referee_rate(arguments.seconds, [sys.executable, str(bot)])
    sdk = [sys.executable, "-m", "protocol.examples.random_bot"]
    sdk_games = referee_rate(arguments.seconds, sdk)[1] if _has_sdk_bot() else float("nan")
    print(
        f"python {platform.python_version()}, pyzmq {zmq.__version__}, "
        f"libzmq {zmq.zmq_version()}, {os.cpu_count()} cores, ipc transport"
    )
    print(f"(a) raw ROUTER/DEALER msgpack ping-pong, {size}-byte request: {raw:,.0f} round trips/s")
    print(
        f"(b) referee with first-legal raw bots: {referee:,.0f} decisions/s "
        f"({referee_games:,.0f} games/s)"
    )
    print(f"    ratio (b)/(a): {referee / raw:.0%}")
    print(f"(c) referee with two SDK random bots: {sdk_games:,.0f} games/s")


if __name__ == "__main__":
    main()
