"""Shared by the tests of the bundled bots written in other languages (``sample_bots/js``,
``sample_bots/c``): real matches over the protocol with the real referee, every record
verified by the engine, and a scripted conversation with one bot process, message by
message."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq

from referee.bots import BotSpec
from referee.bundled import resolve_bot, sample_bots_dir
from referee.conformance import REJECT_EXIT_SECONDS
from referee.listeners import RemoteListener, generate_keys
from referee.records import dumps_line, verify_lines
from referee.rules.options import RulesOptions
from referee.runner import MatchReport, MatchRunner
from referee.time_control import TimeControl

#: A generous warm-up: the first start of a bot may install or build it.
TIME_CONTROL = TimeControl(decision_ms=1000, warmup_ms=20000)
#: Short matches for measuring strength: the first to 5 points.
SHORT = RulesOptions(target_score=5)


def bot_dir(name: str) -> Path:
    """The folder of a bundled bot."""
    return sample_bots_dir() / name


def skip_unless_ci(reason: str) -> None:
    """Skip for want of a toolchain, except in CI, where ``.ci/run`` installs it: fail there."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}, although .ci/run should have installed it")
    pytest.skip(reason)


def c_toolchain_missing() -> str | None:
    """What is missing to build the C bot, or None."""
    for program in ("make", "cc", "pkg-config"):
        if shutil.which(program) is None:
            return f"{program} is not installed"
    for modules in (["libzmq"], ["msgpack-c", "msgpack"]):
        found = any(
            subprocess.run(["pkg-config", "--exists", module], check=False).returncode == 0
            for module in modules
        )
        if not found:
            return f"the {modules[0]} development files are not installed"
    return None


def check(report: MatchReport) -> None:
    """A finished match without faults whose record the engine re-simulates exactly."""
    assert report.faults == [], [fault.describe() for fault in report.faults]
    assert report.match is not None
    assert report.match.result is not None
    lines = [dumps_line(line) for line in report.record_lines(1)]
    verified = verify_lines(enumerate(lines, 1))
    assert verified.ok, verified.disagreement
    assert verified.games >= 1


def play_both_seats(
    bot: str, opponent: str, seeds: list[int], log_dir: Path, options: RulesOptions | None = None
) -> list[MatchReport]:
    """For each seed a duplicate pair: the same deals with ``bot`` in seat 0, then in seat 1.
    Every match is checked with :func:`check`."""
    specs = [resolve_bot(bot), resolve_bot(opponent)]
    if bot == opponent:
        specs = [resolve_bot(bot, f"{bot}-a"), resolve_bot(bot, f"{bot}-b")]
    reports = []
    with MatchRunner(options=options, time_control=TIME_CONTROL, log_dir=log_dir) as runner:
        for seed in seeds:
            for order, match_specs in enumerate((specs, specs[::-1])):
                report = runner.play(match_specs, seed, match_id=f"{seed}-{order}")
                check(report)
                reports.append(report)
    return reports


def wins(reports: list[MatchReport], name: str) -> int:
    """Matches won by the bot called ``name``."""
    return sum(
        1
        for report in reports
        if report.winner is not None and report.players[report.winner] == name
    )


