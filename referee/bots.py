"""Bot processes: start in their own process group under resource limits, capture their
output with a size cap, and stop them with everything they spawned.

This module, :mod:`referee.build` (a submitted bot's build) and :mod:`referee.server` are
the only ones that start processes.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import itertools
import logging
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar, cast

from referee.cgroups import BotCgroup, detect_cgroups
from referee.sandbox import (
    ProgramNotShownError,
    SandboxPlan,
    bot_home,
    sandbox_command,
    sandbox_environment,
    unshown_program,
)

_log = logging.getLogger(__name__)

__all__ = [
    "BotProcess",
    "BotSpec",
    "LogBudget",
    "LogSink",
    "ResourceLimits",
    "child_pids",
    "kill_by_token",
    "kill_until_gone",
    "prepare_child",
    "processes_with_environment",
]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ResourceLimits:
    """Limits applied to a started bot (``None``: no limit).

    ``cpu_seconds`` counts the process's own CPU time over its life; ``address_space_mb``
    caps virtual memory; ``open_files`` caps descriptors; ``log_bytes`` caps what is kept of
    the bot's stdout and stderr over all its processes of a run (the rest is discarded; see
    :class:`LogBudget`). By cgroup where the machine has
    one: ``memory_mb`` caps the memory of the bot and everything it starts, ``processes``
    the number of its processes and threads. In a sandbox, ``tmp_mb`` is the size of its
    private ``/tmp``; ``file_size_mb`` caps any file it writes (an rlimit).
    """

    cpu_seconds: int | None = 3600
    address_space_mb: int | None = 4096
    open_files: int | None = 256
    log_bytes: int = 1_000_000
    memory_mb: int | None = 2048
    processes: int | None = 128
    tmp_mb: int = 64
    file_size_mb: int | None = 64


@dataclass(frozen=True, slots=True)
class BotSpec:
    """How to run one bot: a command that the referee starts, or a remote bot that dials in.

    For a remote bot, ``command`` is empty and ``curve_public_key`` (Z85 text) names the key
    it must connect with. ``home`` is the bot's own directory (shown read-only in its
    sandbox; default: the folder of its program or script), ``read_only`` more paths its
    sandbox shows. ``cwd``: its working directory (default: the referee's), also inside its
    sandbox, where it holds only what the sandbox shows. ``keep_alive``: one process plays
    match after match (trusted bots only: it remembers); otherwise every match starts the bot
    afresh. ``connections``: how many matches a remote bot may play at once in a tournament,
    each on a connection of its own.
    """

    name: str
    command: tuple[str, ...] = ()
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    curve_public_key: str | None = None
    home: str | None = None
    read_only: tuple[str, ...] = ()
    keep_alive: bool = False
    #: A remote bot: how many matches it may play at once, each on a connection of its own.
    connections: int = 1

    @property
    def is_remote(self) -> bool:
        """True for a bot that dials in rather than being started."""
        return not self.command


def processes_with_environment(variable: str, value: str) -> list[int]:
    """Pids of the live processes, other than this one, whose environment holds
    ``variable=value``; zombies and processes not ours to read are left out."""
    needle = f"{variable}={value}".encode()
    me = os.getpid()
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as stream:
                    if needle not in stream.read().split(b"\0"):
                        continue
                with open(f"/proc/{entry.name}/stat", "rb") as stream:
                    state = stream.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue  # gone, or not ours to read
            if state != b"Z":
                found.append(int(entry.name))
    return found


def kill_until_gone(
    find: Callable[[], list[int]], *, settle: float, limit: float, interval: float
) -> set[int]:
    """SIGKILL every process ``find`` returns, and its process group, over and over until
    ``find`` has returned none for ``settle`` seconds (one may be forking meanwhile) or
    ``limit`` seconds have passed; return the pids signalled. A process killed between fork
    and ``setsid`` leads no group yet, hence the plain kill too."""
    killed: set[int] = set()
    started = last_seen = time.monotonic()
    while time.monotonic() - started < limit:
        found = find()
        for pid in found:
            for kill in (os.killpg, os.kill):
                with contextlib.suppress(OSError):
                    kill(pid, signal.SIGKILL)
            killed.add(pid)
        now = time.monotonic()
        if found:
            last_seen = now
        elif now - last_seen >= settle:
            break
        time.sleep(interval)
    return killed


def kill_by_token(token: str) -> int:
    """SIGKILL every process whose environment carries this bot's ``AEGIS_TOKEN``.

    A bot's descendants inherit its environment, so this finds the ones that left its process
    group (with ``setsid``, say) and that ``killpg`` cannot reach. Returns how many were found.
    """
    found = 0
    for pid in processes_with_environment("AEGIS_TOKEN", token):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            found += 1
    return found


class LogBudget:
    """What may still be kept of one bot's output: its ``limits.log_bytes``, spent by every
    process of that bot that is given this budget, so the cap holds per bot and per run
    rather than per process (every match starts a bot afresh).

    With a ``ledger`` file the count is kept there, under a lock, and shared with every other
    process that opens the same file: the worker processes of a tournament, and the runs
    that resume it. Without one (or where the file cannot be opened) it is kept here. Once
    the cap is reached, one note says so, in the log of the process that reached it.
    """

    def __init__(self, cap: int, ledger: Path | None = None) -> None:
        self.cap = cap
        self.ledger = ledger
        self._lock = threading.Lock()
        #: The count (and whether the note was written) when there is no ledger; else the
        #: last count read from it, which only grows.
        self._used = 0
        self._noted = False

    def take(self, wanted: int) -> int:
        """Reserve up to ``wanted`` bytes of the cap; return how many may be written."""

        def grant(used: int, noted: bool) -> tuple[int, bool, int]:
            granted = max(0, min(wanted, self.cap - used))
            return used + granted, noted, granted

        if self._used >= self.cap:
            return 0  # spent: a count never goes down
        return self._update(grant)

    def take_note(self) -> bool:
        """True once per budget, when the cap is reached: the note may be written."""

        def note(used: int, noted: bool) -> tuple[int, bool, bool]:
            return used, True, used >= self.cap and not noted

        return self._update(note)

    def note_text(self) -> bytes:
        """The note written where the cap was reached."""
        return (
            f"\n[aegis-ref: this bot's log cap of {self.cap} bytes is reached; the rest of "
            "its output in this run is discarded]\n"
        ).encode()

    def _update(self, change: Callable[[int, bool], tuple[int, bool, _T]]) -> _T:
        with self._lock:
            descriptor = None
            if self.ledger is not None:
                try:
                    self.ledger.parent.mkdir(parents=True, exist_ok=True)
                    descriptor = os.open(
                        self.ledger, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
                    )
                except OSError:
                    self.ledger = None  # the count stays in this process from now on
            if descriptor is None:
                self._used, self._noted, result = change(self._used, self._noted)
                return result
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
                used, noted = self._parse(os.pread(descriptor, 64, 0))
                self._used, self._noted, result = change(used, noted)
                if (self._used, self._noted) != (used, noted):
                    text = f"{self._used} {int(self._noted)}\n".encode()
                    os.pwrite(descriptor, text, 0)
                    os.ftruncate(descriptor, len(text))
                return result
            finally:
                os.close(descriptor)  # releases the lock

    def _parse(self, data: bytes) -> tuple[int, bool]:
        """The ledger's ``USED NOTED``; an empty ledger is a new one, anything else that does
        not read as a count is taken as a spent budget (it is never taken to be larger)."""
        if not data.strip():
            return 0, False
        parts = data.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1] in (b"0", b"1"):
            return int(parts[0]), parts[1] == b"1"
        return self.cap, True


class LogSink:
    """Drains a pipe into a file within a :class:`LogBudget`, keeping the last lines in
    memory."""

    def __init__(
        self, pipe: int, path: Path | None, budget: LogBudget, keep_lines: int = 20
    ) -> None:
        self._pipe = pipe
        self._path = path
        self._budget = budget
        self.written = 0
        self.dropped = 0
        self._tail: deque[str] = deque(maxlen=keep_lines)
        self._partial = b""
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, daemon=True, name="bot-log")
        self._thread.start()

    def _drain(self) -> None:
        file = None
        if self._path is not None:
            # A log that cannot be opened is lost, but the pipe must still be read: a bot
            # whose pipe fills up blocks in its next write.
            with contextlib.suppress(OSError):
                file = self._path.open("ab")
        try:
            while True:
                try:
                    chunk = os.read(self._pipe, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                room = 0
                if file is not None:
                    room = self._budget.take(len(chunk))
                    with contextlib.suppress(OSError):  # a full disk, say: keep draining
                        if room:
                            file.write(chunk[:room])
                        if room < len(chunk) and self._budget.take_note():
                            file.write(self._budget.note_text())
                        file.flush()
                    self.dropped += len(chunk) - room
                self.written += room
                self._remember(chunk)
        finally:
            with contextlib.suppress(OSError):
                os.close(self._pipe)
            if file is not None:
                with contextlib.suppress(OSError):
                    file.close()

    def _remember(self, chunk: bytes) -> None:
        # Only the tail matters; bound the work for a bot that floods its output.
        data = self._partial + chunk[-8192:]
        lines = data.split(b"\n")
        self._partial = lines.pop()[-1024:]
        with self._lock:
            for line in lines[-self._tail.maxlen if self._tail.maxlen else 0 :]:
                self._tail.append(line[-500:].decode("utf-8", "replace"))

    def tail(self) -> list[str]:
        """The last lines seen, the unfinished last line included."""
        with self._lock:
            lines = list(self._tail)
        if self._partial:
            lines.append(self._partial.decode("utf-8", "replace"))
        return lines

    def join(self, timeout: float) -> None:
        """Wait for the pipe to close (the process and its children are gone)."""
        self._thread.join(timeout)


class BotProcess:
    """One started bot process, in a process group of its own; in a sandbox of its own with
    ``sandbox`` enabled, and in cgroups of its own where the machine has them."""

    def __init__(
        self,
        spec: BotSpec,
        *,
        endpoint: str,
        token: str,
        log_path: Path | None,
        extra_env: Mapping[str, str] | None = None,
        sandbox: SandboxPlan | None = None,
        socket_path: str | None = None,
        log_budget: LogBudget | None = None,
    ) -> None:
        """``log_budget``: what this process may add to the bot's log (default: the bot's
        ``limits.log_bytes`` for this process alone)."""
        self._token = token
        if spec.is_remote:
            raise ValueError(f"bot {spec.name!r} is remote: it has no command to start")
        self.spec = spec
        self.sandboxed = sandbox is not None and sandbox.enabled
        bot_env = dict(spec.env)
        bot_env.update(extra_env or {})
        bot_env["AEGIS_ENDPOINT"] = endpoint
        bot_env["AEGIS_TOKEN"] = token
        bot_env.setdefault("PYTHONUNBUFFERED", "1")
        # Bundled bots' run scripts start Python bots with the referee's own interpreter.
        bot_env.setdefault("AEGIS_PYTHON", sys.executable)
        limits = spec.limits
        # Linux ties the parent-death signal to the thread that starts the child, so ask for
        # it only from the main thread, whose end is the process's end. Bots started from
        # other threads (a Dask worker's) are covered by tournaments/run/reaper.py instead.
        main_thread = threading.current_thread() is threading.main_thread()
        parent = os.getpid() if main_thread else None
        argv = list(spec.command)
        if self.sandboxed:
            assert sandbox is not None
            home = spec.home or bot_home(spec.command, spec.cwd)
            problem = unshown_program(
                spec.command, home=home, read_only=spec.read_only, cwd=spec.cwd
            )
            if problem is not None:
                raise ProgramNotShownError(problem)
            argv = sandbox_command(
                argv,
                home=home,
                endpoint=socket_path,
                main_thread=main_thread,
                # Where it would run unsandboxed, so relative paths in its command (``python3
                # bots/x.py``) mean the same: the folder holds what the sandbox shows of it.
                cwd=spec.cwd if spec.cwd is not None else _current_directory(),
                read_only=spec.read_only,
                hidden=sandbox.hidden,
                tmp_mb=limits.tmp_mb,
            )
            env = sandbox_environment(bot_env)
        else:
            env = dict(os.environ)
            env.update(bot_env)
        self.cgroup: BotCgroup | None = None
        support = detect_cgroups()
        if support.v1 or support.v2 is not None:
            cpus: set[int] | None = None
            with contextlib.suppress(OSError):
                cpus = os.sched_getaffinity(0)
            self.cgroup = BotCgroup(
                support,
                _group_name(),
                memory_mb=limits.memory_mb,
                processes=limits.processes,
                cpus=cpus,
            )
            for problem in self.cgroup.problems:
                _warn_once(f"bot {spec.name}: {problem}")
        cgroup = self.cgroup
        try:
            read_end, write_end = os.pipe()
        except OSError:
            if cgroup is not None:
                cgroup.remove()
            raise
        try:
            self._process = subprocess.Popen(  # the command is the organiser's, by design
                argv,
                cwd=None if self.sandboxed else spec.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=write_end,
                stderr=write_end,
                start_new_session=True,  # its own process group: killpg reaches its children
                preexec_fn=lambda: prepare_child(limits, parent, cgroup),
                close_fds=True,
            )
        except OSError:
            os.close(read_end)
            if self.cgroup is not None:
                self.cgroup.remove()
            raise
        finally:
            os.close(write_end)
        self.started_at = time.monotonic()
        self._log = LogSink(read_end, log_path, log_budget or LogBudget(limits.log_bytes))

    @property
    def pid(self) -> int:
        """The bot's process id (also its process group id); in a sandbox, bubblewrap's."""
        return self._process.pid

    def exit_code(self) -> int | None:
        """The exit status if the process has ended, else None (negative: killed by signal).

        bubblewrap reports a sandboxed bot killed by signal N as exit code 128 + N; that is
        turned back into -N here, so both read alike."""
        code = self._process.poll()
        if code is not None and self.sandboxed and 128 < code < 128 + 65:
            return -(code - 128)
        return code

    def stderr_tail(self) -> list[str]:
        """The last lines the bot wrote to stdout or stderr."""
        return self._log.tail()

    @property
    def log_bytes_dropped(self) -> int:
        """Output discarded beyond the log cap."""
        return self._log.dropped

    def memory_exceeded(self) -> bool:
        """Whether the kernel killed a process of this bot for its cgroup memory limit."""
        return self.cgroup is not None and self.cgroup.memory_exceeded()

    def freeze(self, frozen: bool = True) -> None:
        """Freeze (or thaw) the bot and everything it started, where a freezer exists."""
        if self.cgroup is not None:
            self.cgroup.freeze(frozen)

    def stop(self, grace: float = 1.0) -> int | None:
        """Wait up to ``grace`` seconds for the bot to exit, then SIGTERM and SIGKILL its whole
        process group (its sandbox, its cgroups); return the exit status. Safe to call more
        than once."""
        process = self._process
        self.freeze(False)  # a frozen bot can neither exit nor, under cgroup v1, die
        deadline = time.monotonic() + grace
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.sandboxed:
            # The sandbox's first process: when it dies, the kernel kills every process in
            # the sandbox's PID namespace, whatever session or environment they made.
            for child in child_pids(process.pid):
                with contextlib.suppress(OSError):
                    os.kill(child, signal.SIGKILL)
        for sig, wait in ((signal.SIGTERM, 0.5), (signal.SIGKILL, 2.0)):
            # The group may outlive its leader (children that ignore SIGTERM), so signal it
            # whether or not the leader has exited.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(wait)
            if process.poll() is not None and not _group_alive(process.pid):
                break
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(1.0)
        if self.cgroup is not None:
            self.cgroup.remove()  # everything it started, wherever it went
        kill_by_token(self._token)  # descendants that escaped the process group
        self._log.join(1.0)
        return self.exit_code()


_warned: set[str] = set()
_warned_lock = threading.Lock()


def _warn_once(text: str) -> None:
    """Log a warning the first time this process meets it (a bot is started for every
    match: the same refused limit would otherwise fill the log)."""
    with _warned_lock:
        if text in _warned:
            return
        _warned.add(text)
    _log.warning("%s (the bot runs without this limit)", text)


def _current_directory() -> str | None:
    """This process's working directory; None if it was removed."""
    try:
        return os.getcwd()
    except OSError:
        return None


