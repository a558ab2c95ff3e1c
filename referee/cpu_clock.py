"""The CPU clock: a decision is charged the CPU time the bot's whole cgroup (every process
and thread it started) used from the moment it was asked to the moment its answer arrived.

The count is read with the bot frozen and settled at both ends (:meth:`BotCgroup.
freeze_and_settle`), and the bot stays frozen until it is asked again, so nothing is charged
twice and nothing escapes between decisions. While the bot thinks, the referee looks at the
running count (at most a scheduler tick behind) and stops it once it is over its allowance.
A wall-clock backstop, a multiple of the allowance, ends a bot that sleeps or blocks; time
the machine kept the bot from running (pressure stall information, and the referee's own
waits for a CPU while it sends the request and reads the answer) does not count towards it,
and the record says how long the stall was.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from referee.cgroups import BotCgroup, CgroupSupport, system_cpu_stall_us
from referee.time_control import Clock, TimeControl

__all__ = [
    "ClockUnavailableError",
    "CpuMeter",
    "MeterReading",
    "clock_summary",
    "referee_wait_us",
    "resolve_clock",
]

#: The most a stall may stretch the backstop: a decision never takes longer, in wall time,
#: than this many backstops, however long the machine stalled. Where the stall is the bot's
#: own group's pressure (its processes runnable and kept waiting for a CPU: a bot cannot add
#: to it without spending its own CPU time, which its allowance bounds), a heavily loaded
#: machine may stretch it far; where it is only the machine's pressure, which a busy
#: machine shows whatever the bot does (asleep, say), or the referee's lateness, less.
OWN_STALL_STRETCH = 10.0
MACHINE_STALL_STRETCH = 3.0
#: Longest wait between two looks at a thinking bot's count, in seconds.
_LOOK_SLICE = 0.05
#: Shortest wait, so that a bot close to its allowance does not cost a busy loop.
_LOOK_FLOOR = 0.0005
#: A wait that overran by more than this (seconds) counts as the referee's own lateness.
_LATE_AFTER = 0.002
#: How often (seconds) the list of the referee's threads is read again.
_RELIST_AFTER = 1.0


class _RefereeWaits:
    """How long, in all, every thread of this process (the referee's main thread and
    ZeroMQ's I/O thread among them; the others are mostly asleep and add little) waited in
    a run queue for a CPU: the second field of each thread's
    ``/proc/self/task/TID/schedstat``, read through descriptors kept open. A request the
    I/O thread could not send, or an answer it could not read, for want of a CPU, is time
    the bot spends idle through no fault of its own, and which no pressure figure of the
    bot's shows. The total only grows: a thread that ends keeps its last count in it."""

    def __init__(self) -> None:
        self._descriptors: dict[str, int] = {}
        self._last_ns: dict[str, int] = {}
        self._gone_ns = 0
        self._listed_at = -_RELIST_AFTER
        self.available = True
        # Referees may run in several threads of one process (a Dask worker's, say).
        self._lock = threading.Lock()

    def total_us(self) -> int | None:
        """The total wait in microseconds, or None where the kernel keeps no schedstat."""
        with self._lock:
            return self._total_us()

    def _total_us(self) -> int | None:
        if not self.available:
            return None
        now = time.monotonic()
        if now - self._listed_at >= _RELIST_AFTER:
            self._listed_at = now
            self._relist()
        total = self._gone_ns
        for tid, descriptor in list(self._descriptors.items()):
            try:
                waited = int(os.pread(descriptor, 128, 0).split()[1])
            except (OSError, IndexError, ValueError):
                self._forget(tid)
                continue
            self._last_ns[tid] = waited
            total += waited
        if not self._descriptors and not self._gone_ns:
            self.available = False
            return None
        return total // 1000

    def _relist(self) -> None:
        try:
            alive = set(os.listdir("/proc/self/task"))
        except OSError:
            alive = set()
        for tid in set(self._descriptors) - alive:
            self._forget(tid)
        for tid in alive - set(self._descriptors):
            try:
                self._descriptors[tid] = os.open(
                    f"/proc/self/task/{tid}/schedstat", os.O_RDONLY | os.O_CLOEXEC
                )
            except OSError:
                continue

    def _forget(self, tid: str) -> None:
        self._gone_ns += self._last_ns.pop(tid, 0)
        descriptor = self._descriptors.pop(tid, None)
        if descriptor is not None:
            os.close(descriptor)


_referee_waits = _RefereeWaits()


def referee_wait_us() -> int | None:
    """How long this process's threads have waited for a CPU, in all (microseconds), or
    None where the kernel does not say (no ``schedstat``)."""
    return _referee_waits.total_us()


class ClockUnavailableError(RuntimeError):
    """The time control requires the CPU clock and this machine cannot keep it."""


def resolve_clock(control: TimeControl, support: CgroupSupport) -> tuple[Clock, str | None]:
    """The clock of the bots this referee starts, and a warning when the default CPU clock
    falls back to the wall clock; raise :class:`ClockUnavailableError` when ``cpu`` is
    required and missing. Remote bots get the wall clock whatever this says."""
    if control.clock is Clock.WALL:
        return Clock.WALL, None
    problem = support.cpu_clock_problem()
    if problem is None:
        return Clock.CPU, None
    if control.clock is Clock.CPU:
        raise ClockUnavailableError(
            f"time_control.clock is cpu, but this machine has {problem}; "
            "use clock: wall, or leave clock out to fall back to it"
        )
    return Clock.WALL, f"the CPU clock is not available ({problem}): bots are charged wall time"


def clock_summary(clock: Clock, control: TimeControl, remote: Sequence[str] = ()) -> str:
    """One line for the start of a run: which clock the bots have (``remote``: the names of
    the remote bots, always on the wall clock)."""
    remote_part = f"; wall for the remote bots ({', '.join(remote)})" if remote else ""
    if clock is Clock.WALL:
        return "wall for every bot (charged the wall time of each decision)"
    return (
        "cpu for every started bot (charged the CPU time of all its processes and threads, "
        f"wall-clock backstop {control.backstop:g}x the allowance){remote_part}"
    )


@functools.cache
def _cpu_count() -> int:
    """How many CPUs a bot may run on at once (its cpuset is the referee's affinity)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except OSError:
        return os.cpu_count() or 1


@dataclass(frozen=True, slots=True)
class MeterReading:
    """What the meter found: the CPU ms charged, the ms the machine stalled the bot, and
    the fault's detail when the bot went over its allowance or the backstop."""

    charged_ms: float
    stall_ms: float
    over: str | None = None


@dataclass(slots=True)
class CpuMeter:
    """One decision's CPU clock on one bot's cgroup (see the module's docstring)."""

    cgroup: BotCgroup
    #: The decision's CPU allowance, ms (its deadline, the bank, the warm-up if first).
    allowance_ms: float
    #: The most wall time the decision may take, ms, stalls aside.
    backstop_ms: float
    start_usage_us: int
    #: The stall count at the start: the bot's group's own, or else the machine's.
    start_stall_us: int | None
    own_stall: bool
    #: The referee's own run-queue wait at the start (:func:`referee_wait_us`).
    start_referee_wait_us: int | None = None
    started: float = 0.0
    #: Seconds the referee itself came back late from its waits.
    late_s: float = 0.0

    @classmethod
    def start(cls, cgroup: BotCgroup, allowance_ms: float, backstop: float) -> CpuMeter:
        """Freeze the bot, let it settle and read its count: the decision's zero. The caller
        thaws it and asks, then sets :attr:`started`."""
        cgroup.freeze_and_settle()
        stall = cgroup.cpu_stall_us()
        own_stall = stall is not None
        if stall is None:
            stall = system_cpu_stall_us()
        return cls(
            cgroup,
            allowance_ms,
            allowance_ms * backstop,
            cgroup.cpu_usage_us() or 0,
            stall,
            own_stall,
            referee_wait_us(),
        )

    def _used_ms(self) -> float:
        return ((self.cgroup.cpu_usage_us() or 0) - self.start_usage_us) / 1000

    def _stalled_ms(self) -> float:
        """How long the machine kept the bot from running: the pressure stall information
        (the bot's group's, or the machine's), plus the referee's own waits for a CPU (its
        threads' run-queue wait, or its lateness if larger). The two may overlap in time,
        which errs towards the bot; the backstop's cap bounds what any stall can stretch."""
        referee_ms = self.late_s * 1000
        if self.start_referee_wait_us is not None:
            now_us = referee_wait_us()
            if now_us is not None:
                referee_ms = max(referee_ms, (now_us - self.start_referee_wait_us) / 1000)
        pressure_ms = 0.0
        if self.start_stall_us is not None:
            now = self.cgroup.cpu_stall_us() if self.own_stall else system_cpu_stall_us()
            if now is not None:
                pressure_ms = (now - self.start_stall_us) / 1000
        return pressure_ms + referee_ms

    def settle(self) -> MeterReading:
        """The answer is in: freeze the bot, read its exact count, and say whether it was
        over its allowance. The bot stays frozen until it is asked again."""
        self.cgroup.freeze_and_settle()
        elapsed_ms = (time.monotonic() - self.started) * 1000
        charged = self._used_ms()
        stalled = min(self._stalled_ms(), elapsed_ms)
        over = None
        if charged > self.allowance_ms:
            over = (
                f"used {charged:.1f} ms of CPU time, over its allowance of "
                f"{self.allowance_ms:.0f} ms (CPU clock)"
            )
        return MeterReading(charged, stalled, over)

    def look(self, now: float) -> tuple[MeterReading | None, float]:
        """While the bot thinks: its reading if it must be stopped now (over its CPU
        allowance or past the backstop), else None and how long to wait (seconds) before
        looking again."""
        used = self._used_ms()
        if used >= self.allowance_ms:
            return self.settle(), 0.0
        elapsed_ms = (now - self.started) * 1000
        stalled = self._stalled_ms()
        limit_ms = self.backstop_ms * (
            OWN_STALL_STRETCH if self.own_stall else MACHINE_STALL_STRETCH
        )
        if elapsed_ms - stalled >= self.backstop_ms or elapsed_ms >= limit_ms:
            reading = self.settle()
            if reading.over is not None:
                return reading, 0.0
            stall_note = (
                f"; the machine stalled it for {reading.stall_ms:.0f} ms of that"
                if reading.stall_ms >= 1
                else ""
            )
            detail = (
                f"no answer within the wall-clock backstop: {elapsed_ms:.0f} ms, "
                f"{self.backstop_ms / self.allowance_ms:g}x its CPU allowance of "
                f"{self.allowance_ms:.0f} ms, of which it used {reading.charged_ms:.1f} ms of "
                f"CPU time (sleeping, blocked or waiting?){stall_note}"
            )
            return MeterReading(reading.charged_ms, reading.stall_ms, detail), 0.0
        # A bot on n CPUs spends at most n CPU-ms per ms: look again before it could be over.
        until_over = (self.allowance_ms - used) / 1000 / _cpu_count()
        until_backstop = (min(self.backstop_ms + stalled, limit_ms) - elapsed_ms) / 1000
        return None, max(_LOOK_FLOOR, min(_LOOK_SLICE, until_over, until_backstop))

    def waited(self, asked_s: float, took_s: float) -> None:
        """Note a wait of the referee's that overran (it was not scheduled in time)."""
        if took_s > asked_s + _LATE_AFTER:
            self.late_s += took_s - asked_s
