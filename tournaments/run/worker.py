"""The worker side of a tournament: play one scheduled match, return plain data.

:func:`play_match_task` is what the coordinator submits to its executor: a top-level,
picklable function from a :class:`MatchTask` (plain data: the match, the two bot specs, the
rules and clock) to a :class:`MatchOutcome` (the row for the results store and the record
lines). Any :class:`concurrent.futures.Executor` whose workers can import this module can run
it; the default is a local process pool.

Each worker thread keeps one :class:`~referee.runner.MatchRunner` in a module-level table,
made on its first task, so bot processes stay alive from match to match. A pool worker
process has one thread, hence one runner; a Dask worker runs tasks in several threads of one
process, and each gets a runner (and bots) of its own, since a runner plays one match at a
time. The runners are closed (every bot stopped) when the worker process exits normally, or
when the coordinator runs :func:`close_worker_runner` on every worker of a long-lived
executor (Dask) at the end of a tournament.

Bots must not outlive their worker, nor a local pool worker its coordinator. A pool worker
asks the kernel, before its first import, to kill it the moment the coordinator dies
(:mod:`tournaments.run.worker_boot`), and its bots die with it the same way; where that cannot be
asked for, a watchdog thread kills the bots and ends the worker, and a worker whose
coordinator is gone never starts a match. What the bots started in turn escapes the kernel's
signal, so every worker process (a pool worker, or a Dask worker, which may itself be killed)
also starts a reaper process before its first bot (:mod:`tournaments.run.reaper`), which kills
whatever is left of the worker's bots, by marker and by cgroup, once the worker is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import multiprocessing
import multiprocessing.connection
import multiprocessing.util
import os
import queue
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from referee.bots import BotSpec, kill_until_gone
from referee.cgroups import release_folders
from referee.cpu_clock import ClockUnavailableError
from referee.listeners import RemoteLink
from referee.preflight import PreflightResult, preflight_bots
from referee.records import dumps_line
from referee.rules.options import RulesOptions
from referee.runner import MatchReport, MatchRunner
from referee.sandbox import SandboxPlan, bubblewrap_problem
from referee.time_control import TimeControl
from tournaments.errors import ClusterError
from tournaments.run import reaper
from tournaments.store.rows import ResultRow

__all__ = [
    "MatchOutcome",
    "MatchTask",
    "bot_problems",
    "close_worker_runner",
    "init_worker",
    "match_outcome",
    "play_match_batch",
    "play_match_task",
    "preflight_task",
    "reaped",
    "result_row",
]


@dataclass(frozen=True, slots=True)
class MatchTask:
    """Everything a worker needs to play one match: plain, picklable data (frozen
    dataclasses of strings and numbers)."""

    match_id: str
    seed: int
    #: The bots by seat, seat 0 first.
    bots: tuple[BotSpec, BotSpec]
    options: RulesOptions = field(default_factory=RulesOptions)
    time_control: TimeControl = field(default_factory=TimeControl)
    #: The output directory: bot logs go to ``logs/`` in it, and the record path is relative
    #: to it. None: no bot logs.
    output: str | None = None
    #: Identifies the tournament's settings and bots: a worker reuses its runner (and its bot
    #: processes) only for tasks with the same key.
    runner_key: str = ""
    #: How the runner reaches the tournament's remote bots (its hub), if it has any.
    remote_link: RemoteLink | None = None
    #: How long a match waits for a connection of a remote bot.
    remote_connect_s: float = 60.0
    #: Remote bots the tournament gave up waiting for: this match does not wait for them.
    absent: tuple[str, ...] = ()
    #: How the bots are started: sandboxed or not (resolved by the coordinator).
    sandbox: SandboxPlan | None = None
    #: The match's number in its record (a tournament's records hold one match each).
    record_number: int = 1
    #: Where the bot logs go, a folder per worker thread in it, instead of the output
    #: directory's ``logs/``.
    log_root: str | None = None
    #: Where the ledgers of the bots' log caps are kept, instead of the log root.
    log_budget: str | None = None


@dataclass(frozen=True, slots=True)
class MatchOutcome:
    """A played match: its results-store row and its record, one JSON text per line."""

    row: ResultRow
    record: list[str]


# ---------------------------------------------------------------------------------------------
# The per-worker runners


@dataclass(slots=True, eq=False)
class _Slot:
    """One worker thread's runner, for the tasks of one runner key."""

    key: str
    runner: MatchRunner
    #: Set by :func:`close_worker_runner` while the runner plays: its thread closes it after.
    retired: bool = False


