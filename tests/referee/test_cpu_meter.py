"""The CPU clock's backstop and the machine's stalls, on a group whose counts the test sets:
how far a stall stretches the backstop depends on whose stall it is."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import cast

import pytest

from referee import cpu_clock
from referee.cgroups import BotCgroup
from referee.cpu_clock import CpuMeter

ALLOWANCE_MS = 100.0
BACKSTOP = 3.0


class _CountedGroup:
    """A bot's group as the meter reads it: CPU used and its own stall, set by the test
    (``stall_us`` None: a group that keeps no pressure figures)."""

    def __init__(self, stall_us: int | None) -> None:
        self.usage_us = 0
        self.stall_us = stall_us

    def freeze_and_settle(self, timeout_s: float = 1.0) -> bool:
        return True

    def cpu_usage_us(self) -> int:
        return self.usage_us

    def cpu_stall_us(self) -> int | None:
        return self.stall_us


def _meter(group: _CountedGroup, thought_for_s: float) -> tuple[CpuMeter, float]:
    meter = CpuMeter.start(cast(BotCgroup, group), ALLOWANCE_MS, BACKSTOP)
    meter.started = time.monotonic() - thought_for_s
    return meter, meter.started + thought_for_s


def test_the_bots_own_stall_stretches_the_backstop_up_to_ten_times() -> None:
    group = _CountedGroup(stall_us=0)
    group.usage_us = 20_000  # 20 ms of CPU: well within its allowance
    # 1.5 s of wall time, all of it its processes waiting for a CPU: five backstops.
    meter, now = _meter(group, 1.5)
    group.stall_us = 1_500_000
    stop, _wait = meter.look(now)
    assert stop is None  # the machine's doing, and within ten backstops
    # Past ten backstops (3 s), stalled or not, it ends, and the detail says the stall.
    meter, now = _meter(group, 3.1)
    group.stall_us += 3_100_000
    stop, _wait = meter.look(now)
    assert stop is not None
    assert stop.over is not None
    assert "wall-clock backstop" in stop.over
    assert "the machine stalled it" in stop.over


def test_the_machines_stall_alone_stretches_the_backstop_three_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the bot's group keeps no pressure figure, the machine's may be high whatever
    the bot does (a sleeping bot on a busy machine): it stretches the backstop less."""
    machine = {"stall_us": 0}
    monkeypatch.setattr(cpu_clock, "system_cpu_stall_us", lambda: machine["stall_us"])
    group = _CountedGroup(stall_us=None)
    meter, now = _meter(group, 0.8)
    machine["stall_us"] = 800_000
    assert meter.look(now)[0] is None  # within three backstops (900 ms)
    meter, now = _meter(group, 1.0)
    machine["stall_us"] += 1_000_000
    stop, _wait = meter.look(now)
    assert stop is not None
    assert stop.over is not None
    assert "wall-clock backstop" in stop.over


def test_a_bot_that_is_not_stalled_meets_its_backstop() -> None:
    group = _CountedGroup(stall_us=0)
    meter, now = _meter(group, 0.31)  # asleep for more than 3 x 100 ms, never waiting
    stop, _wait = meter.look(now)
    assert stop is not None
    assert stop.over is not None
    assert "sleeping, blocked or waiting?" in stop.over


def test_the_referees_own_waits_for_a_cpu_do_not_count_against_the_bot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request the referee could not send, or an answer it could not read, for want of a
    CPU leaves the bot idle with no pressure stall of its own: that time is the machine's."""
    referee = {"wait_us": 0}
    monkeypatch.setattr(cpu_clock, "referee_wait_us", lambda: referee["wait_us"])
    group = _CountedGroup(stall_us=0)
    group.usage_us = 5_000
    meter, now = _meter(group, 0.5)  # 500 ms: past its 300 ms backstop...
    referee["wait_us"] = 350_000  # ...of which the referee's threads waited 350 ms
    assert meter.look(now)[0] is None
    referee["wait_us"] = 150_000  # waited less: the bot had 350 ms of its own, too long
    stop, _wait = meter.look(now)
    assert stop is not None
    assert stop.over is not None
    assert "wall-clock backstop" in stop.over
    assert "the machine stalled it for 150 ms" in stop.over


def test_the_referees_wait_is_read_from_its_threads_and_grows_when_kept_from_a_cpu() -> None:
    """The real count: this process, pinned to one CPU beside a busy process, waits for it,
    and the count says so (whatever else the machine is doing: it can only add). The last
    CPU, not the first, where the tests that pin a match to one CPU play side by side."""
    before = cpu_clock.referee_wait_us()
    if before is None:
        pytest.skip("this kernel keeps no per-thread schedstat")
    cpu = max(os.sched_getaffinity(0))
    affinity = os.sched_getaffinity(0)
    spin = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass\n"
    spinners = [subprocess.Popen([sys.executable, "-c", spin])]
    try:
        os.sched_setaffinity(0, {cpu})
        deadline = time.monotonic() + 120
        grown_ms = 0.0
        while time.monotonic() < deadline and grown_ms < 50:
            sum(range(200_000))  # runnable, so it waits its turn behind the spinners
            now = cpu_clock.referee_wait_us()
            assert now is not None
            assert now >= before
            grown_ms = (now - before) / 1000
        assert grown_ms >= 50, f"waited {grown_ms:.1f} ms in 120 s beside a spinner"
    finally:
        os.sched_setaffinity(0, affinity)
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
