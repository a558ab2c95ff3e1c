"""What the referee does with each way a bot can break the protocol (SPEC sections 1-3 and 10),
against real bot processes (``tests/bots/rawbot.py``) over real sockets: the fault is named for
what it is, and a bot whose message arrived is told why in an ``error`` before it forfeits.

rawbot numbers its messages from 1: ``hello`` 1, ``ready`` 2, the first ``act`` 3, so the
answer to its second decision (``--at 2``) has id 4.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq

from referee.bots import BotSpec
from referee.faults import FaultKind
from referee.runner import MatchReport, MatchRunner
from referee.server import BotServer
from referee.time_control import TimeControl
from tests.processes import eventually
from tests.referee.bot_helpers import FAST, RAWBOT, rawbot

#: The id of rawbot's answer to its second decision.
SECOND_ANSWER = 4


def received(log: Path) -> list[dict[str, Any]]:
    """Every message a rawbot started with ``--log-messages log`` received, in order."""
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def play_against_a_good_bot(
    fault: str, log: Path, control: TimeControl = FAST
) -> tuple[MatchReport, list[dict[str, Any]]]:
    """A match of a rawbot with ``fault`` at its second decision, in seat 0, against a good
    one: the report and what the faulty bot received."""
    bad = rawbot("bad", "--fault", fault, "--at", "2", "--log-messages", str(log))
    with MatchRunner(time_control=control) as runner:
        report = runner.play([bad, rawbot("good")], seed=3)
    return report, received(log)


def told_then_forfeited(
    tmp_path: Path, fault: str, kind: FaultKind, code: str, reply_to: int | None, detail: str
) -> dict[str, Any]:
    """Play ``fault`` (see :func:`play_against_a_good_bot`) and check that the bot forfeited
    by ``kind`` for ``detail``, after one ``error`` of ``code`` naming ``reply_to``; return
    that error."""
    report, messages = play_against_a_good_bot(fault, tmp_path / "received.jsonl")
    forfeit = report.forfeit_fault
    assert forfeit is not None
    assert (forfeit.kind, forfeit.seat, forfeit.bot) == (kind, 0, "bad")
    assert detail in forfeit.detail
    errors = [message for message in messages if message["type"] == "error"]
    assert [(error["code"], error["reply_to"]) for error in errors] == [(code, reply_to)]
    kinds = [message["type"] for message in messages]
    assert kinds.index("error") < kinds.index("match_end")
    return errors[0]


@pytest.mark.parametrize(
    ("fault", "reply_to", "detail"),
    [
        ("huge", None, "message of 200000 bytes exceeds 65536"),
        ("multi_frame", None, "message of 2 frames (must be 1)"),
        ("no_action", SECOND_ANSWER, "action: expected str, got None"),
        ("text_reply_to", SECOND_ANSWER, "without an integer reply_to"),
        ("bin_action", SECOND_ANSWER, "action: expected str, got b'"),
        ("pong_for_decide", SECOND_ANSWER, "with 'pong', expected 'act'"),
        ("second_hello", SECOND_ANSWER, "a second hello"),
        ("deep_act", None, "at most 16 deep"),
        ("same_id", SECOND_ANSWER - 1, "id 3 does not follow the bot's previous id 3"),
    ],
)
def test_a_malformed_answer_gets_an_error_then_forfeits(
    tmp_path: Path, fault: str, reply_to: int | None, detail: str
) -> None:
    """SPEC section 10: a malformed message draws an ``error`` (code ``malformed``) naming the
    problem, and its id where it could be read, before the forfeit."""
    error = told_then_forfeited(tmp_path, fault, FaultKind.MALFORMED, "malformed", reply_to, detail)
    assert detail in error["message"]


def test_a_message_too_large_for_the_socket_is_a_disconnect_that_says_so(tmp_path: Path) -> None:
    """SPEC section 1: a message over 1 MiB is dropped by the socket, which drops the bot's
    connection. The referee records that at once (it does not wait out the deadline) as a
    disconnect whose detail names the cause."""
    control = TimeControl(decision_ms=10_000, warmup_ms=3000)
    started = time.monotonic()
    report, _ = play_against_a_good_bot("giant", tmp_path / "received.jsonl", control)
    elapsed = time.monotonic() - started
    forfeit = report.forfeit_fault
    assert forfeit is not None
    assert (forfeit.kind, forfeit.seat, forfeit.game) == (FaultKind.DISCONNECT, 0, 1)
    assert "over 1 MiB" in forfeit.detail
    assert "while act was awaited" in forfeit.detail
    assert elapsed < 8.0  # far less than the 10 s deadline of the decision


def test_reply_to_an_id_the_referee_never_sends_is_a_wrong_reply_id(tmp_path: Path) -> None:
    """The referee numbers its messages from 1: ``reply_to`` 0 names no request, so it is no
    late reply to be discarded but a ``wrong_reply_id``, told in an ``error``."""
    told_then_forfeited(
        tmp_path,
        "reply_to_zero",
        FaultKind.WRONG_REPLY_ID,
        "wrong_reply_id",
        SECOND_ANSWER,
        "reply_to 0 names no request",
    )


def test_an_action_not_written_as_the_spec_writes_it_is_refused(tmp_path: Path) -> None:
    """SPEC section 2: one space between words. ``play  KS`` is not an action string (a
    referee that split on any whitespace would take it; another need not)."""
    told_then_forfeited(
        tmp_path,
        "double_space",
        FaultKind.ILLEGAL_ACTION,
        "illegal_action",
        SECOND_ANSWER,
        "one space between words",
    )


def test_a_nohello_fault_counts_only_the_bots_own_rejected_hellos() -> None:
    """A hello with an unknown token is counted against the bot whose process sent it (its
    peer credentials say which), not against whichever bot is waited for: a stranger's hello
    and another bot's do not appear in a bot's fault."""
    with BotServer() as server:
        silent = server.start_bot(
            BotSpec("silent", (sys.executable, str(RAWBOT), "--fault", "no_hello"))
        )
        liar = server.start_bot(
            BotSpec("liar", (sys.executable, str(RAWBOT), "--fault", "wrong_token"))
        )
        context = zmq.Context()
        stranger = context.socket(zmq.DEALER)
        stranger.setsockopt(zmq.LINGER, 0)
        try:
            assert silent.endpoint is not None
            stranger.connect(silent.endpoint)
            hello = {"version": "1.0", "id": 1, "type": "hello", "versions": ["1.0"]}
            stranger.send(msgpack.packb({**hello, "name": "x", "token": "guess"}))
            # The liar's hello and the stranger's are read (and rejected) first.
            assert eventually(
                lambda: (server.drain(0.05), liar.rejected_hellos > 0 and stranger.poll(0))[1],
                10,
            )
            silent_fault = server.handshake(silent, 1.0)
            liar_fault = server.handshake(liar, 0.5)
            assert stranger.poll(1000)  # the stranger was rejected too
            assert msgpack.unpackb(stranger.recv())["type"] == "reject"
        finally:
            stranger.close(0)
            context.term()
            server.stop_bots([silent, liar])
    assert silent_fault is not None
    assert liar_fault is not None
    assert (silent_fault.kind, silent_fault.detail) == (
        FaultKind.HANDSHAKE,
        "no valid hello within 1000 ms",
    )
    assert liar_fault.kind is FaultKind.HANDSHAKE
    # Rejected, the liar exits: "process ended (exit code 2) before a valid hello; …".
    assert liar_fault.detail.endswith(
        "; meanwhile 1 hello(s) from its process with an unknown token were rejected"
    )