_lock = threading.Lock()
#: The runner of each worker thread (by thread identifier) and the threads playing a match.
_slots: dict[int, _Slot] = {}
_playing: set[int] = set()
#: A per-process number of each thread that made a runner: its bot logs' directory.
_thread_numbers: dict[int, int] = {}
#: Set in a local pool worker, which watches its coordinator (and ends with it).
_in_pool = False
#: This process's reaper and the marker its bots carry (once the first bot is due).
_reaper: subprocess.Popen[bytes] | None = None
_marker: str | None = None


def close_worker_runner() -> None:
    """Stop this worker process's bots and close its runners (idempotent). A runner in the
    middle of a match is closed by its own thread as soon as the match ends; once none is,
    the reaper (if any) is let go too, and the next task starts a fresh one."""
    global _reaper, _marker
    with _lock:
        idle = [slot for ident, slot in _slots.items() if ident not in _playing]
        for slot in _slots.values():
            slot.retired = True
        _slots.clear()
        reaper_process = None
        if not _playing:
            reaper_process, _reaper, _marker = _reaper, None, None
    for slot in idle:
        slot.runner.close()
    if not _playing:
        release_folders()  # a pool worker leaves through os._exit, past atexit
    if reaper_process is not None:
        _stop_reaper(reaper_process)


def _stop_reaper(process: subprocess.Popen[bytes]) -> None:
    """Tell the reaper the bots were stopped, close its pipe (it exits) and reap it."""
    with contextlib.suppress(OSError):
        if process.stdin is not None:
            process.stdin.write(reaper.CLEAN_END)
            process.stdin.flush()
    with contextlib.suppress(OSError):
        if process.stdin is not None:
            process.stdin.close()
    try:
        process.wait(5.0)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5.0)


def _log_dir(task: MatchTask, ident: int) -> tuple[Path, Path] | None:
    """Where this thread's bots log: ``logs/<host>-<pid>[-<n>]`` in the output directory,
    which on a remote worker is the same path on that machine; a temporary directory if that
    cannot be made there. With it, the folder above it, which holds the ledgers of the bots'
    log caps: one cap per bot for the whole tournament, shared by every worker (on one
    machine, or a shared file system) and kept when the tournament is resumed."""
    if task.log_root is not None:
        root = Path(task.log_root)
    elif task.output is not None:
        root = Path(task.output) / "logs"
    else:
        return None
    with _lock:
        number = _thread_numbers.setdefault(ident, len(_thread_numbers))
    name = f"{socket.gethostname()}-{os.getpid()}" + (f"-{number}" if number else "")
    for base in (root, Path(tempfile.gettempdir()) / "aegis-ref-logs"):
        path = base / name
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        return path, base if task.log_budget is None else Path(task.log_budget)
    return None


def bot_problems(bots: Sequence[BotSpec]) -> list[str]:
    """What stops this machine from starting these bots: a program or working directory
    that is missing or not executable. Empty when every bot can start."""
    problems = []
    for spec in bots:
        if spec.is_remote:
            continue
        program = spec.command[0]
        if "/" in program:
            if not (os.path.isfile(program) and os.access(program, os.X_OK)):
                problems.append(
                    f"bot {spec.name!r}: program {program!r} is missing or not executable"
                )
        elif shutil.which(program) is None:
            problems.append(f"bot {spec.name!r}: program {program!r} is not on PATH")
        if spec.cwd is not None and not os.path.isdir(spec.cwd):
            problems.append(f"bot {spec.name!r}: working directory {spec.cwd!r} is missing")
    return problems


def _runner_for(task: MatchTask, ident: int) -> _Slot:
    """This thread's runner for the task's key: reused, or made (closing one of another key)."""
    with _lock:
        slot = _slots.get(ident)
        stale = None
        if slot is not None and slot.key != task.runner_key:
            stale, slot = slot, None
            del _slots[ident]
    if stale is not None:
        stale.runner.close()
    if slot is None:
        problems = [] if _in_pool else bot_problems(task.bots)
        if not _in_pool and task.sandbox is not None and task.sandbox.enabled:
            missing = bubblewrap_problem()
            if missing is not None:
                problems.append(f"the tournament sandboxes its bots, but {missing}")
        if problems:
            # Fail the task rather than record a forfeit that this machine caused: a worker
            # without a bot's program is a cluster set up wrongly (docs/cluster.md).
            where = f"{socket.gethostname()}:{os.getpid()}"
            raise ClusterError(f"worker {where} cannot start the bots: {'; '.join(problems)}")
        logs = _log_dir(task, ident)
        runner = MatchRunner(
            options=task.options,
            time_control=task.time_control,
            log_dir=None if logs is None else logs[0],
            log_budget_dir=None if logs is None else logs[1],
            remote_link=task.remote_link,
            remote_connect_s=task.remote_connect_s,
            sandbox=task.sandbox,
        )
        slot = _Slot(task.runner_key, runner)
        with _lock:
            _slots[ident] = slot
    return slot