class RawReferee:
    """A scripted referee's ``ROUTER`` on ipc, for checking one bot process message by message
    (the rules of ``protocol/SPEC.md`` that a match does not exercise)."""

    def __init__(self, directory: Path) -> None:
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.linger = 0
        self.endpoint = f"ipc://{directory}/referee"
        self.socket.bind(self.endpoint)
        self.identity = b""

    def receive(self, timeout_ms: int = 20000) -> dict[str, Any]:
        """The next message: exactly one frame holding one msgpack map."""
        assert self.socket.poll(timeout_ms), "no message from the bot"
        self.identity, *frames = self.socket.recv_multipart()
        assert len(frames) == 1, f"{len(frames)} frames"
        message = msgpack.unpackb(frames[0])
        assert isinstance(message, dict)
        return message

    def send(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else msgpack.packb(message)
        self.socket.send_multipart([self.identity, data])

    def close(self) -> None:
        self.socket.close()
        self.context.term()


@contextmanager
def raw_referee() -> Iterator[RawReferee]:
    """A :class:`RawReferee` in a private directory with a short path (ipc paths are short)."""
    directory = Path(tempfile.mkdtemp(prefix="aegis-", dir="/tmp"))
    referee = RawReferee(directory)
    try:
        yield referee
    finally:
        referee.close()
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def bot_process(
    name: str,
    endpoint: str,
    arguments: tuple[str, ...] = (),
    environment: dict[str, str] | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """A bundled bot's ``run`` with ``AEGIS_ENDPOINT`` and ``AEGIS_TOKEN`` set (or with
    ``environment``); killed at the end if it is still running."""
    if environment is None:
        environment = {**os.environ, "AEGIS_ENDPOINT": endpoint, "AEGIS_TOKEN": "s3cret"}
    process = subprocess.Popen(
        [str(bot_dir(name) / "run"), *arguments],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


def vector(name: str) -> dict[str, Any]:
    """A golden vector of ``protocol/vectors`` as a map."""
    vectors = Path(__file__).resolve().parents[2] / "protocol" / "vectors"
    data: dict[str, Any] = json.loads((vectors / f"{name}.json").read_text())
    return data


def check_conversation(name: str) -> None:
    """A whole conversation with the bot ``name``, message by message."""
    with raw_referee() as referee, bot_process(name, referee.endpoint) as process:
        hello = referee.receive()
        assert hello["type"] == "hello"
        assert hello["version"] == "1.2"  # the newest version it speaks, until welcomed
        assert {"1.2", "1.1", "1.0"} <= set(hello["versions"])
        assert hello["token"] == "s3cret"
        ids = [hello["id"]]
        # Unknown fields are ignored, in the envelope and inside maps.
        welcome = {**vector("welcome"), "reply_to": hello["id"], "motto": "ignore me"}
        referee.send(welcome)
        referee.send({**vector("match_start"), "id": 2, "future": {"nested": [1, 2]}})
        ready = referee.receive()
        assert (ready["type"], ready["reply_to"]) == ("ready", 2)
        for number, request in enumerate(("decide_exchange", "decide_bid", "decide_play"), 3):
            decide = vector(request)
            referee.send({**decide, "id": number})
            act = referee.receive()
            assert (act["type"], act["reply_to"]) == ("act", number)
            assert act["action"] in decide["legal"]
            ids.append(act["id"])
        referee.send({"version": "1.1", "type": "gossip", "id": 7, "text": "hi"})
        error = referee.receive()
        assert (error["type"], error["code"], error["reply_to"]) == ("error", "unknown_type", 7)
        referee.send(b"\xc1")  # never valid msgpack: the sample bots answer error malformed
        assert referee.receive()["code"] == "malformed"
        referee.send({**vector("ping"), "id": 8})
        pong = referee.receive()
        assert (pong["type"], pong["reply_to"]) == ("pong", 8)
        ids.extend((ready["id"], error["id"], pong["id"]))
        assert len(set(ids)) == len(ids)
        assert pong["id"] > error["id"] > ready["id"] > hello["id"]
        referee.send({**vector("shutdown"), "id": 9})
        assert process.wait(timeout=1) == 0


def check_reject_and_arguments(name: str) -> None:
    """``--endpoint`` and ``--token`` override the environment, with their value after a space
    or after ``=``, and an unknown option takes no value (SPEC section 1); after ``reject``
    the bot exits with a non-zero status within the time ``check-bot`` allows."""
    with raw_referee() as referee:
        forms = [
            ("--endpoint", referee.endpoint, "--token", "from-arguments"),
            ("--colour", f"--endpoint={referee.endpoint}", "--token=from-arguments", "blue"),
        ]
        for arguments in forms:
            with bot_process(name, "ipc:///nonexistent/endpoint", arguments) as process:
                hello = referee.receive()
                assert hello["token"] == "from-arguments", arguments
                referee.send({**vector("reject"), "reply_to": hello["id"]})
                assert process.wait(timeout=REJECT_EXIT_SECONDS) != 0


def remote_environment(endpoint: str, server_key: str, keys: tuple[str, str]) -> dict[str, str]:
    """A remote bot's environment: the endpoint and the CurveZMQ keys, no token."""
    environment = {key: value for key, value in os.environ.items() if key != "AEGIS_TOKEN"}
    environment.update(
        AEGIS_ENDPOINT=endpoint,
        AEGIS_SERVER_KEY=server_key,
        AEGIS_PUBLIC_KEY=keys[0],
        AEGIS_SECRET_KEY=keys[1],
    )
    return environment


def remote_process(
    name: str, endpoint: str, server_key: str, keys: tuple[str, str]
) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    """A bundled bot started by itself, as its author would on another machine."""
    return bot_process(name, endpoint, environment=remote_environment(endpoint, server_key, keys))


def check_remote_matches(name: str, log_dir: Path) -> None:
    """The bot dials in over tcp with CurveZMQ to a listening referee (as ``aegis-ref match
    --listen`` runs it), plays both seats against ``random``, and exits at the shutdown."""
    public, secret = generate_keys()
    keys = generate_keys()
    listener = RemoteListener("127.0.0.1", 0, public, secret)
    with MatchRunner(time_control=TIME_CONTROL, log_dir=log_dir, remote=listener) as runner:
        endpoint = runner.server.remote_endpoint
        assert endpoint is not None
        with remote_process(name, endpoint, public, keys) as process:
            spec = BotSpec(f"remote-{name}", (), curve_public_key=keys[0])
            runner.remote_connect_s = 20.0
            for order, specs in enumerate(([spec, resolve_bot("random")], None)):
                specs = specs or [resolve_bot("random"), spec]
                check(runner.play(specs, seed=5, match_id=f"remote-{order}"))
            runner.close()
            assert process.wait(timeout=10) == 0


def check_remote_reconnects(name: str) -> None:
    """A remote bot whose connection drops dials in again and says hello anew."""
    public, secret = generate_keys()
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()

    def listening(port: int) -> tuple[zmq.Socket[bytes], int]:
        socket = context.socket(zmq.ROUTER)
        socket.linger = 0
        socket.curve_server = True
        socket.curve_secretkey = secret.encode()
        socket.curve_publickey = public.encode()
        if not port:
            return socket, socket.bind_to_random_port("tcp://127.0.0.1")
        # The port again: the closed socket lets go of it in ZeroMQ's own thread, a moment
        # after close() returns.
        deadline = time.monotonic() + 5.0
        while True:
            try:
                socket.bind(f"tcp://127.0.0.1:{port}")
            except zmq.ZMQError:
                if time.monotonic() > deadline:
                    socket.close(0)
                    raise
                time.sleep(0.05)
                continue
            return socket, port

    def hello(socket: zmq.Socket[bytes]) -> tuple[bytes, dict[str, Any]]:
        assert socket.poll(20000), "no hello from the bot"
        identity, payload = socket.recv_multipart()
        message = msgpack.unpackb(payload)
        assert message["type"] == "hello"
        assert message.get("token", "") == ""
        return identity, message

    first, port = listening(0)
    try:
        with remote_process(name, f"tcp://127.0.0.1:{port}", public, generate_keys()) as process:
            identity, message = hello(first)
            welcome = {**vector("welcome"), "reply_to": message["id"]}
            first.send_multipart([identity, msgpack.packb(welcome)])
            time.sleep(0.2)
            first.close(0)  # the connection drops: the referee's machine restarted, say
            second, _ = listening(port)
            try:
                identity, _message = hello(second)
                second.send_multipart([identity, msgpack.packb({**vector("shutdown"), "id": 2})])
                assert process.wait(timeout=5) == 0
            finally:
                second.close(0)
    finally:
        first.close(0)
        context.destroy(linger=0)  # a socket left by a failure must not hang the test
