"""Remote bots: they dial in over tcp with CurveZMQ, and only registered keys are admitted."""

from __future__ import annotations

import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from typer.testing import CliRunner

from referee import peers
from referee.bots import BotSpec
from referee.bundled import BotNameError, resolve_bot
from referee.faults import FaultKind
from referee.listeners import RemoteListener, generate_keys, listen_problem
from referee.runner import MatchRunner
from referee.server import BotServer
from referee.time_control import TimeControl
from tests.processes import eventually
from tests.referee.bot_helpers import remote_bot
from tournaments.cli import app

SLOW_ONCE_BOT = Path(__file__).resolve().parents[1] / "bots" / "slow_once_bot.py"
RAWBOT = Path(__file__).resolve().parents[1] / "bots" / "rawbot.py"


@pytest.fixture
def referee_keys() -> tuple[str, str]:
    """A fresh referee key pair (public, secret)."""
    return generate_keys()


@pytest.fixture
def runner(referee_keys: tuple[str, str]) -> Iterator[MatchRunner]:
    """A runner that also listens on loopback tcp for remote bots."""
    public, secret = referee_keys
    listener = RemoteListener("127.0.0.1", 0, public, secret)
    with MatchRunner(
        time_control=TimeControl(decision_ms=1000, warmup_ms=5000), remote=listener
    ) as match_runner:
        yield match_runner


def test_registered_remote_bot_plays_matches(
    runner: MatchRunner, referee_keys: tuple[str, str]
) -> None:
    keys = generate_keys()
    endpoint = runner.server.remote_endpoint
    assert endpoint is not None
    assert endpoint.startswith("tcp://127.0.0.1:")
    process = remote_bot(endpoint, referee_keys[0], keys)
    try:
        spec = BotSpec("far-away", (), curve_public_key=keys[0])
        reports = [runner.play([spec, resolve_bot("first")], seed=seed) for seed in (1, 2)]
        for report in reports:
            assert report.faults == []
            assert report.match is not None
            assert report.match.result is not None
        # The same connection served both matches: the referee never started a process.
        assert runner._sessions["far-away"][0].process is None
    finally:
        runner.close()
        assert process.wait(5) == 0  # shutdown reaches remote bots too


@pytest.mark.skipif(listen_problem("::1", 0) is not None, reason="no IPv6 loopback here")
def test_a_remote_bot_over_ipv6(referee_keys: tuple[str, str]) -> None:
    public, secret = referee_keys
    keys = generate_keys()
    with MatchRunner(remote=RemoteListener("::1", 0, public, secret)) as runner:
        endpoint = runner.server.remote_endpoint
        assert endpoint is not None
        assert endpoint.startswith("tcp://[::1]:")
        process = remote_bot(endpoint, public, keys)
        try:
            runner.remote_connect_s = 10.0
            report = runner.play(
                [BotSpec("v6", (), curve_public_key=keys[0]), resolve_bot("first")], 1
            )
            assert report.faults == []
        finally:
            runner.close()
            assert process.wait(10) == 0


def test_a_remote_bot_that_vanishes_is_awaited_again(referee_keys: tuple[str, str]) -> None:
    """Killed between matches, a remote bot forfeits the matches it misses only after each
    has waited for it, and plays again once a new process of it dials in."""
    public, secret = referee_keys
    keys = generate_keys()
    listener = RemoteListener("127.0.0.1", 0, public, secret)
    # A new bot process may take many seconds to start and dial in on a busy machine.
    with MatchRunner(remote=listener, heartbeat_ms=500, remote_connect_s=30.0) as runner:
        endpoint = runner.server.remote_endpoint
        assert endpoint is not None
        spec = BotSpec("far", (), curve_public_key=keys[0])
        first = remote_bot(endpoint, public, keys)
        second = None
        try:
            assert runner.play([spec, resolve_bot("first")], seed=1).faults == []
            connection = runner._sessions["far"][0].connection
            first.kill()
            first.wait(5)
            # The referee's ZeroMQ notices the closed connection.
            assert eventually(lambda: peers.is_dropped(connection), 10)
            runner.remote_connect_s = 1.0  # no bot is coming: a short wait
            started = time.monotonic()
            missed = runner.play([spec, resolve_bot("first")], seed=2)
            assert time.monotonic() - started >= 0.9  # it waited for the bot to dial in
            assert missed.forfeit_fault is not None
            assert missed.forfeit_fault.kind is FaultKind.HANDSHAKE
            runner.remote_connect_s = 30.0
            second = remote_bot(endpoint, public, keys)
            back = runner.play([spec, resolve_bot("first")], seed=3)
            assert back.faults == []
            assert runner.counters["far"]["restarts"] == 0
        finally:
            runner.close()
            for process in (first, second):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait(5)