_group_numbers = itertools.count(1)


def _group_name() -> str:
    return f"bot-{next(_group_numbers)}"


def child_pids(pid: int) -> list[int]:
    """The children of process ``pid`` (Linux: from /proc)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            path = f"/proc/{pid}/task/{task}/children"
            with contextlib.suppress(OSError, ValueError), open(path, encoding="ascii") as stream:
                found.extend(int(item) for item in stream.read().split())
    return found


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _load_prctl() -> Callable[..., int] | None:
    try:
        return cast("Callable[..., int]", ctypes.CDLL(None, use_errno=True).prctl)
    except (OSError, AttributeError):  # not Linux
        return None


_prctl = _load_prctl()  # looked up here: the child between fork and exec should do little
_PR_SET_PDEATHSIG = 1


def prepare_child(limits: ResourceLimits, parent: int | None, cgroup: BotCgroup | None) -> None:
    """Runs in the child between fork and exec: the cgroups, the parent-death signal, then
    the limits."""
    if cgroup is not None:
        cgroup.join_in_child()
    if parent is not None and _prctl is not None:
        # A referee killed outright (SIGKILL, the out-of-memory killer) cannot stop its bots:
        # the kernel does, so no bot outlives it blocked on a socket nobody reads.
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if os.getppid() != parent:  # the referee died before the request took effect
            os._exit(1)
    _apply_limits(limits)


def _apply_limits(limits: ResourceLimits) -> None:
    """Runs in the child between fork and exec."""
    pairs: Sequence[tuple[int, int | None]] = (
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (
            resource.RLIMIT_AS,
            None if limits.address_space_mb is None else limits.address_space_mb * 1024 * 1024,
        ),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (
            resource.RLIMIT_FSIZE,
            None if limits.file_size_mb is None else limits.file_size_mb * 1024 * 1024,
        ),
    )
    for kind, value in pairs:
        if value is not None:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(kind, (value, value))
