"""The match runner against real bot processes over real ZeroMQ sockets.

The bots are ``tests/bots/rawbot.py``, which speaks the raw protocol and misbehaves on request.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest
import zmq

from protocol import builders
from referee.bots import BotSpec
from referee.faults import FaultKind
from referee.rules.game import Seat
from referee.rules.match import Termination
from referee.rules.options import RulesOptions
from referee.runner import MatchRunner
from referee.server import BotServer, Reply
from referee.session import BotSession
from referee.time_control import Clock, TimeControl
from tests.processes import eventually
from tests.protocol.sdk_support import python_script, wait_gone
from tests.referee.bot_helpers import FAST, RAWBOT, rawbot

SLOW_ONCE_BOT = RAWBOT.with_name("slow_once_bot.py")


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[MatchRunner]:
    """A runner with short deadlines, closed (bots stopped) after the test."""
    with MatchRunner(time_control=FAST, log_dir=tmp_path / "logs") as match_runner:
        yield match_runner


def test_full_match_between_two_bots(runner: MatchRunner) -> None:
    report = runner.play([rawbot("alpha"), rawbot("beta")], seed=11, match_id="m1")
    assert report.faults == []
    assert report.match is not None
    assert report.match.result is not None
    assert report.match.result.termination in {
        Termination.TARGET,
        Termination.COLD,
        Termination.BOTH_OVER_TARGET,
    }
    assert len(report.games) == report.match.result.games >= 1
    for game, timings in zip(report.games, report.timings, strict=True):
        assert game.is_over
        assert len(timings) == len(game.history)
        assert all(0 <= milliseconds < FAST.decision_ms for milliseconds in timings)
    total = [
        sum(game.result.points[seat] for game in report.games if game.result) for seat in (0, 1)
    ]
    assert list(report.match.result.scores) == total


def test_what_a_bot_hears_of_its_matches(runner: MatchRunner, tmp_path: Path) -> None:
    """SPEC sections 4 and 5: ``opponent`` is the organiser's name for the other bot (not its
    hello's), a game's end comes at the start of the next game's first ``decide``, before its
    ``game_start``, and no ``ping`` comes between ``match_start`` and ``match_end``."""
    log = tmp_path / "alpha.jsonl"
    alpha = rawbot("alpha", "--name", "hello-alpha", "--log-messages", str(log))
    report = runner.play([alpha, rawbot("beta", "--name", "hello-beta")], seed=11)
    assert report.faults == []
    assert len(report.games) >= 2
    messages = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    kinds = [message["type"] for message in messages]
    start, end = kinds.index("match_start"), kinds.index("match_end")
    assert messages[start]["opponent"] == "beta"
    assert "ping" not in kinds[start:end]
    firsts = [
        message
        for message in messages[start:end]
        if message["type"] == "decide"
        and any(event["event"] == "game_start" for event in message["events"])
    ]
    assert len(firsts) == len(report.games)
    for game, decide in enumerate(firsts[1:], 2):
        events = [event["event"] for event in decide["events"]]
        ended = events.index("game_end")
        assert ended < events.index("game_start")
        assert decide["events"][ended]["game"] == game - 1
        assert "trick" in events[:ended]


def test_same_seed_same_match(runner: MatchRunner) -> None:
    first = runner.play([rawbot("alpha"), rawbot("beta")], seed=5)
    second = runner.play([rawbot("alpha"), rawbot("beta")], seed=5)
    assert [game.deck for game in first.games] == [game.deck for game in second.games]
    assert [game.history for game in first.games] == [game.history for game in second.games]


def test_bot_process_is_reused_across_matches(runner: MatchRunner) -> None:
    specs = [rawbot("alpha"), rawbot("beta")]
    runner.play(specs, seed=1)
    pids = {
        name: [session.process.pid for session in pool] for name, pool in runner._sessions.items()
    }  # type: ignore[union-attr]
    runner.play(specs, seed=2)
    again = {
        name: [session.process.pid for session in pool] for name, pool in runner._sessions.items()
    }  # type: ignore[union-attr]
    assert pids == again
    assert runner.counters["alpha"]["restarts"] == 0


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        ("crash", FaultKind.CRASH),
        ("sleep", FaultKind.TIMEOUT),
        ("garbage", FaultKind.MALFORMED),
        ("huge", FaultKind.MALFORMED),
        ("deep", FaultKind.MALFORMED),  # repr of it would overflow the stack
        ("multi_frame", FaultKind.MALFORMED),
        ("wrong_id", FaultKind.WRONG_REPLY_ID),
        ("illegal", FaultKind.ILLEGAL_ACTION),
        ("error_reply", FaultKind.BOT_ERROR),
    ],
)
@pytest.mark.parametrize("bad_seat", [0, 1])
def test_in_game_fault_forfeits_the_offender(
    runner: MatchRunner, fault: str, kind: FaultKind, bad_seat: int
) -> None:
    specs = [rawbot("good"), rawbot("good")]
    specs[bad_seat] = rawbot(f"bad-{fault}", "--fault", fault, "--at", "2")
    report = runner.play(specs, seed=3)
    assert report.match is not None
    assert report.match.result is not None
    assert report.match.result.termination is Termination.FORFEIT
    assert report.winner == 1 - bad_seat
    assert report.forfeit_fault is not None
    assert report.forfeit_fault.kind is kind
    assert report.forfeit_fault.seat == bad_seat
    assert report.forfeit_fault.game == 1
    assert report.forfeit_fault.decision is not None
    assert runner.counters[f"bad-{fault}"][kind.value] == 1
    if fault == "crash":
        assert any(
            "rawbot crashing at decision 2" in line for line in report.forfeit_fault.stderr_tail
        )


@pytest.mark.parametrize(
    ("fault", "kind", "detail"),
    [
        ("wrong_token", FaultKind.HANDSHAKE, "unknown token were rejected"),
        ("no_hello", FaultKind.HANDSHAKE, "no valid hello"),
        ("wrong_version", FaultKind.VERSION, "bot speaks 7.0"),
    ],
)
def test_handshake_fault_forfeits_before_the_first_game(
    tmp_path: Path, fault: str, kind: FaultKind, detail: str
) -> None:
    # The good bot's hello can take more than a second on a loaded machine.
    control = TimeControl(decision_ms=400, warmup_ms=3000)
    with MatchRunner(time_control=control) as match_runner:
        report = match_runner.play([rawbot(f"bad-{fault}", "--fault", fault), rawbot("good")], 1)
    assert report.winner == 1
    assert report.forfeit_fault is not None
    assert report.forfeit_fault.kind is kind
    assert detail in report.forfeit_fault.detail
    assert report.games == []


def test_both_bots_failing_the_handshake_void_the_match() -> None:
    with MatchRunner(time_control=TimeControl(decision_ms=400, warmup_ms=500)) as match_runner:
        report = match_runner.play(
            [rawbot("a", "--fault", "no_hello"), rawbot("b", "--fault", "wrong_version")], 1
        )
    assert report.void
    assert report.winner is None
    assert {fault.kind for fault in report.faults} == {FaultKind.HANDSHAKE, FaultKind.VERSION}


def test_a_bot_that_chooses_its_routing_id_is_heard_match_after_match(
    runner: MatchRunner,
) -> None:
    """Every match starts the bot afresh, and every process of it connects with the same
    routing id: each one's hello is judged by the process that sent it, never by what an
    earlier connection of that id was (a peer chooses its id, and may reuse another's)."""
    fixed = rawbot("fixed", "--routing-id", "same-every-time")
    for seed in (1, 2, 3):
        report = runner.play([fixed, rawbot("good")], seed=seed)
        assert report.faults == [], report.faults


#: A bot that first says hello, with its own token, on the next bot's endpoint (the same
#: folder, the next number), prints the answer, then becomes a raw bot.
ELSEWHERE = """
import os, sys, msgpack, zmq
endpoint, token = os.environ["AEGIS_ENDPOINT"], os.environ["AEGIS_TOKEN"]
folder, _, name = endpoint.rpartition("/bot-")
context = zmq.Context()
socket = context.socket(zmq.DEALER)
socket.connect(f"{folder}/bot-{int(name) + 1}")
hello = {"version": "1.0", "id": 1, "type": "hello", "versions": ["1.0"], "token": token}
socket.send(msgpack.packb({**hello, "name": "elsewhere"}))
answer = msgpack.unpackb(socket.recv()) if socket.poll(5000) else None
print("ANSWER", answer, file=sys.stderr, flush=True)
socket.close(0)
context.term()
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""


def test_a_hello_on_another_bots_endpoint_is_refused(tmp_path: Path) -> None:
    """A token is good on its own bot's endpoint only, even from the bot's own process: the
    hello it sends on the next bot's endpoint is refused, and its hello on its own endpoint
    is then taken, and both bots play."""
    elsewhere = BotSpec(
        "elsewhere", (sys.executable, "-c", ELSEWHERE, str(RAWBOT), "--name", "elsewhere")
    )
    control = TimeControl(decision_ms=1000, warmup_ms=10_000)  # it starts Python twice
    with MatchRunner(time_control=control, log_dir=tmp_path) as runner:
        report = runner.play([elsewhere, rawbot("good")], seed=1)
    assert report.faults == [], report.faults
    log = (tmp_path / "elsewhere.log").read_text()
    assert "ANSWER {" in log, log
    assert "'type': 'reject'" in log
    assert "'code': 'auth'" in log
    assert "this hello came on another bot's endpoint" in log


def test_crashed_bot_is_restarted_for_its_next_match(runner: MatchRunner) -> None:
    crasher = rawbot("crasher", "--fault", "crash", "--at", "3", keep_alive=True)
    first = runner.play([crasher, rawbot("good")], seed=1)
    second = runner.play([crasher, rawbot("good")], seed=2)
    assert first.forfeit_fault is not None
    assert first.forfeit_fault.kind is FaultKind.CRASH
    assert second.forfeit_fault is not None
    assert second.forfeit_fault.kind is FaultKind.CRASH
    assert runner.counters["crasher"]["restarts"] == 1
    assert runner.counters["crasher"]["crash"] == 2


def test_faulty_bot_that_survives_is_restarted_too(runner: MatchRunner) -> None:
    cheat = rawbot("cheat", "--fault", "illegal", "--at", "1", keep_alive=True)
    runner.play([cheat, rawbot("good")], seed=1)
    pid = runner._sessions["cheat"][0].process.pid  # type: ignore[union-attr]
    runner.play([cheat, rawbot("good")], seed=2)
    assert runner._sessions["cheat"][0].process.pid != pid  # type: ignore[union-attr]
    assert wait_gone(pid, 5.0)


def test_a_stray_message_between_matches_restarts_the_bot(runner: MatchRunner) -> None:
    """A message a bot sends after its match ended is read before the next match: the bot is
    restarted and plays that match, rather than forfeiting it at ``match_start``."""
    stray = rawbot("stray", "--fault", "garbage_at_match_end", keep_alive=True)
    first = runner.play([stray, rawbot("good")], seed=1)
    assert first.forfeit_fault is None
    session = runner._sessions["stray"][0]
    pid = session.process.pid  # type: ignore[union-attr]
    # The stray bytes are read (between matches, as the next match would first).
    assert eventually(lambda: read_between_matches(runner, session), 10)
    second = runner.play([stray, rawbot("good")], seed=2)
    assert second.forfeit_fault is None, second.forfeit_fault
    assert not second.faults
    assert runner.counters["stray"]["restarts"] == 1
    assert runner._sessions["stray"][0].process.pid != pid  # type: ignore[union-attr]


def read_between_matches(runner: MatchRunner, session: BotSession) -> bool:
    """Read what bots sent between matches; whether this bot's fault was noted."""
    runner.server.drain(0.05)
    return session.pending_fault is not None


@pytest.mark.parametrize("fault", ["child_ignores_term", "child_escapes"])
def test_no_process_left_behind(tmp_path: Path, fault: str) -> None:
    pidfile = tmp_path / "child.pid"
    with MatchRunner(time_control=FAST) as match_runner:
        spec = rawbot("parent", "--fault", fault, "--pidfile", str(pidfile), keep_alive=True)
        report = match_runner.play([spec, rawbot("good")], seed=1)
        bot_pid = match_runner._sessions["parent"][0].process.pid  # type: ignore[union-attr]
        assert report.faults == []
        child = int(pidfile.read_text())
        assert not wait_gone(child, 0.1)
    assert wait_gone(bot_pid, 5.0)
    assert wait_gone(child, 5.0)


def test_bots_die_with_a_referee_killed_outright() -> None:
    """A referee killed with SIGKILL cannot stop its bots; the kernel does (the parent-death
    signal), so a raw bot blocked on its socket does not stay behind. Nor can it remove its
    private directory: the next referee to start does."""
    script = (
        "import sys, time\n"
        "from referee.bots import BotSpec\n"
        "from referee.server import BotServer\n"
        "server = BotServer()\n"
        f"session = server.start_bot(BotSpec('raw', (sys.executable, {str(RAWBOT)!r})))\n"
        "assert server.handshake(session, 10.0) is None\n"
        "print(session.process.pid, session.endpoint, flush=True)\n"
        "time.sleep(60)\n"
    )
    bot_pid = None
    try:
        with python_script(script) as (referee, printed):
            pid_text, endpoint = printed.split()
            bot_pid = int(pid_text)
            assert not wait_gone(bot_pid, 0.3)  # the bot runs while its referee does
            referee.kill()
            referee.wait(10)
            assert wait_gone(bot_pid, 5.0)
            directory = Path(endpoint.removeprefix("ipc://")).parent
            # In a parallel run (pytest -n) another process's referee may start first and
            # remove it already; otherwise the next one, this one, must.
            with BotServer():
                assert not directory.exists()
    finally:
        if bot_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(bot_pid, signal.SIGKILL)


def test_private_directory_removed() -> None:
    with MatchRunner(time_control=FAST) as match_runner:
        match_runner.play([rawbot("a"), rawbot("b")], seed=1)
        directory = Path(match_runner.server.directory)
        assert directory.is_dir()
    assert not directory.exists()


def test_stderr_flood_is_capped_and_harmless(tmp_path: Path) -> None:
    from referee.bots import ResourceLimits

    limits = ResourceLimits(log_bytes=50_000)
    spammer = BotSpec(
        "spammer",
        (sys.executable, str(RAWBOT), "--fault", "stderr_spam", "--at", "1"),
        limits=limits,
        keep_alive=True,
    )
    with MatchRunner(time_control=FAST, log_dir=tmp_path) as match_runner:
        report = match_runner.play([spammer, rawbot("good")], seed=1)
        dropped = match_runner._sessions["spammer"][0].process.log_bytes_dropped  # type: ignore[union-attr]
    assert report.faults == []
    assert (tmp_path / "spammer.log").stat().st_size < 51_000
    assert dropped > 4_000_000


def _spammer(cap: int) -> BotSpec:
    """A bot that writes 5 MB to stderr at its first decision of every match, in a fresh
    process for each match."""
    from referee.bots import ResourceLimits

    command = (sys.executable, str(RAWBOT), "--fault", "stderr_spam", "--at", "1")
    return BotSpec("spammer", command, limits=ResourceLimits(log_bytes=cap))


def test_the_log_cap_is_per_bot_not_per_process(tmp_path: Path) -> None:
    # Every match starts the bot afresh: each process used to get a cap of its own, so two
    # matches kept twice the cap.
    with MatchRunner(time_control=FAST, log_dir=tmp_path) as match_runner:
        for seed in (1, 2):
            report = match_runner.play([_spammer(50_000), rawbot("good")], seed=seed)
            assert report.faults == []
    text = (tmp_path / "spammer.log").read_text()
    assert len(text) < 50_000 + 200
    assert text.count("log cap of 50000 bytes") == 1  # said once, not once per process


def test_the_log_cap_is_shared_by_the_workers_of_a_run(tmp_path: Path) -> None:
    # Two runners, as two worker processes of one tournament: each logs to a folder of its
    # own, and one ledger keeps the bot's cap across them (and across a resumed run).
    for worker in ("one", "two", "one"):
        with MatchRunner(
            time_control=FAST, log_dir=tmp_path / worker, log_budget_dir=tmp_path
        ) as match_runner:
            match_runner.play([_spammer(30_000), rawbot("good")], seed=1)
    kept = sum(len(path.read_bytes()) for path in tmp_path.glob("*/spammer.log"))
    assert 30_000 <= kept < 30_000 + 200


def keep_alive_pair(runner: MatchRunner) -> tuple[list[BotSpec], str]:
    """Two kept-alive bots after one match together, and the first one's endpoint: where a
    local stranger (any process of the same user, unsandboxed) can reach the referee."""
    specs = [rawbot("alpha", keep_alive=True), rawbot("beta", keep_alive=True)]
    runner.play(specs, seed=1)
    endpoint = runner._sessions["alpha"][0].endpoint
    assert endpoint is not None
    return specs, endpoint


def test_random_bytes_from_strangers_do_not_disturb_a_match(runner: MatchRunner) -> None:
    stop = threading.Event()
    sent = 0
    specs, endpoint = keep_alive_pair(runner)

    def attack() -> None:
        nonlocal sent
        context = zmq.Context()
        socket = context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.connect(endpoint)
        rng = random.Random(4)
        try:
            while not stop.is_set() and sent < 3000:
                choice = rng.random()
                if choice < 0.4:
                    payload = rng.randbytes(rng.randrange(1, 300))
                elif choice < 0.8:
                    payload = msgpack.packb(
                        {
                            "type": rng.choice(["act", "hello", "pong", "x"]),
                            "id": rng.randrange(9),
                            "reply_to": rng.randrange(9),
                            "action": "play AS",
                            "token": "guess",
                        }
                    )
                else:
                    payload = msgpack.packb([rng.random(), None, {"a": 1}])
                socket.send(payload)
                sent += 1
                time.sleep(0.0005)
        finally:
            socket.close(0)
            context.term()

    thread = threading.Thread(target=attack)
    thread.start()
    try:
        reports = [runner.play(specs, seed=seed) for seed in (2, 3)]
    finally:
        stop.set()
        thread.join(10)
    assert sent > 0
    assert runner.server.stray_messages > 0
    for report in reports:
        assert report.faults == []
        assert report.match is not None
        assert report.match.result is not None


def test_a_flooding_bot_forfeits_and_the_referee_keeps_little_of_its_flood(
    runner: MatchRunner,
) -> None:
    """Thousands of valid messages nobody asked for: the referee notes a fault after 16 since
    its last request to the bot and drops the rest unread, so its memory stays bounded; the
    flooder forfeits, its opponent is unharmed."""
    report = runner.play(
        [rawbot("flooder", "--fault", "flood", "--at", "2", keep_alive=True), rawbot("good")], 3
    )
    fault = report.forfeit_fault
    assert fault is not None
    assert (fault.kind, fault.seat, fault.bot) == (FaultKind.MALFORMED, 0, "flooder")
    assert "flooding: more than 16 messages" in fault.detail
    assert report.winner == 1
    assert [f.bot for f in report.faults] == ["flooder"]
    session = runner._sessions["flooder"][0]
    assert len(session.inbox) <= 16 + 1  # 16 unasked, and one taken for an answer it owed
    assert session.counters["messages_dropped"] > 0


def test_a_large_message_nobody_asked_for_is_refused_undecoded(runner: MatchRunner) -> None:
    """A bot that owes no answer may not spend the referee's time: a 10 KB message sent after
    its match ended is a fault at once, dropped without being decoded, and the bot is
    restarted before its next match."""
    big = rawbot("big", "--fault", "big_at_match_end", keep_alive=True)
    runner.play([big, rawbot("good")], seed=1)
    session = runner._sessions["big"][0]
    assert eventually(lambda: read_between_matches(runner, session), 10)
    second = runner.play([big, rawbot("good")], seed=2)
    assert second.forfeit_fault is None
    assert session.counters["messages_dropped"] == 1
    assert session.counters["malformed"] == 1
    assert runner.counters["big"]["restarts"] == 1


def test_owing_an_answer_does_not_license_large_messages_out_of_turn(tmp_path: Path) -> None:
    """A bot that let a request time out (a remote bot ignoring pings, say) still may not send
    a large message while it is not being asked: it is a fault, dropped undecoded."""
    script = tmp_path / "owing_bot.py"
    script.write_text(
        "import os, msgpack, zmq\n"
        "socket = zmq.Context().socket(zmq.DEALER)\n"
        "socket.setsockopt(zmq.LINGER, 0)\n"
        "socket.connect(os.environ['AEGIS_ENDPOINT'])\n"
        "socket.send(msgpack.packb({'version': '1.0', 'id': 1, 'type': 'hello', 'versions':"
        " ['1.0'], 'name': 'owing', 'token': os.environ['AEGIS_TOKEN']}))\n"
        "while True:\n"
        "    message = msgpack.unpackb(socket.recv())\n"
        "    if message['type'] == 'shutdown':\n"
        "        break\n"
        "    if message['type'] == 'match_end':  # answers nothing, but sends this\n"
        "        socket.send(msgpack.packb({'version': '1.0', 'id': 2, 'type': 'pong',"
        " 'reply_to': 2, 'padding': 'x' * 10000}))\n"
    )
    with BotServer() as server:
        session = server.start_bot(BotSpec("owing", (sys.executable, str(script))))
        try:
            assert server.handshake(session, 10.0) is None
            start = builders.match_start("1", Seat.FIRST, "x", RulesOptions(), FAST.to_json())
            assert not isinstance(server.request(session, start, "ready", 0.05), Reply)
            assert session.owed == 1
            server.notify(session, {"type": "match_end", "match_id": "1", "events": []})
            deadline = time.monotonic() + 5
            while session.pending_fault is None and time.monotonic() < deadline:
                server.drain(0.05)
            assert session.pending_fault is not None
            assert "not asked for" in session.pending_fault.detail
            assert session.counters["messages_dropped"] == 1
        finally:
            server.stop_bot(session)


def test_a_stuck_bot_answering_many_requests_at_once_is_not_flooding() -> None:
    """Answers to requests that timed out are not counted as flooding: a bot stuck through
    81 requests answers them all when it recovers, then answers the next request in time."""
    stuck = BotSpec(
        "stuck", (sys.executable, str(SLOW_ONCE_BOT), "--sleep", "0", "--sleep-at-start", "1.5")
    )
    with BotServer() as server:
        session = server.start_bot(stuck)
        try:
            assert server.handshake(session, 10.0) is None
            start = builders.match_start("1", Seat.FIRST, "x", RulesOptions(), FAST.to_json())
            assert not isinstance(server.request(session, start, "ready", 0.01), Reply)
            for _ in range(80):  # while the bot sleeps in its match_start
                assert not isinstance(server.request(session, {"type": "ping"}, "pong", 0), Reply)
            outcome = server.request(session, {"type": "ping"}, "pong", 10.0)
            assert isinstance(outcome, Reply), outcome
            assert session.pending_fault is None
            assert session.counters["late_replies"] == 81
            assert session.counters["messages_dropped"] == 0
        finally:
            server.stop_bot(session)


def test_a_stranger_that_never_reads_cannot_stall_the_referee(runner: MatchRunner) -> None:
    """Every hello with a wrong token is answered with a reject. A stranger that sends
    thousands and reads none fills its queue; the referee then drops the rejects rather than
    wait for room, so the bots of the match in progress keep their time."""
    done = threading.Event()
    specs, endpoint = keep_alive_pair(runner)

    def flood_hellos() -> None:
        context = zmq.Context()
        socket = context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.setsockopt(zmq.SNDTIMEO, 5000)
        socket.connect(endpoint)
        hello = {"version": "1.0", "type": "hello", "versions": ["1.0"], "name": "x"}
        try:
            for number in range(8000):
                socket.send(msgpack.packb({**hello, "id": number, "token": "guess"}))
        except zmq.Again:
            pass
        finally:
            socket.close(0)
            context.term()
            done.set()

    thread = threading.Thread(target=flood_hellos)
    thread.start()
    reports = []
    try:
        seed = 1
        while not done.is_set() and seed <= 200:
            reports.append(runner.play(specs, seed=seed))
            seed += 1
    finally:
        thread.join(30)
    assert done.is_set()
    assert runner.server.stray_messages > 4000  # most hellos were read and rejected
    for report in reports:
        assert report.faults == [], report.faults


def test_a_stranger_gets_no_decoding_time_beyond_a_hellos_worth(runner: MatchRunner) -> None:
    """A peer that has not said hello gets a reject for a hello with a wrong token, but a
    message longer than any hello is dropped without being decoded (and without a reject)."""
    _, endpoint = keep_alive_pair(runner)
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(endpoint)
    hello = {"version": "1.0", "id": 1, "type": "hello", "versions": ["1.0"], "name": "x"}
    try:
        before = runner.server.stray_messages
        socket.send(msgpack.packb({**hello, "token": "guess", "padding": "x" * 5000}))
        runner.server.drain(0.5)
        assert runner.server.stray_messages == before + 1
        assert not socket.poll(200)  # no reject for it
        socket.send(msgpack.packb({**hello, "token": "guess"}))
        runner.server.drain(0.5)
        assert runner.server.stray_messages == before + 2
        assert socket.poll(2000)
        assert msgpack.unpackb(socket.recv())["type"] == "reject"
    finally:
        socket.close(0)
        context.term()


def test_late_reply_is_discarded(runner: MatchRunner) -> None:
    slow = rawbot("slow", "--fault", "slow_pong", keep_alive=True)
    runner.play([slow, rawbot("good")], seed=1)
    session = runner._sessions["slow"][0]
    first = runner.server.request(session, {"type": "ping"}, "pong", timeout_s=0.05)
    assert getattr(first, "kind", None) is FaultKind.TIMEOUT
    second = runner.server.request(session, {"type": "ping"}, "pong", timeout_s=2.0)
    assert getattr(second, "message", {}).get("type") == "pong"
    assert session.counters["late_replies"] == 1


def test_time_bank_covers_an_overrun_once() -> None:
    # The bot sleeps: this is the wall clock's bank.
    control = TimeControl(decision_ms=200, bank_ms=1000, warmup_ms=3000, clock=Clock.WALL)
    slow = rawbot("slow", "--fault", "slow_once", "--at", "2")
    with MatchRunner(time_control=control) as match_runner:
        report = match_runner.play([slow, rawbot("good")], seed=1)
    assert report.faults == []
    slowest = max(max(timings) for timings in report.timings)
    assert 250 <= slowest < 1200


def test_overrun_beyond_the_bank_times_out() -> None:
    # The bot sleeps: this is the wall clock's bank.
    control = TimeControl(decision_ms=200, bank_ms=20, warmup_ms=3000, clock=Clock.WALL)
    slow = rawbot("slow", "--fault", "slow_once", "--at", "2")
    with MatchRunner(time_control=control) as match_runner:
        report = match_runner.play([slow, rawbot("good")], seed=1)
    assert report.forfeit_fault is not None
    assert report.forfeit_fault.kind is FaultKind.TIMEOUT
    assert "220 ms" in report.forfeit_fault.detail


_RECONNECTING_BOT = r"""
import os, sys, zmq, msgpack
context = zmq.Context()
sockets = []
for attempt in range(2):
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(os.environ["AEGIS_ENDPOINT"])
    socket.send(msgpack.packb({"version": "1.0", "id": 1, "type": "hello", "versions": ["1.0"],
                               "name": "again", "token": os.environ["AEGIS_TOKEN"]}))
    answer = msgpack.unpackb(socket.recv())["type"]
    print("answer", attempt, answer, flush=True)
    sockets.append(socket)
    if attempt == 0 and sys.argv[1] == "drop":
        socket.close(0)  # as if the connection dropped: say hello again on a new one
        sockets.pop()
socket = sockets[0]
while True:
    message = msgpack.unpackb(socket.recv())
    if message["type"] == "ping":
        socket.send(msgpack.packb({"version": "1.0", "id": 2, "type": "pong",
                                   "reply_to": message["id"]}))
    if message["type"] == "shutdown":
        break
"""


def test_a_second_hello_with_a_live_bots_token_never_moves_its_session() -> None:
    """Unsandboxed, any process of the same user can read a bot's token: a hello with the
    token of a live session, from a new connection, is refused, and the session stays on
    the connection that opened it (the hijack of a stranger that read the token)."""
    from referee.server import BotServer

    with BotServer() as server:
        spec = BotSpec("again", (sys.executable, "-c", _RECONNECTING_BOT, "keep"))
        session = server.start_bot(spec)
        try:
            assert server.handshake(session, 5.0) is None
            deadline = time.monotonic() + 5
            while session.counters["hello_refused"] == 0 and time.monotonic() < deadline:
                server.drain(0.05)
            assert session.counters["hello_refused"] == 1
            assert session.counters["reconnects"] == 0
            reply = server.request(session, {"type": "ping"}, "pong", 2.0)
            assert getattr(reply, "message", {}).get("type") == "pong"
            # The bot printed it before its pong; the log reader may not have read it yet.
            deadline = time.monotonic() + 5
            while "answer 1 reject" not in session.stderr_tail() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert "answer 1 reject" in session.stderr_tail()
        finally:
            server.stop_bot(session)
        assert session.process is not None
        assert session.process.exit_code() == 0