def test_a_remote_bot_that_times_out_keeps_its_connection(referee_keys: tuple[str, str]) -> None:
    """A remote bot cannot be restarted: after a timeout the referee keeps its connection
    (never a shutdown, which would end it for good), and once it has caught up it plays."""
    public, secret = referee_keys
    keys = generate_keys()
    listener = RemoteListener("127.0.0.1", 0, public, secret)
    # Its 3 s decision times out (2.3 s allowed); the other bot, started afresh for every
    # match, has 2 s to say hello, enough on a loaded machine.
    control = TimeControl(decision_ms=300, warmup_ms=2000)
    with MatchRunner(time_control=control, remote=listener, heartbeat_ms=500) as runner:
        endpoint = runner.server.remote_endpoint
        assert endpoint is not None
        process = remote_bot(endpoint, public, keys, SLOW_ONCE_BOT)
        try:
            spec = BotSpec("slow", (), curve_public_key=keys[0])
            runner.remote_connect_s = 10.0
            first = runner.play([spec, resolve_bot("first")], seed=1)
            assert first.forfeit_fault is not None
            assert first.forfeit_fault.kind is FaultKind.TIMEOUT
            session = runner._sessions["slow"][0]
            reports = []
            for seed in range(2, 7):
                time.sleep(0.5)  # idle longer than the heartbeat: no ping decides its fate
                reports.append(runner.play([spec, resolve_bot("first")], seed=seed))
                assert process.poll() is None, "the referee ended the remote bot"
            assert reports[-1].faults == []
            assert reports[-1].match is not None
            assert reports[-1].match.result is not None
            assert runner._sessions["slow"] == [session]  # the same connection throughout
            assert runner.counters["slow"]["restarts"] == 0
        finally:
            runner.close()
            try:
                assert process.wait(10) == 0  # the shutdown at the end does reach it
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait(5)


def test_a_void_match_does_not_end_a_remote_bot(referee_keys: tuple[str, str]) -> None:
    """Both bots fail before the first game (a void match): the started one is stopped, the
    remote one keeps its connection and plays the next match."""
    public, secret = referee_keys
    keys = generate_keys()
    listener = RemoteListener("127.0.0.1", 0, public, secret)
    control = TimeControl(decision_ms=1000, warmup_ms=500)
    with MatchRunner(time_control=control, remote=listener, remote_connect_s=10.0) as runner:
        endpoint = runner.server.remote_endpoint
        assert endpoint is not None
        process = remote_bot(
            endpoint, public, keys, SLOW_ONCE_BOT, "--sleep", "0", "--sleep-at-start", "1.5"
        )
        try:
            spec = BotSpec("far", (), curve_public_key=keys[0])
            mute = BotSpec("mute", (sys.executable, str(RAWBOT), "--fault", "no_ready"))
            void = runner.play([spec, mute], seed=1)
            assert void.void
            assert {fault.bot for fault in void.faults} == {"far", "mute"}
            time.sleep(1.5)  # its late ready comes, and is discarded
            assert process.poll() is None, "the referee ended the remote bot"
            # A started bot's hello takes more than 500 ms on a loaded machine.
            runner.time_control = TimeControl(decision_ms=1000, warmup_ms=5000)
            played = runner.play([spec, resolve_bot("first")], seed=2)
            assert played.faults == []
            assert played.match is not None
            assert played.match.result is not None
        finally:
            runner.close()
            try:
                assert process.wait(10) == 0
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait(5)


