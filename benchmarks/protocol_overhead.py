"""Protocol overhead: how close the referee comes to a bare ZeroMQ round trip.

Over ipc on this machine, in rounds that alternate so that a change of machine load hits
every measurement alike:

(a) a raw pyzmq ROUTER/DEALER msgpack ping-pong: the ROUTER packs a map the size of a real
    ``decide`` for a play, the DEALER (another process) unpacks it and answers a small map,
    the ROUTER unpacks that: the floor for one decision;
(b) the referee playing whole matches between two trivial bots that answer every request
    with its first legal action (raw msgpack bots, so the bot side costs what (a)'s does),
    kept alive from match to match (``keep_alive``), so (b) is the referee's cost per
    decision and not the bots' starts;
(s) for the breakdown: the referee's socket layer alone (``BotServer.request``) sending that
    same play request over and over to the two bots of (b), without the game;
(f) the same as (b) with a fresh pair of processes for every match, as a tournament starts
    bots by default: what the starts add;
(c) the same as (b) with two uniform random bots written with the Python SDK, kept alive
    too: games/s.

Reports the median decisions/s of (a), (s), (b) and (f) over the rounds, the ratio (b)/(a)
of the medians, what a fresh pair of processes adds per match, and games/s of (c). Where the
processes run changes every figure, so two options fix it, alike for (a), (s), (b) and (f):

- ``--cpu N`` pins the benchmark (the referee's end) and every process it starts to CPU N:
  the figures are then the CPU cost alone, without the latency of waking a process on
  another CPU;
- ``--cpu N --bots-cpu M`` keeps the referee's end on CPU N and the peer of (a) and the bots
  of (s) and (b) on CPU M: each side keeps its CPU (and its caches) to itself.

    python benchmarks/protocol_overhead.py [--seconds 2] [--rounds 3] [--cpu N [--bots-cpu M]]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import msgpack
import zmq

from referee.bots import BotSpec
from referee.build_info import hot_path_build
from referee.runner import MatchRunner
from referee.time_control import TimeControl

_ECHO_PEER = textwrap.dedent(
    """
    import os, sys, msgpack, zmq
    if len(sys.argv) > 2:
        os.sched_setaffinity(0, {int(sys.argv[2])})
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
    import os, sys, msgpack, zmq
    if len(sys.argv) > 1:
        os.sched_setaffinity(0, {int(sys.argv[1])})
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
    from referee.rules.game import (
        Phase,
        Seat,
        apply,
        legal_actions,
        new_game,
        observation,
        shuffled_deck,
    )
    from referee.rules.options import RulesOptions

    game = new_game(
        RulesOptions(),
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


def raw_ping_pong(seconds: float, peer_cpu: int | None) -> tuple[float, int]:
    """(a): round trips per second and the request size in bytes."""
    request = _play_request()
    size = len(msgpack.packb(request))
    directory = tempfile.mkdtemp(prefix="aegis-bench-")
    endpoint = f"ipc://{directory}/echo"
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.bind(endpoint)
    pinned = [] if peer_cpu is None else [str(peer_cpu)]
    peer = subprocess.Popen([sys.executable, "-c", _ECHO_PEER, endpoint, *pinned])
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


def referee_rate(
    seconds: float, command: list[str], *, keep_alive: bool = True
) -> tuple[float, float, float]:
    """(b)/(c), and (f) without ``keep_alive``: decisions per second, games per second and
    matches per second of whole matches."""
    spec_a = BotSpec("a", tuple(command), keep_alive=keep_alive)
    spec_b = BotSpec("b", tuple(command), keep_alive=keep_alive)
    decisions = games = matches = 0
    with MatchRunner(time_control=TimeControl(decision_ms=5000)) as runner:
        runner.play([spec_a, spec_b], seed=0)  # start and warm both processes
        started = time.perf_counter()
        seed = 1
        while time.perf_counter() - started < seconds:
            report = runner.play([spec_a, spec_b], seed=seed)
            assert not report.faults, report.faults
            decisions += sum(len(timings) for timings in report.timings)
            games += len(report.games)
            matches += 1
            seed += 1
        elapsed = time.perf_counter() - started
    return decisions / elapsed, games / elapsed, matches / elapsed


def socket_layer_rate(seconds: float, command: list[str]) -> float:
    """(s): requests per second of ``BotServer.request`` alone, alternating the two bots."""
    from referee.server import BotServer, Reply

    request = _play_request()
    del request["version"], request["id"]  # the server adds its own envelope
    server = BotServer()
    sessions = [server.start_bot(BotSpec(name, tuple(command))) for name in ("a", "b")]
    try:
        for session in sessions:
            assert server.handshake(session, 10.0) is None
        count = 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            reply = server.request(sessions[count % 2], request, "act", 5.0)
            assert isinstance(reply, Reply), reply
            count += 1
        rate = count / (time.perf_counter() - started)
    finally:
        for session in sessions:
            server.stop_bot(session)
        server.close()
    return rate


def _has_sdk_bot() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("protocol.examples.random_bot") is not None
    except ModuleNotFoundError:
        return False


def main() -> None:
    """Run the rounds of (a), (s), (b) and (f), then (c), and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="per measurement and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=None, help="pin everything to this CPU")
    parser.add_argument(
        "--bots-cpu", type=int, default=None, help="with --cpu: pin the bots to this CPU instead"
    )
    arguments = parser.parse_args()
    if arguments.bots_cpu is not None and arguments.cpu is None:
        parser.error("--bots-cpu needs --cpu (the CPU of the referee's end)")
    if arguments.cpu is not None:
        os.sched_setaffinity(0, {arguments.cpu})  # inherited by every process started here
    raw: list[float] = []
    layer: list[float] = []
    referee: list[float] = []
    referee_games: list[float] = []
    referee_matches: list[float] = []
    fresh: list[float] = []
    fresh_games: list[float] = []
    fresh_matches: list[float] = []
    with tempfile.TemporaryDirectory(prefix="aegis-bench-") as scratch:
        bot = Path(scratch) / "first_legal.py"
        bot.write_text(_FIRST_LEGAL_BOT)
        pinned = [] if arguments.bots_cpu is None else [str(arguments.bots_cpu)]
        command = [sys.executable, str(bot), *pinned]
        for _ in range(arguments.rounds):
            rate, size = raw_ping_pong(arguments.seconds, arguments.bots_cpu)
            raw.append(rate)
            layer.append(socket_layer_rate(arguments.seconds, command))
            decisions, games, matches = referee_rate(arguments.seconds, command)
            referee.append(decisions)
            referee_games.append(games)
            referee_matches.append(matches)
            decisions, games, matches = referee_rate(arguments.seconds, command, keep_alive=False)
            fresh.append(decisions)
            fresh_games.append(games)
            fresh_matches.append(matches)
    sdk = [sys.executable, "-m", "protocol.examples.random_bot"]
    if arguments.bots_cpu is not None:
        sdk = [
            sys.executable,
            "-c",
            f"import os, runpy; os.sched_setaffinity(0, {{{arguments.bots_cpu}}}); "
            "runpy.run_module('protocol.examples.random_bot', run_name='__main__')",
        ]
    sdk_games = referee_rate(arguments.seconds, sdk)[1] if _has_sdk_bot() else float("nan")
    where = f"{os.cpu_count()} CPUs, unpinned"
    if arguments.bots_cpu is not None:
        where = f"referee's end on CPU {arguments.cpu}, bots on CPU {arguments.bots_cpu}"
    elif arguments.cpu is not None:
        where = f"all on CPU {arguments.cpu}"
    print(
        f"python {platform.python_version()}, pyzmq {zmq.__version__}, "
        f"libzmq {zmq.zmq_version()}, hot path {hot_path_build()}, {where}, ipc transport, "
        f"medians of {arguments.rounds} rounds of {arguments.seconds:g} s"
    )

    def rounds(values: list[float]) -> str:
        return ", ".join(f"{value:,.0f}" for value in values)

    print(
        f"(a) raw ROUTER/DEALER msgpack ping-pong, {size}-byte request: "
        f"{statistics.median(raw):,.0f} round trips/s  [{rounds(raw)}]"
    )
    print(
        f"(s) referee socket layer alone, same request: "
        f"{statistics.median(layer):,.0f} requests/s  [{rounds(layer)}]"
    )
    print(
        f"(b) referee with first-legal raw bots: {statistics.median(referee):,.0f} decisions/s "
        f"({statistics.median(referee_games):,.0f} games/s)  [{rounds(referee)}]"
    )
    print(f"    ratio (b)/(a): {statistics.median(referee) / statistics.median(raw):.0%}")
    raw_us, layer_us, referee_us = (
        1e6 / statistics.median(values) for values in (raw, layer, referee)
    )
    print(
        f"    per decision: raw round trip {raw_us:.0f} us, socket layer "
        f"+{layer_us - raw_us:.0f} us, game and messages +{referee_us - layer_us:.0f} us"
    )
    started_ms = 1e3 / statistics.median(fresh_matches) - 1e3 / statistics.median(referee_matches)
    print(
        f"(f) as (b), a fresh pair of processes per match: {statistics.median(fresh):,.0f} "
        f"decisions/s ({statistics.median(fresh_games):,.0f} games/s)  [{rounds(fresh)}]"
    )
    print(
        f"    ratio (f)/(a): {statistics.median(fresh) / statistics.median(raw):.0%}; "
        f"starting the pair adds {started_ms:.0f} ms a match"
    )
    print(f"(c) referee with two SDK random bots, kept alive: {sdk_games:,.0f} games/s")


if __name__ == "__main__":
    main()
