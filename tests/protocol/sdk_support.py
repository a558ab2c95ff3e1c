"""Test support for the bot SDK: a scripted referee on a real ROUTER, bot processes, and
a driver that plays real engine games against connected bots.

Every wait is bounded; sockets, contexts and processes are closed in ``finally`` blocks.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import zmq

from protocol.codec import decode_map, parse_bot_message
from protocol.views import EventTracker, decision_kind, legal_to_wire, observation_to_wire
from referee.rules.actions import parse_action
from referee.rules.game import Seat, apply, legal_actions, observation, shuffled_deck
from referee.rules.match import draw_first_master, finish_game, new_match, start_game
from referee.rules.options import RulesOptions

__all__ = [
    "BOT_TIMEOUT",
    "BotProcess",
    "PlayedMatch",
    "ScriptedReferee",
    "bot_process",
    "kill_if_alive",
    "play_match",
    "python_script",
    "short_tmpdir",
    "wait_gone",
]

#: Longest wait for anything a bot should do promptly, in seconds.
BOT_TIMEOUT = 10.0


@contextmanager
def short_tmpdir() -> Iterator[Path]:
    """A private directory with a short path (ipc paths are limited to ~107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="aegis-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class ScriptedReferee:
    """The referee's ROUTER, scripted by a test: send maps, receive maps, bounded waits.

    Every bot message received is decoded and validated strictly with the protocol's own
    pydantic models, so a test also checks that the SDK sends only valid messages.
    """

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.next_id = 100
        self._context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self._socket = self._bind()

    def _bind(self) -> zmq.Socket[bytes]:
        socket = self._context.socket(zmq.ROUTER)
        socket.setsockopt(zmq.LINGER, 0)
        try:
            socket.bind(self.endpoint)
        except zmq.ZMQError:
            socket.close(linger=0)
            raise
        return socket

    def close(self) -> None:
        """Close the socket and the context."""
        self._socket.close(linger=0)
        self._context.term()

    def __enter__(self) -> ScriptedReferee:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def restart(self) -> None:
        """Close the ROUTER and bind a fresh one on the same endpoint: a referee restart."""
        self._socket.close(linger=0)
        self._socket = self._bind()

    def send_raw(self, identity: bytes, *frames: bytes) -> None:
        """Send frames as they are to one bot."""
        self._socket.send_multipart([identity, *frames])

    def send(self, identity: bytes, kind: str, **fields: Any) -> int:
        """Send a message (envelope added) to one bot; return its id."""
        message_id = self.next_id
        self.next_id += 1
        message = {"version": "1.0", "type": kind, "id": message_id, **fields}
        self.send_raw(identity, msgpack.packb(message))
        return message_id

    def receive(self, timeout: float = BOT_TIMEOUT) -> tuple[bytes, dict[str, Any]]:
        """The next message from any bot, validated; fail the test after ``timeout``."""
        received = self.poll(timeout)
        if received is None:
            raise AssertionError(f"no message from a bot within {timeout} s")
        return received

    def poll(self, timeout: float) -> tuple[bytes, dict[str, Any]] | None:
        """The next message from any bot, validated, or None after ``timeout`` seconds."""
        if not self._socket.poll(int(timeout * 1000)):
            return None
        frames = self._socket.recv_multipart()
        assert len(frames) == 2, f"a bot sent {len(frames) - 1} frames"
        identity, payload = frames
        parse_bot_message(payload)  # strict: raises on anything invalid
        return identity, decode_map(payload)

    def expect_nothing(self, duration: float) -> None:
        """Fail if any bot sends anything within ``duration`` seconds."""
        if self._socket.poll(int(duration * 1000)):
            raise AssertionError(f"unexpected message: {self._socket.recv_multipart()!r}")

    def request(
        self, identity: bytes, kind: str, timeout: float = BOT_TIMEOUT, **fields: Any
    ) -> dict[str, Any]:
        """Send a request and return the reply, checking that it names the request."""
        message_id = self.send(identity, kind, **fields)
        sender, reply = self.receive(timeout)
        assert sender == identity
        assert reply["reply_to"] == message_id, reply
        return reply

    def handshake(
        self, heartbeat_ms: int = 1000, timeout: float = BOT_TIMEOUT, **extra: Any
    ) -> tuple[bytes, dict[str, Any]]:
        """Wait for a hello and welcome it; return the bot's identity and its hello."""
        identity, hello = self.receive(timeout)
        assert hello["type"] == "hello", hello
        self.send(
            identity,
            "welcome",
            reply_to=hello["id"],
            protocol="1.0",
            referee="scripted-test-referee",
            heartbeat_ms=heartbeat_ms,
            max_message_bytes=65536,
            **extra,
        )
        return identity, hello


@dataclass
class BotProcess:
    """A started bot process and where its stderr goes."""

    process: subprocess.Popen[bytes]
    stderr_path: Path

    @property
    def stderr(self) -> str:
        """Everything the bot wrote on stderr so far."""
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def wait(self, timeout: float) -> int:
        """The exit code; fail the test if the bot has not exited within ``timeout``."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"the bot did not exit within {timeout} s; stderr:\n{self.stderr}"
            ) from None


@contextmanager
def bot_process(
    module: str,
    directory: Path,
    endpoint: str,
    *arguments: str,
    token: str | None = "secret-token",
    env: Mapping[str, str] | None = None,
    name: str = "bot",
) -> Iterator[BotProcess]:
    """Run ``python -m module`` as a bot (killed at the end if still running)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("AEGIS_")}
    environment["AEGIS_ENDPOINT"] = endpoint
    if token is not None:
        environment["AEGIS_TOKEN"] = token
    environment.update(env or {})
    stderr_path = directory / f"{name}.stderr"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", module, *arguments],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        yield BotProcess(process, stderr_path)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(BOT_TIMEOUT)