def test_unknown_key_is_refused(runner: MatchRunner, referee_keys: tuple[str, str]) -> None:
    registered = generate_keys()
    intruder = generate_keys()
    endpoint = runner.server.remote_endpoint
    assert endpoint is not None
    process = remote_bot(endpoint, referee_keys[0], intruder)
    try:
        spec = BotSpec("expected", (), curve_public_key=registered[0])
        # A started bot's hello can take more than a second on a loaded machine.
        control = TimeControl(decision_ms=1000, warmup_ms=5000)
        runner.time_control = control
        report = runner.play([spec, resolve_bot("first")], seed=1)
        assert report.forfeit_fault is not None
        assert report.forfeit_fault.kind is FaultKind.HANDSHAKE
        assert report.winner == 1
        assert runner.server.stray_messages == 0  # CurveZMQ refused it before any message
    finally:
        process.kill()
        process.wait(5)


def test_remote_bot_spec_from_text() -> None:
    public, _secret = generate_keys()
    spec = resolve_bot(f"remote:{public}")
    assert spec.is_remote
    assert spec.curve_public_key == public
    with pytest.raises(BotNameError, match="40-character"):
        resolve_bot("remote:short")


def test_keygen_writes_a_usable_key_pair(tmp_path: Path) -> None:
    path = tmp_path / "referee.key"
    result = CliRunner().invoke(app, ["keygen", str(path)])
    assert result.exit_code == 0, result.output
    assert (path.stat().st_mode & 0o777) == 0o600
    public = Path(f"{path}.pub").read_text().strip()
    assert len(public) == 40
    assert public in result.output
    again = CliRunner().invoke(app, ["keygen", str(path)])
    assert again.exit_code == 2
    assert "exists" in again.output


def test_match_needs_a_listener_for_remote_bots() -> None:
    public, _secret = generate_keys()
    result = CliRunner().invoke(app, ["match", f"remote:{public}", "first"])
    assert result.exit_code == 2
    assert "--listen" in result.output


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something else listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_a_busy_port_fails_cleanly(busy_port: int, referee_keys: tuple[str, str]) -> None:
    public, secret = referee_keys
    assert listen_problem("127.0.0.1", busy_port) == (
        f"cannot listen on 127.0.0.1:{busy_port}: Address already in use"
    )
    assert listen_problem("127.0.0.1", 0) is None
    assert listen_problem("192.0.2.1", 7100) == (  # an address of no machine here
        "cannot listen on 192.0.2.1:7100: Cannot assign requested address"
    )
    assert listen_problem("127.0.0.1", 70000) == (
        "cannot listen on 127.0.0.1:70000: a port is 0 to 65535"
    )
    made: list[str] = []
    real_mkdtemp = tempfile.mkdtemp

    def recorded_mkdtemp(*args: Any, **kwargs: Any) -> str:
        made.append(real_mkdtemp(*args, **kwargs))
        return made[-1]

    threads = threading.active_count()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "mkdtemp", recorded_mkdtemp)
        with pytest.raises(zmq.ZMQError):
            BotServer(remote=RemoteListener("127.0.0.1", busy_port, public, secret))
    assert made  # the server made its ipc directory …
    assert not any(Path(path).exists() for path in made)  # … and removed it
    assert threading.active_count() == threads  # and stopped the key checker's thread


def test_a_bad_key_fails_without_hanging(referee_keys: tuple[str, str]) -> None:
    public, _secret = referee_keys
    with pytest.raises(zmq.ZMQError):
        BotServer(remote=RemoteListener("127.0.0.1", 0, public, "not a key"))