def _bot_marker() -> str:
    """The marker of this process's bots, starting its reaper on first use."""
    global _reaper, _marker
    with _lock:
        if _marker is None:
            marker = f"{socket.gethostname()}-{os.getpid()}-{os.urandom(6).hex()}"
            _reaper = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    str(Path(reaper.__file__).resolve()),
                    marker,
                    str(os.getpid()),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # out of reach of signals sent to this group
                close_fds=True,
            )
            _marker = marker
        return _marker


def reaped(spec: BotSpec) -> BotSpec:
    """``spec`` marked for this process's reaper (started on first use): whatever the bot
    leaves behind dies once this process is gone, however it went (``kill -9`` too). For
    every process that starts bots: pool and Dask workers, and the commands that play in
    their own process (``match``, ``sprt`` at concurrency 1, ``check-bot``, ``play``, a
    tournament's preflight). A remote bot is returned as it is."""
    if spec.is_remote:
        return spec
    return replace(spec, env={**spec.env, reaper.MARKER_VARIABLE: _bot_marker()})


# Closed when the process ends: atexit for a plain interpreter, a multiprocessing finaliser
# for a pool worker (which leaves through os._exit, skipping atexit).
atexit.register(close_worker_runner)


def _live_children() -> list[int]:
    """Pids of this process's children that are not zombies (Linux: reads /proc)."""
    me = os.getpid()
    children = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != b"Z" and int(fields[1]) == me:
                children.append(int(entry.name))
    return children


def _kill_children(settle: float = 0.3, limit: float = 5.0) -> None:
    """SIGKILL every child (the bots) and its process group, until none has been seen for
    ``settle`` seconds: the main thread may be starting a bot meanwhile. The reaper is
    spared: it is a child too, and what the bots left behind (out of their process groups)
    is for it to kill once this worker is gone."""
    spared = None if _reaper is None else _reaper.pid

    def bots() -> list[int]:
        return [pid for pid in _live_children() if pid != spared]

    kill_until_gone(bots, settle=settle, limit=limit, interval=0.02)


def _orphaned() -> bool:
    """True in a pool worker whose coordinator is gone."""
    parent = multiprocessing.parent_process()
    return _in_pool and parent is not None and os.getppid() != parent.pid


def _watch_coordinator(parent_sentinel: int | None, parent_pid: int) -> None:
    """Wait for the coordinator to die; then kill the bots and end this worker at once."""
    while True:
        if parent_sentinel is not None:
            if multiprocessing.connection.wait([parent_sentinel], timeout=None):
                break
        else:
            time.sleep(0.25)
            if os.getppid() != parent_pid:
                break
    _kill_children()
    os._exit(1)


