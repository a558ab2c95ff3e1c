"""The worker side of a tournament: play one scheduled match, return plain data.

:func:`play_match_task` is what the coordinator submits to its executor: a top-level,
picklable function from a :class:`MatchTask` (plain data: the match, the two bot specs, the
rules and clock) to a :class:`MatchOutcome` (the row for the results store and the record
lines). Any :class:`concurrent.futures.Executor` whose workers can import this module can run
it; the default is a local process pool.

Each worker process keeps one :class:`~referee.runner.MatchRunner` in a module global, made
on its first task, so bot processes stay alive from match to match. The runner is closed
(every bot stopped) when the worker process exits normally, and a watchdog thread kills the
bots and ends the worker if the coordinator dies without shutting the pool down (``kill -9``).
A long-lived executor (Dask, say) can also submit :func:`close_worker_runner` at the end.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import multiprocessing
import multiprocessing.connection
import multiprocessing.util
import os
import signal
import socket
import statistics
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from referee.bots import BotSpec
from referee.options import RulesOptions
from referee.records import dumps_line
from referee.runner import MatchReport, MatchRunner, TimeControl

__all__ = [
    "MatchOutcome",
    "MatchTask",
    "close_worker_runner",
    "init_worker",
    "play_match_task",
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


@dataclass(frozen=True, slots=True)
class MatchOutcome:
    """A played match: its results-store row and its record, one JSON text per line."""

    row: dict[str, Any]
    record: list[str]


# ---------------------------------------------------------------------------------------------
# The per-worker runner

_lock = threading.Lock()
_runner: MatchRunner | None = None
_runner_key: str | None = None


def close_worker_runner() -> None:
    """Stop this worker's bots and close its runner (idempotent)."""
    global _runner, _runner_key
    with _lock:
        runner, _runner, _runner_key = _runner, None, None
    if runner is not None:
        runner.close()


def _worker_runner(task: MatchTask) -> MatchRunner:
    global _runner, _runner_key
    if _runner is not None and _runner_key == task.runner_key:
        return _runner
    close_worker_runner()
    log_dir = None
    if task.output is not None:
        log_dir = Path(task.output) / "logs" / f"{socket.gethostname()}-{os.getpid()}"
    runner = MatchRunner(
        options=task.options,
        time_control=task.time_control,
        log_dir=log_dir,
    )
    with _lock:
        _runner, _runner_key = runner, task.runner_key
    return runner


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
    ``settle`` seconds: the main thread may be starting a bot meanwhile. A child killed
    between fork and ``setsid`` has no group of its own yet, hence the plain kill too."""
    started = last_seen = time.monotonic()
    while time.monotonic() - started < limit:
        children = _live_children()
        for pid in children:
            for kill in (os.killpg, os.kill):
                with contextlib.suppress(OSError):
                    kill(pid, signal.SIGKILL)
        now = time.monotonic()
        if children:
            last_seen = now
        elif now - last_seen >= settle:
            return
        time.sleep(0.02)


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


def init_worker() -> None:
    """Initialiser of a pool worker process: ignore Ctrl-C (the coordinator handles it and
    lets the workers finish), close the runner at exit, and watch for the coordinator's
    death."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The coordinator starts workers with SIGINT blocked; ignored from now on, it may come.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
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
    """Per seat: decisions answered, mean and max decision time in ms."""
    per_seat: list[list[float]] = [[], []]
    for game, timings in zip(report.games, report.timings, strict=True):
        for turn, milliseconds in zip(game.history, timings, strict=False):
            per_seat[int(turn.seat)].append(milliseconds)
    return {
        "decisions": [len(times) for times in per_seat],
        "mean_ms": [round(statistics.fmean(times), 3) if times else None for times in per_seat],
        "max_ms": [round(max(times), 3) if times else None for times in per_seat],
    }


def result_row(
    report: MatchReport, *, record_path: str, duration_s: float, worker: str
) -> dict[str, Any]:
    """The results-store row of a played match (see ``tournaments.store.RESULT_COLUMNS``)."""
    result = None if report.match is None else report.match.result
    void = report.void or result is None
    fault = report.forfeit_fault
    games_won = [0, 0]
    for game in report.games:
        if game.result is not None:
            games_won[int(game.result.winner)] += 1
    winner_seat = None if void or result is None else int(result.winner)
    return {
        "match_id": report.match_id,
        "seat0": report.players[0],
        "seat1": report.players[1],
        "void": int(void),
        "winner_seat": winner_seat,
        "winner": None if winner_seat is None else report.players[winner_seat],
        "termination": "void" if void or result is None else result.termination.value,
        "score0": 0 if result is None else result.scores[0],
        "score1": 0 if result is None else result.scores[1],
        "games": 0 if result is None else result.games,
        "games_won0": games_won[0],
        "games_won1": games_won[1],
        "forfeit_seat": None if fault is None else fault.seat,
        "forfeit_bot": None if fault is None else fault.bot,
        "forfeit_kind": None if fault is None else fault.kind.value,
        "forfeit_json": None if fault is None else json.dumps(fault.to_json()),
        "faults_json": json.dumps([item.to_json() for item in report.faults]),
        "timings_json": json.dumps(_timings_summary(report)),
        "record_path": record_path,
        "duration_s": round(duration_s, 4),
        "worker": worker,
        "finished_at": datetime.now(UTC).isoformat(timespec="milliseconds"),
    }


def play_match_task(task: MatchTask) -> MatchOutcome:
    """Play one scheduled match with this worker's runner; never raises for bot faults."""
    runner = _worker_runner(task)
    started = time.perf_counter()
    report = runner.play(list(task.bots), task.seed, task.match_id)
    duration = time.perf_counter() - started
    record = [dumps_line(line) for line in report.record_lines(1)]
    row = result_row(
        report,
        record_path=f"records/match-{task.match_id}.jsonl",
        duration_s=duration,
        worker=f"{socket.gethostname()}:{os.getpid()}",
    )
    return MatchOutcome(row, record)