def test_match_refuses_a_busy_port(busy_port: int, tmp_path: Path) -> None:
    key = tmp_path / "referee.key"
    assert CliRunner().invoke(app, ["keygen", str(key)]).exit_code == 0
    public, _secret = generate_keys()
    listen = ["--listen", f"127.0.0.1:{busy_port}", "--key-file", str(key)]
    result = CliRunner().invoke(app, ["match", f"remote:{public}", "first", *listen])
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{busy_port}: Address already in use" in result.output


def test_the_listener_secret_is_not_in_its_repr(referee_keys: tuple[str, str]) -> None:
    public, secret = referee_keys
    listener = RemoteListener("127.0.0.1", 7100, public, secret)
    assert secret not in repr(listener)
    assert public in repr(listener)


class ShutdownWitness:
    """A remote bot on a thread: it dials in, says hello, and when ``shutdown`` comes it
    notes the moment and either closes its connection after ``linger_s`` (an exiting bot
    slowed by a busy machine), or, with ``redial``, acts as if the shutdown had not reached
    it: it dials in again and says hello anew, then drops the first connection, and closes
    the second after the answer to that hello."""

    def __init__(
        self, endpoint: str, server_key: str, keys: tuple[str, str], *, linger_s: float = 0.0
    ) -> None:
        self.endpoint, self.server_key, self.keys = endpoint, server_key, keys
        self.linger_s = linger_s
        self.redial = False
        self.shutdowns = 0
        self.closed_at: float | None = None
        self.context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _connect(self) -> zmq.Socket[bytes]:
        dealer = self.context.socket(zmq.DEALER)
        dealer.linger = 0
        dealer.curve_serverkey = self.server_key.encode()
        dealer.curve_publickey = self.keys[0].encode()
        dealer.curve_secretkey = self.keys[1].encode()
        dealer.connect(self.endpoint)
        hello = {
            "version": "1.1",
            "id": 1,
            "type": "hello",
            "versions": ["1.1"],
            "name": "witness",
            "token": "",
        }
        dealer.send(msgpack.packb(hello))
        return dealer

    def _run(self) -> None:
        dealer = self._connect()
        while dealer.poll(30_000):
            message = msgpack.unpackb(dealer.recv())
            if message.get("type") != "shutdown":
                continue
            self.shutdowns += 1
            if self.redial and self.shutdowns == 1:
                first, dealer = dealer, self._connect()
                if dealer.poll(30_000):  # the answer to the new hello
                    self.shutdowns += msgpack.unpackb(dealer.recv()).get("type") == "shutdown"
                first.close(0)
            time.sleep(self.linger_s)
            break
        self.closed_at = time.monotonic()
        dealer.close(0)

    def __enter__(self) -> ShutdownWitness:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.thread.join(40)
        self.context.destroy(linger=0)


def _witnessed_server(public: str, secret: str) -> BotServer:
    return BotServer(remote=RemoteListener("127.0.0.1", 0, public, secret))


@pytest.mark.parametrize("redial", [False, True], ids=["slow-exit", "redial"])
def test_a_remote_bots_shutdown_is_confirmed(referee_keys: tuple[str, str], redial: bool) -> None:
    """The referee waits for a remote bot told ``shutdown`` to close its connection (an
    exit slower than the socket's linger is not cut short), and tells a bot that dials in
    again meanwhile once more: a remote bot left behind would dial a closed port for
    ever."""
    public, secret = referee_keys
    keys = generate_keys()
    with _witnessed_server(public, secret) as server:
        assert server.remote_endpoint is not None
        session = server.expect_remote(BotSpec("witness", (), curve_public_key=keys[0]))
        with ShutdownWitness(server.remote_endpoint, public, keys, linger_s=1.5) as witness:
            witness.redial = redial
            assert server.handshake(session, 20.0) is None
            server.stop_bots([session], "referee closing")
            stopped = time.monotonic()
            assert witness.closed_at is not None, "stop_bots returned before the bot left"
            assert witness.closed_at <= stopped
            assert witness.shutdowns == (2 if redial else 1)