def init_worker(cpu_slots: Any = None) -> None:
    """Initialiser of a pool worker process: ignore Ctrl-C (the coordinator handles it and
    lets the workers finish), close the runner at exit, and watch for the coordinator's
    death. ``cpu_slots``: a queue of CPU groups; this worker takes one and keeps itself and
    its bots (which inherit it) to those CPUs."""
    if cpu_slots is not None:
        # Never fatal: without a group (none left, or the CPUs went away) it runs unpinned.
        with contextlib.suppress(OSError, queue.Empty, ValueError):
            os.sched_setaffinity(0, cpu_slots.get(timeout=5.0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The coordinator starts workers with SIGINT blocked; ignored from now on, it may come.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    global _in_pool
    _in_pool = True
    multiprocessing.util.Finalize(None, close_worker_runner, exitpriority=100)
    parent = multiprocessing.parent_process()
    sentinel = parent.sentinel if parent is not None else None
    threading.Thread(
        target=_watch_coordinator,
        args=(sentinel, os.getppid()),
        daemon=True,
        name="coordinator-watchdog",
    ).start()


# ---------------------------------------------------------------------------------------------
# A match


def _timings_summary(report: MatchReport) -> dict[str, Any]:
    """Per seat: decisions answered, mean and max decision time in ms, and each decision's
    wall time and (on the CPU clock) CPU charge, in ms to 0.01, for the standings' medians."""
    per_seat: list[list[float]] = [[], []]
    charged: list[list[float]] = [[], []]
    for game, timings, charges in zip(report.games, report.timings, report.charges, strict=True):
        for turn, milliseconds, charge in zip(game.history, timings, charges, strict=False):
            per_seat[int(turn.seat)].append(milliseconds)
            if charge is not None:
                charged[int(turn.seat)].append(round(charge[0], 2))
    return {
        "decisions": [len(times) for times in per_seat],
        "mean_ms": [round(statistics.fmean(times), 3) if times else None for times in per_seat],
        "max_ms": [round(max(times), 3) if times else None for times in per_seat],
        "wall_ms": [[round(time, 2) for time in times] for times in per_seat],
        "cpu_ms": charged,
    }


def result_row(
    report: MatchReport, *, record_path: str, duration_s: float, worker: str
) -> ResultRow:
    """The results-store row of a played match."""
    result = None if report.match is None else report.match.result
    void = report.void or result is None
    fault = report.forfeit_fault
    games_won = [0, 0]
    for game in report.games:
        if game.result is not None:
            games_won[int(game.result.winner)] += 1
    winner_seat = None if void or result is None else int(result.winner)
    return ResultRow(
        match_id=report.match_id,
        seat0=report.players[0],
        seat1=report.players[1],
        void=void,
        winner_seat=winner_seat,
        winner=None if winner_seat is None else report.players[winner_seat],
        termination="void" if void or result is None else result.termination.value,
        score0=0 if result is None else result.scores[0],
        score1=0 if result is None else result.scores[1],
        games=0 if result is None else result.games,
        games_won0=games_won[0],
        games_won1=games_won[1],
        forfeit_seat=None if fault is None else fault.seat,
        forfeit_bot=None if fault is None else fault.bot,
        forfeit_kind=None if fault is None else fault.kind.value,
        forfeit_json=None if fault is None else json.dumps(fault.to_json()),
        faults_json=json.dumps([item.to_json() for item in report.faults]),
        timings_json=json.dumps(_timings_summary(report)),
        record_path=record_path,
        duration_s=round(duration_s, 4),
        worker=worker,
        finished_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
    )


def play_match_task(task: MatchTask) -> MatchOutcome:
    """Play one scheduled match with this worker thread's runner; never raises for bot
    faults. Safe to call from several threads of one process (a Dask worker)."""
    if _orphaned():
        os._exit(1)  # no bot starts for a coordinator that is gone
    ident = threading.get_ident()
    with _lock:
        _playing.add(ident)
    slot = None
    try:
        bots = [reaped(spec) for spec in task.bots]
        try:
            slot = _runner_for(task, ident)
        except ClockUnavailableError as error:
            # A worker that joined after the check of the workers, without cgroups: as for a
            # missing bot, fail the task naming the worker (docs/cluster.md).
            where = f"{socket.gethostname()}:{os.getpid()}"
            raise ClusterError(f"worker {where} cannot keep the clock: {error}") from None
        started = time.perf_counter()
        report = slot.runner.play(bots, task.seed, task.match_id, absent=task.absent)
        duration = time.perf_counter() - started
    finally:
        with _lock:
            _playing.discard(ident)
            closing = slot if slot is not None and slot.retired else None
        if closing is not None:
            closing.runner.close()
    return match_outcome(task, report, duration)


def match_outcome(task: MatchTask, report: MatchReport, duration_s: float) -> MatchOutcome:
    """The plain data of a match played for ``task``: its row and its record."""
    record = [dumps_line(line) for line in report.record_lines(task.record_number)]
    row = result_row(
        report,
        record_path=f"records/match-{task.match_id}.jsonl",
        duration_s=duration_s,
        worker=f"{socket.gethostname()}:{os.getpid()}",
    )
    return MatchOutcome(row, record)


def play_match_batch(tasks: Sequence[MatchTask]) -> list[MatchOutcome]:
    """Play several scheduled matches in turn with this worker thread's runner: one task of
    a cluster for a few short matches, to spread its scheduling cost over them."""
    return [play_match_task(task) for task in tasks]


def preflight_task(
    spec: BotSpec, warmup_ms: int, sandbox: SandboxPlan | None, output: str
) -> PreflightResult:
    """A cluster's preflight of one bot: started on this worker as its matches will be (its
    bots carry this worker's reaper marker), logging to ``logs/preflight/`` of ``output``
    where this machine can write there, else to a temporary directory."""
    spec = reaped(spec)
    log_dir = None
    for base in (Path(output) / "logs", Path(tempfile.gettempdir()) / "aegis-ref-logs"):
        with contextlib.suppress(OSError):
            (base / "preflight").mkdir(parents=True, exist_ok=True)
            log_dir = base / "preflight"
            break
    budgets = None if log_dir is None else log_dir.parent  # the run's log caps, as matches
    return preflight_bots(
        [spec], warmup_ms=warmup_ms, sandbox=sandbox, log_dir=log_dir, log_budget_dir=budgets
    )[0]