def wait_gone(pid: int, timeout: float) -> bool:
    """True once process ``pid`` has exited (or is a zombie) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


@contextmanager
def python_script(code: str, *arguments: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """Run ``code`` in a new Python process that can import this project; yield the process
    and the first line it prints (how such a script reports what it made). The process is
    SIGKILLed and reaped on the way out, whatever the test did to it."""
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(
        [sys.executable, "-c", code, *arguments],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(root)},
        text=True,
    )
    assert process.stdout is not None
    try:
        yield process, process.stdout.readline().strip()
    finally:
        process.kill()
        process.wait(BOT_TIMEOUT)
        process.stdout.close()


def kill_if_alive(pid: int) -> None:
    """SIGKILL a process this test started, if it is still there."""
    if not wait_gone(pid, 0):
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@dataclass
class PlayedMatch:
    """What the scripted referee saw of a match: every action, and the end."""

    actions: list[tuple[int, str]] = field(default_factory=list)
    decisions: int = 0
    games: int = 0
    winner: int | None = None


def play_match(
    referee: ScriptedReferee,
    bots: Sequence[bytes],
    seed: int,
    match_id: str = "m1",
    options: RulesOptions | None = None,
    extra_fields: Mapping[str, Any] | None = None,
) -> PlayedMatch:
    """Play a whole match with the rules engine between two connected bots (seat 0 is
    ``bots[0]``): match_start/ready, a decide/act per decision (each answer must be legal),
    match_end. ``extra_fields`` are added to every decide, as a newer referee might."""
    options = options or RulesOptions()
    rng = random.Random(seed)
    match = new_match(options, draw_first_master(rng))
    played = PlayedMatch()
    for seat, identity in enumerate(bots):
        ready = referee.request(
            identity,
            "match_start",
            match_id=match_id,
            seat=seat,
            opponent=f"opponent-of-{seat}",
            rules=options.to_dict(),
            time_control={"decision_ms": 1000, "bank_ms": None, "warmup_ms": 5000},
        )
        assert ready["type"] == "ready", ready
    trackers = (EventTracker(), EventTracker())
    while match.result is None:
        game = start_game(match, shuffled_deck(rng))
        while game.to_move is not None:
            seat = game.to_move
            seen = observation(game, seat)
            trackers[seat].observe(seen)
            legal = legal_actions(game)
            reply = referee.request(
                bots[seat],
                "decide",
                match_id=match_id,
                decision=decision_kind(seen),
                events=trackers[seat].take(),
                observation=observation_to_wire(seen),
                legal=legal_to_wire(legal),
                deadline_ms=1000,
                bank_ms=None,
                **(extra_fields or {}),
            )
            assert reply["type"] == "act", reply
            action = parse_action(reply["action"])
            assert action in legal, f"illegal {reply['action']!r} from seat {seat}"
            played.actions.append((seat, reply["action"]))
            played.decisions += 1
            game = apply(game, seat, action)
        for seat in (Seat.FIRST, Seat.SECOND):
            trackers[seat].observe(observation(game, seat))
        match = finish_game(match, game)
        played.games += 1
    result = match.result
    for seat, identity in enumerate(bots):
        referee.send(
            identity,
            "match_end",
            match_id=match_id,
            events=trackers[seat].take(),
            result={
                "winner": int(result.winner),
                "termination": result.termination.value,
                "scores": list(result.scores),
                "games": result.games,
                "forfeit": None,
            },
        )
    played.winner = int(result.winner)
    return played
