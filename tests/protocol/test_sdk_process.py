"""The bot SDK end to end: real bot processes, real ZeroMQ sockets on ipc, a scripted
referee (and, once, the real match runner)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from protocol.examples.first_legal import FirstLegalBot
from protocol.examples.random_bot import RandomBot
from protocol.sdk import EXIT_REJECTED
from protocol.version import PROTOCOL_VERSION
from referee.bots import BotSpec
from referee.rules.options import RulesOptions
from referee.runner import MatchRunner
from sample_bots.first.bot import FirstBot
from sample_bots.random.bot import BundledRandomBot
from tests.processes import MachineWatch
from tests.protocol.sdk_support import (
    BOT_TIMEOUT,
    ScriptedReferee,
    bot_process,
    kill_if_alive,
    play_match,
    wait_gone,
)

RANDOM_BOT = "protocol.examples.random_bot"
FIRST_LEGAL_BOT = "protocol.examples.first_legal"


@pytest.fixture
def opponent(directory: Path, referee: ScriptedReferee) -> Iterator[Callable[[], bytes]]:
    """Starts a first-legal bot on demand (stopped at the end) and returns its identity."""
    with ExitStack() as stack:

        def start() -> bytes:
            stack.enter_context(
                bot_process(FIRST_LEGAL_BOT, directory, referee.endpoint, name="opponent")
            )
            return referee.handshake()[0]

        yield start


def shut_down(referee: ScriptedReferee, identity: bytes, process: subprocess.Popen[bytes]) -> None:
    """Send shutdown; the bot must exit with code 0 within one second (the spec's limit),
    less the time the machine kept runnable tasks waiting for a CPU."""
    referee.send(identity, "shutdown", reason="end of test")
    watch = MachineWatch()
    assert process.wait(BOT_TIMEOUT) == 0
    assert watch.unstalled() < 1.0, (watch.elapsed(), watch.stalled())


def test_random_bot_plays_a_whole_match_against_first_legal(
    directory: Path, referee: ScriptedReferee
) -> None:
    with (
        bot_process(RANDOM_BOT, directory, referee.endpoint, "--seed", "7", name="r") as rand,
        bot_process(FIRST_LEGAL_BOT, directory, referee.endpoint, token="other", name="f") as first,
    ):
        hellos = [referee.handshake() for _ in range(2)]
        by_name = {hello["name"]: identity for identity, hello in hellos}
        assert set(by_name) == {"random", "first-legal"}
        for _identity, hello in hellos:
            assert hello["versions"] == [PROTOCOL_VERSION]
            assert hello["id"] == 1
        assert {hello["token"] for _identity, hello in hellos} == {"secret-token", "other"}
        bots = [by_name["random"], by_name["first-legal"]]
        played = play_match(referee, bots, seed=3)
        assert played.winner in (0, 1)
        assert played.games >= 1
        assert played.decisions >= 10
        # Bot processes live across matches: a second match on the same connections.
        second = play_match(referee, bots[::-1], seed=4, match_id="m2")
        assert second.games >= 1
        for identity, process in ((bots[0], rand.process), (bots[1], first.process)):
            shut_down(referee, identity, process)
        assert "Traceback" not in rand.stderr + first.stderr


def test_random_bot_is_reproducible_from_its_seed(directory: Path) -> None:
    transcripts = []
    for run_number in range(2):
        with (
            ScriptedReferee(f"ipc://{directory}/referee{run_number}") as referee,
            bot_process(
                RANDOM_BOT,
                directory,
                referee.endpoint,
                env={"AEGIS_SEED": "11"},
                token="a",
                name="a",
            ) as one,
            bot_process(
                RANDOM_BOT, directory, referee.endpoint, "--seed", "12", token="b", name="b"
            ) as two,
        ):
            # Which process connects first is a race: tell them apart by their tokens.
            by_token = {
                hello["token"]: identity
                for identity, hello in (referee.handshake(), referee.handshake())
            }
            identities = [by_token["a"], by_token["b"]]
            played = play_match(referee, identities, seed=5)
            transcripts.append(played.actions)
            for identity in identities:
                referee.send(identity, "shutdown", reason="done")
            assert one.wait(BOT_TIMEOUT) == 0
            assert two.wait(BOT_TIMEOUT) == 0
    assert transcripts[0] == transcripts[1]


def test_ping_unknown_type_extra_fields_and_shutdown(
    directory: Path, referee: ScriptedReferee, opponent: Callable[[], bytes]
) -> None:
    with bot_process(RANDOM_BOT, directory, referee.endpoint) as bot:
        identity, hello = referee.handshake(future_welcome_field={"nested": [1, 2]})
        assert hello["name"] == "random"
        pong = referee.request(identity, "ping")
        assert pong["type"] == "pong"
        error = referee.request(identity, "gossip", news="unknown types get an error")
        assert error["type"] == "error"
        assert error["code"] == "unknown_type"
        pong = referee.request(identity, "ping", unknown_field=[{"deep": None}])
        assert pong["type"] == "pong"
        # Unknown fields everywhere in a whole match are ignored.
        played = play_match(
            referee,
            [identity, opponent()],
            seed=9,
            options=RulesOptions(target_score=3),
            extra_fields={"hint": "a field from protocol 1.1", "deadline_at": 12345},
        )
        assert played.decisions > 0
        # A shutdown with an unknown field still shuts down, within a second.
        referee.send(identity, "shutdown", reason="end", more={"x": 1})
        watch = MachineWatch()
        assert bot.wait(BOT_TIMEOUT) == 0
        assert watch.unstalled() < 1.0
        assert "unknown type 'gossip'" in bot.stderr


def test_reject_on_wrong_version_exits_non_zero(directory: Path, referee: ScriptedReferee) -> None:
    with bot_process(RANDOM_BOT, directory, referee.endpoint) as bot:
        identity, hello = referee.receive()
        referee.send(
            identity,
            "reject",
            reply_to=hello["id"],
            code="version",
            reason="this referee speaks only 2.0",
            supported_versions=["2.0"],
        )
        watch = MachineWatch()
        assert bot.wait(BOT_TIMEOUT) == EXIT_REJECTED
        assert watch.unstalled() < 1.0
        assert "rejected" in bot.stderr
        assert "2.0" in bot.stderr


def test_reconnects_and_says_hello_again_after_a_referee_restart(
    directory: Path, referee: ScriptedReferee, opponent: Callable[[], bytes]
) -> None:
    with bot_process(RANDOM_BOT, directory, referee.endpoint) as bot:
        identity, _hello = referee.handshake()
        assert referee.request(identity, "ping")["type"] == "pong"
        referee.restart()  # the ROUTER closed and bound again on the same ipc endpoint
        watch = MachineWatch()
        new_identity, hello = referee.handshake(timeout=5.0)
        assert watch.unstalled() < 1.0  # noticed at once: the connection dropped
        assert hello["id"] == 1  # ids start again on the new connection
        assert hello["token"] == "secret-token"
        assert new_identity != identity
        assert referee.request(new_identity, "ping")["type"] == "pong"
        played = play_match(
            referee,
            [new_identity, opponent()],
            seed=2,
            options=RulesOptions(target_score=3),
        )
        assert played.games >= 1
        shut_down(referee, new_identity, bot.process)
        assert "lost the connection" in bot.stderr


def test_reconnects_when_a_pinging_referee_falls_silent(
    directory: Path, referee: ScriptedReferee
) -> None:
    with bot_process(RANDOM_BOT, directory, referee.endpoint) as bot:
        # heartbeat 100 ms: a referee that pings is given up after 3 x 0.1 s + 1 s of silence.
        identity, _hello = referee.handshake(heartbeat_ms=100)
        assert referee.request(identity, "ping")["type"] == "pong"
        silent = MachineWatch()
        new_identity, hello = referee.handshake(heartbeat_ms=100, timeout=5.0)
        assert silent.elapsed() > 1.2
        assert silent.unstalled() < 3.0
        assert hello["id"] == 1
        assert new_identity != identity
        assert referee.request(new_identity, "ping")["type"] == "pong"
        shut_down(referee, new_identity, bot.process)
        assert "silent for" in bot.stderr


def test_a_referee_that_never_pings_is_not_given_up(
    directory: Path, referee: ScriptedReferee
) -> None:
    with bot_process(RANDOM_BOT, directory, referee.endpoint) as bot:
        identity, _hello = referee.handshake(heartbeat_ms=100)
        referee.expect_nothing(1.8)  # longer than 3 heartbeats and the margin
        assert referee.request(identity, "ping")["type"] == "pong"
        shut_down(referee, identity, bot.process)


def test_a_bot_whose_parent_dies_exits(directory: Path, referee: ScriptedReferee) -> None:
    pidfile = directory / "bot.pid"
    # The parent starts the bot (a started bot: it has a token) and then just waits.
    launcher = (
        "import os, subprocess, sys, time\n"
        f"bot = subprocess.Popen([sys.executable, '-m', {RANDOM_BOT!r}])\n"
        f"open({str(pidfile)!r}, 'w').write(str(bot.pid))\n"
        "time.sleep(60)\n"
    )
    environment = {key: value for key, value in os.environ.items() if key[:6] != "AEGIS_"}
    environment |= {"AEGIS_ENDPOINT": referee.endpoint, "AEGIS_TOKEN": "started"}
    parent = subprocess.Popen(
        [sys.executable, "-c", launcher], env=environment, stderr=subprocess.DEVNULL
    )
    bot_pid = None
    try:
        identity, _hello = referee.handshake()
        bot_pid = int(pidfile.read_text())
        assert referee.request(identity, "ping")["type"] == "pong"
        parent.send_signal(signal.SIGKILL)  # as if the referee were killed
        parent.wait(BOT_TIMEOUT)
        assert wait_gone(bot_pid, 2.0), "the orphaned bot lingers"
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.wait(BOT_TIMEOUT)
        if bot_pid is not None:
            kill_if_alive(bot_pid)


def test_sdk_bots_play_against_the_real_match_runner(directory: Path) -> None:
    specs = [
        BotSpec("random", (sys.executable, "-m", RANDOM_BOT, "--seed", "1"), keep_alive=True),
        BotSpec("first", (sys.executable, "-m", FIRST_LEGAL_BOT), keep_alive=True),
    ]
    with MatchRunner(heartbeat_ms=200, log_dir=directory) as runner:
        for seed in range(3):
            report = runner.play(specs if seed % 2 else specs[::-1], seed=seed)
            assert report.faults == []
            assert report.winner is not None
        sessions = [session for pool in runner._sessions.values() for session in pool]
        assert len(sessions) == 2
        processes = [session.process for session in sessions]
    # Closing the runner shuts the bots down: they exit by themselves, with code 0.
    assert [process.exit_code() for process in processes if process is not None] == [0, 0]


def test_the_random_bot_example_is_under_thirty_lines() -> None:
    source = Path(__file__).resolve().parents[2] / "protocol" / "examples" / "random_bot.py"
    assert len(source.read_text(encoding="utf-8").splitlines()) < 30


def test_the_bundled_first_and_random_bots_are_the_examples() -> None:
    """One source: the bundled ``first`` and ``random`` (sample_bots/) are the examples under
    their own names and choose nothing of their own; ``random`` adds its personal seed."""
    assert issubclass(FirstBot, FirstLegalBot)
    assert issubclass(BundledRandomBot, RandomBot)
    decisions = {"decide", "exchange", "bid", "play"}
    assert decisions & set(vars(FirstBot)) == set()
    assert decisions & set(vars(BundledRandomBot)) == set()
    assert (FirstBot.name, BundledRandomBot.name) == ("first", "random")
