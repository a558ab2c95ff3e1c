"""A bot written against the raw protocol (pyzmq + msgpack, no SDK) that can misbehave on
purpose. It answers every decision with the first legal action unless told otherwise:

    rawbot.py [--fault KIND] [--at N] [--name NAME] [--report-cpus FILE] [--log-messages FILE]
              [--say TEXT] [--hold FILE [--hold-at M]] [--routing-id ID]

It speaks protocol 1.0 only, as a bot written before 1.1 does. With ``AEGIS_SERVER_KEY``,
``AEGIS_PUBLIC_KEY`` and ``AEGIS_SECRET_KEY`` set it dials in as a remote bot (CurveZMQ).

KIND is one of: crash, sleep, garbage, huge, giant, deep, deep_act, wrong_id, reply_to_zero,
illegal, double_space, no_action, text_reply_to, bin_action, pong_for_decide, same_id,
second_hello, wrong_token, no_hello, wrong_version, child_ignores_term, child_escapes, flood,
error_reply, multi_frame, stderr_spam, slow_pong, ignore_shutdown, ignore_unknown_type,
strict_fields, no_ready, garbage_at_match_end, big_at_match_end, redial_at_shutdown. The fault
happens at the N-th decision request (default 1) or at the handshake for handshake faults; the
last seven whenever their message comes: ignore_shutdown stays after ``shutdown``,
redial_at_shutdown answers its first ``shutdown`` by dialling in again with a new ``hello``
(closing the first connection once that is answered) and exits only at a second ``shutdown``,
ignore_unknown_type does not
answer a message of unknown type, strict_fields answers a ``decide`` holding a field the
protocol does not define with an ``error``, no_ready never answers ``match_start``,
garbage_at_match_end answers ``match_end`` with bytes that are not msgpack (a stray message
between matches), and big_at_match_end answers it with a valid 10 KB ``pong`` (a large one).
``--say`` writes TEXT on stderr as the bot starts; ``--routing-id`` connects with a ZeroMQ
routing id of its choosing (every process of it the same one).

With ``--hold FILE`` the bot answers its M-th ``match_start`` (default 2) only once FILE
exists (at most 30 s later): a test holds a tournament still there, to look at it.

Answers to a decision that break one rule of the protocol each: huge (200 KB that are not
msgpack), giant (an ``act`` of ``--size`` bytes, default 8 MiB: more than the socket takes),
deep (an action nested 1000 arrays deep), deep_act (an ``act`` of under 100 bytes nested 21
deep), wrong_id (``reply_to`` a request not yet sent), reply_to_zero (``reply_to`` 0, an id
the referee never uses), double_space (the action with two spaces between its words),
no_action (an ``act`` without ``action``), text_reply_to (``reply_to`` as a string),
bin_action (the action as msgpack ``bin``), pong_for_decide (a ``pong`` answering the
``decide``), same_id (an ``act`` with the id of the bot's previous message), second_hello
(a second ``hello`` instead of the answer), multi_frame (two frames).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import msgpack
import zmq

#: Every field of a ``decide`` in protocol 1.0 (strict_fields refuses any other).
DECIDE_FIELDS = {
    "version", "id", "type", "match_id", "decision", "events", "observation", "legal",
    "deadline_ms", "bank_ms",
}  # fmt: skip


#: Answers to a decide (its id, the action) that are malformed: one field missing or of the
#: wrong type, or the wrong type of answer.
MALFORMED_ANSWERS = {
    "no_action": lambda request, action: {"type": "act", "reply_to": request},
    "text_reply_to": lambda request, action: {
        "type": "act", "reply_to": str(request), "action": action
    },
    "bin_action": lambda request, action: {
        "type": "act", "reply_to": request, "action": action.encode()
    },
    "pong_for_decide": lambda request, action: {"type": "pong", "reply_to": request},
}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", default="none")
    parser.add_argument("--at", type=int, default=1)
    parser.add_argument("--name", default="rawbot")
    parser.add_argument("--pidfile", help="child_ignores_term: write the child's pid here")
    parser.add_argument("--report-cpus", help="append 'NAME PARENT_PID CPU,...' (its affinity)")
    parser.add_argument("--log-messages", help="append every message received, as JSON lines")
    parser.add_argument("--say", help="write this on stderr at the start")
    parser.add_argument("--hold", help="wait for this file before a match_start's ready")
    parser.add_argument("--hold-at", type=int, default=2, help="which match_start to hold")
    parser.add_argument("--size", type=int, default=8 << 20, help="giant: the message's size")
    parser.add_argument("--routing-id", help="connect with this ZeroMQ routing id of its own")
    arguments = parser.parse_args()
    if arguments.say is not None:
        print(arguments.say, file=sys.stderr, flush=True)
    fault, at = arguments.fault, arguments.at
    if arguments.report_cpus:
        cpus = ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0)))
        with open(arguments.report_cpus, "a", encoding="ascii") as report:
            report.write(f"{arguments.name} {os.getppid()} {cpus}\n")
    context = zmq.Context()

    def dial() -> zmq.Socket[bytes]:
        socket = context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        if arguments.routing_id:
            socket.setsockopt(zmq.ROUTING_ID, arguments.routing_id.encode())
        if os.environ.get("AEGIS_SERVER_KEY"):  # a remote bot: CurveZMQ, as SPEC section 9 says
            socket.setsockopt(zmq.CURVE_SERVERKEY, os.environ["AEGIS_SERVER_KEY"].encode())
            socket.setsockopt(zmq.CURVE_PUBLICKEY, os.environ["AEGIS_PUBLIC_KEY"].encode())
            socket.setsockopt(zmq.CURVE_SECRETKEY, os.environ["AEGIS_SECRET_KEY"].encode())
        socket.connect(os.environ["AEGIS_ENDPOINT"])
        return socket

    socket = dial()
    next_id = 0

    def send(message: dict[str, object]) -> None:
        nonlocal next_id
        next_id += 1
        socket.send(msgpack.packb({"version": "1.0", "id": next_id, **message}))

    if fault in ("child_ignores_term", "child_escapes"):
        # A grandchild that ignores SIGTERM and would outlive a careless referee; with
        # child_escapes it also leaves the bot's process group and session.
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import signal,time\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "while True: time.sleep(1)",
            ],
            start_new_session=fault == "child_escapes",
        )
        if arguments.pidfile:
            with open(arguments.pidfile, "w") as file:
                file.write(str(child.pid))
    if fault == "no_hello":
        time.sleep(60)
        return 0
    token = "not-the-token" if fault == "wrong_token" else os.environ.get("AEGIS_TOKEN", "")
    versions = ["7.0"] if fault == "wrong_version" else ["1.0"]
    send({"type": "hello", "versions": versions, "name": arguments.name, "token": token})
    decisions = 0
    starts = 0
    while True:
        if not socket.poll(30_000):
            return 3
        message = msgpack.unpackb(socket.recv(), raw=False)
        kind = message.get("type")
        if arguments.log_messages:
            with open(arguments.log_messages, "a", encoding="utf-8") as log:
                log.write(json.dumps(message) + "\n")
        if kind == "shutdown" and fault == "ignore_shutdown":
            continue
        if kind == "shutdown" and fault == "redial_at_shutdown":
            # As if its connection had dropped on its side before the shutdown came: a new
            # connection and a new hello; the old one closes once the new one is answered
            # (to the referee it stayed open until then). Only a second shutdown, on the
            # new connection, ends it; with no answer it fails (3).
            fault = "none"
            old, socket, next_id = socket, dial(), 0
            send({"type": "hello", "versions": versions, "name": arguments.name, "token": token})
            answered = socket.poll(30_000)
            old.close(0)
            if not answered:
                return 3
            continue
        if kind in ("reject", "shutdown"):
            return 0 if kind == "shutdown" else 2
        if kind == "match_start":
            starts += 1
            if arguments.hold and starts == arguments.hold_at:
                deadline = time.monotonic() + 30
                while not os.path.exists(arguments.hold) and time.monotonic() < deadline:
                    time.sleep(0.02)
            if fault != "no_ready":
                send({"type": "ready", "reply_to": message["id"]})
        elif kind == "ping":
            if fault == "slow_pong":
                time.sleep(0.3)
            send({"type": "pong", "reply_to": message["id"]})
        elif kind == "decide" and fault == "strict_fields" and set(message) - DECIDE_FIELDS:
            send(
                {
                    "type": "error",
                    "reply_to": message["id"],
                    "code": "malformed",
                    "message": f"unknown fields {sorted(set(message) - DECIDE_FIELDS)}",
                }
            )
        elif kind == "decide":
            decisions += 1
            action = message["legal"][0]
            if decisions == at:
                if fault == "crash":
                    print(f"rawbot crashing at decision {decisions}", file=sys.stderr, flush=True)
                    os._exit(9)
                if fault == "slow_once":
                    time.sleep(message["deadline_ms"] * 1.5 / 1000)
                if fault == "sleep":
                    time.sleep(message["deadline_ms"] / 1000 + 2)
                if fault == "garbage":
                    socket.send(b"\xc1\x00garbage")
                    continue
                if fault == "huge":
                    socket.send(b"\x00" * 200_000)
                    continue
                if fault == "giant":  # over the socket's limit: the referee never reads it
                    padding = "x" * arguments.size
                    send({"type": "act", "reply_to": message["id"], "action": action, "x": padding})
                    continue
                if fault == "deep":  # an action nested 1000 arrays deep, about 1 KB
                    deep: object = "play AS"
                    for _ in range(1000):
                        deep = [deep]
                    send({"type": "act", "reply_to": message["id"], "action": deep})
                    continue
                if fault == "deep_act":  # a valid act with a field 20 arrays deep: level 21
                    nested: object = None
                    for _ in range(20):
                        nested = [nested]
                    send({"type": "act", "reply_to": message["id"], "action": action, "x": nested})
                    continue
                if fault in MALFORMED_ANSWERS:
                    send(MALFORMED_ANSWERS[fault](message["id"], action))
                    continue
                if fault == "same_id":
                    next_id -= 1  # the act gets the id of the message before it
                if fault == "second_hello":
                    send({"type": "hello", "versions": versions, "name": arguments.name})
                    continue
                if fault == "double_space":
                    action = action.replace(" ", "  ")
                if fault == "multi_frame":
                    socket.send_multipart([b"a", b"b"])
                    continue
                if fault == "wrong_id":
                    send({"type": "act", "reply_to": message["id"] + 1000, "action": action})
                    continue
                if fault == "reply_to_zero":
                    send({"type": "act", "reply_to": 0, "action": action})
                    continue
                if fault == "error_reply":
                    send(
                        {
                            "type": "error",
                            "reply_to": message["id"],
                            "code": "unexpected",
                            "message": "cannot decide",
                        }
                    )
                    continue
                if fault == "illegal":
                    hand = message["observation"]["hand"]
                    everything = [
                        f"{r}{s}"
                        for r in ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
                        for s in "SHDC"
                    ]
                    action = "play " + next(c for c in everything if c not in hand)
                if fault == "stderr_spam":
                    chunk = "x" * 1023 + "\n"
                    for _ in range(5000):
                        sys.stderr.write(chunk)
                    sys.stderr.flush()
            send({"type": "act", "reply_to": message["id"], "action": action})
            if decisions == at and fault == "flood":
                # After its answer, thousands of valid messages nobody asked for (errors that
                # answer nothing), as many as ZeroMQ queues without waiting.
                for _ in range(5000):
                    next_id += 1
                    flood = {
                        "version": "1.0", "id": next_id, "type": "error", "reply_to": None,
                        "code": "unexpected", "message": "flood",
                    }  # fmt: skip
                    try:
                        socket.send(msgpack.packb(flood), zmq.NOBLOCK)
                    except zmq.Again:
                        break
        elif kind == "match_end" and fault == "garbage_at_match_end":
            socket.send(b"\xc1\x00stray")
        elif kind == "match_end" and fault == "big_at_match_end":
            send({"type": "pong", "reply_to": message["id"], "padding": "x" * 10_000})
        elif kind in ("welcome", "match_end", "error") or fault == "ignore_unknown_type":
            pass
        else:
            send(
                {
                    "type": "error",
                    "reply_to": message.get("id"),
                    "code": "unknown_type",
                    "message": f"unknown type {kind!r}",
                }
            )


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
