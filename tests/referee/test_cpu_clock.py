"""The CPU clock against real bots in real cgroups: ``tests/bots/clockwork.py`` spends its
decisions in one way each (spinning, sleeping, thinking in a forked helper, spinning between
its turns) and says how much CPU it used; the tests compare that with what the referee
charged and how it ended the bot."""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from referee import conformance
from referee.bots import BotSpec
from referee.cgroups import CgroupSupport, detect_cgroups
from referee.conformance import CheckSettings, check_bot
from referee.cpu_clock import ClockUnavailableError, resolve_clock
from referee.faults import Fault, FaultKind
from referee.rules.options import RulesOptions
from referee.runner import MatchReport, MatchRunner
from referee.sandbox import bubblewrap_problem, plan_sandbox
from referee.time_control import Clock, TimeControl

CLOCKWORK = Path(__file__).resolve().parents[1] / "bots" / "clockwork.py"
#: Short matches: a few games are decisions enough, and the machine may be busy.
SHORT = RulesOptions(target_score=5)

needs_cpu_clock = pytest.mark.skipif(
    detect_cgroups().cpu_clock_problem() is not None and not os.environ.get("CI"),
    reason=f"no CPU clock here: {detect_cgroups().cpu_clock_problem()}",
)
pytestmark = needs_cpu_clock


def clockwork(name: str, *mode: str) -> BotSpec:
    """The clockwork bot in ``mode``."""
    return BotSpec(name, (sys.executable, str(CLOCKWORK), *mode))


def play(
    tmp_path: Path, bots: tuple[BotSpec, BotSpec], control: TimeControl, *, sandboxed: bool = False
) -> MatchReport:
    """One match on the CPU clock (unless ``control`` says otherwise), logs in tmp_path."""
    with MatchRunner(
        options=SHORT,
        time_control=control,
        log_dir=tmp_path / "logs",
        sandbox=plan_sandbox("required" if sandboxed else "off"),
    ) as runner:
        return runner.play(list(bots), seed=7)


def charges_of(report: MatchReport, seat: int) -> list[tuple[float, float]]:
    """The (CPU ms, stall ms) charged for each decision of ``seat``, in order."""
    found = []
    for game, charges in zip(report.games, report.charges, strict=True):
        for turn, charge in zip(game.history, charges, strict=True):
            if int(turn.seat) == seat:
                assert charge is not None, "a decision off the CPU clock"
                found.append(charge)
    return found


def told_clocks(log: Path) -> list[str]:
    """The clock each ``match_start`` named, as the clockwork bot read it (SDK, 1.2)."""
    return [
        line.split("=", 1)[1]
        for line in log.read_text().splitlines()
        if line.startswith("CLOCKWORK clock=")
    ]


def own_counts(log: Path) -> list[dict[str, float]]:
    """What the clockwork bot said of each decision: its CPU ms and its total so far."""
    counts = []
    for line in log.read_text().splitlines():
        if line.startswith("CLOCKWORK decision="):
            fields = dict(part.split("=", 1) for part in line.split()[1:])
            counts.append({key: float(value) for key, value in fields.items()})
    return counts


def timed_out(tmp_path: Path, bot: BotSpec, control: TimeControl) -> tuple[Fault, float]:
    """``bot`` against a steady one: its timeout fault, and how long the match took (s)."""
    started = time.monotonic()
    report = play(tmp_path, (bot, clockwork("steady", "spin", "0.1")), control)
    fault = report.forfeit_fault
    assert fault is not None
    assert (fault.kind, fault.bot) == (FaultKind.TIMEOUT, bot.name)
    return fault, time.monotonic() - started


def test_a_spinner_over_its_cpu_budget_is_stopped_on_time_with_a_cpu_fault(
    tmp_path: Path,
) -> None:
    control = TimeControl(decision_ms=100, warmup_ms=2000, clock=Clock.CPU)
    spinner = clockwork("spinner", "spin", "30")  # 3 s of CPU for a 100 ms decision
    fault, took = timed_out(tmp_path, spinner, control)
    assert "of CPU time, over its allowance of" in fault.detail
    # Stopped while it spun: long before its 3 s, a little over its allowance at most.
    charged = float(fault.detail.split("used ", 1)[1].split(" ms", 1)[0])
    first = 100 + 2000  # its first decision had the warm-up too
    assert charged < (first if fault.decision == 1 else 100) + 60, fault.detail
    assert took < 30


def test_a_sleeper_is_stopped_by_the_wall_clock_backstop(tmp_path: Path) -> None:
    control = TimeControl(decision_ms=100, warmup_ms=3000, clock=Clock.CPU, backstop=3.0)
    sleeper = clockwork("sleeper", "sleep", "2")  # its first decision (with warm-up) passes
    fault, took = timed_out(tmp_path, sleeper, control)
    assert "no answer within the wall-clock backstop" in fault.detail
    assert fault.decision is not None
    assert fault.decision > 1
    assert "3x its CPU allowance of 100 ms" in fault.detail
    assert "(sleeping, blocked or waiting?)" in fault.detail
    waited = float(fault.detail.split("backstop: ", 1)[1].split(" ms", 1)[0])
    assert 300 <= waited < 2000, fault.detail  # not its 2 s sleep
    assert took < 60


@pytest.mark.parametrize(
    "sandboxed",
    [
        pytest.param(
            True,
            id="sandboxed",
            marks=pytest.mark.skipif(
                bubblewrap_problem() is not None and not os.environ.get("CI"),
                reason=f"no bubblewrap: {bubblewrap_problem()}",
            ),
        ),
        pytest.param(False, id="bare"),
    ],
)
def test_a_bot_that_forks_a_helper_to_think_is_charged_for_the_helper(
    tmp_path: Path, sandboxed: bool
) -> None:
    control = TimeControl(decision_ms=400, warmup_ms=3000, clock=Clock.CPU)
    thinker = clockwork("thinker", "fork-think", "40", "2")  # two helpers, 40 ms each
    report = play(
        tmp_path, (thinker, clockwork("steady", "spin", "0.05")), control, sandboxed=sandboxed
    )
    assert report.faults == [], report.faults
    charges = [cpu for cpu, _ in charges_of(report, 0)]
    counts = own_counts(tmp_path / "logs" / "thinker.log")
    assert len(charges) == len(counts) > 5
    for charged, count in zip(charges, counts, strict=True):
        assert count["cpu_ms"] >= 79, count  # what its helpers used, by its own count
        # Charged all of it, and no more than its own bookkeeping besides.
        assert count["cpu_ms"] - 1 <= charged <= count["cpu_ms"] + 15, (charged, count)


def test_a_bot_that_spins_between_its_turns_is_frozen_and_not_charged_for_it(
    tmp_path: Path,
) -> None:
    control = TimeControl(decision_ms=500, warmup_ms=3000, clock=Clock.CPU)
    # The opponent thinks 50 ms a decision: time the spinner would spin, were it not frozen.
    spinner = clockwork("spinner", "spin-between")
    report = play(tmp_path, (spinner, clockwork("thinker", "spin", "0.1")), control)
    assert report.faults == [], report.faults
    charges = [cpu for cpu, _ in charges_of(report, 0)]
    counts = own_counts(tmp_path / "logs" / "spinner.log")
    assert len(charges) == len(counts) > 5
    # Every CPU ms it used from its first decision to its last was charged to a decision:
    # between its turns it did not run at all.
    used = counts[-1]["total_ms"] - counts[0]["total_ms"]
    assert used <= sum(charges) + 5, (used, sum(charges))
    # And it was charged its own CPU only, none of the opponent's: the decisions wholly
    # between its first count and its last cost no more than it counted there (1 ms a
    # decision for rounding). A busy machine stretches each turn, and so what the spinning
    # thread uses in it, but both sides of this comparison alike.
    between = sum(charges[1:-1])
    assert between <= used + len(charges), (between, used)
    opponent = sum(cpu for cpu, _ in charges_of(report, 1))
    assert opponent >= 0.9 * 50 * len(charges_of(report, 1))


def test_charges_follow_the_bots_own_cpu_time_and_are_recorded(tmp_path: Path) -> None:
    control = TimeControl(decision_ms=100, warmup_ms=3000, clock=Clock.CPU)
    report = play(tmp_path, (clockwork("a", "spin", "0.5"), clockwork("b", "spin", "0.2")), control)
    assert report.faults == [], report.faults
    for seat, name, share in ((0, "a", 0.5), (1, "b", 0.2)):
        counts = own_counts(tmp_path / "logs" / f"{name}.log")
        charges = charges_of(report, seat)
        assert len(charges) == len(counts)
        for (charged, _), count in zip(charges, counts, strict=True):
            assert count["cpu_ms"] >= 100 * share
            assert count["cpu_ms"] - 1 <= charged <= count["cpu_ms"] + 10, (charged, count)
    lines = report.record_lines()
    actions = [action for line in lines if line["type"] == "game" for action in line["actions"]]
    assert all("cpu_ms" in action and "ms" in action for action in actions)
    assert told_clocks(tmp_path / "logs" / "a.log") == ["cpu"]


def test_the_wall_clock_is_kept_when_asked_for(tmp_path: Path) -> None:
    control = TimeControl(decision_ms=3000, warmup_ms=3000, clock=Clock.WALL)
    bots = (clockwork("a", "spin", "0.01"), clockwork("b", "spin", "0.01"))
    report = play(tmp_path, bots, control)
    assert report.faults == []
    assert all(charge is None for charges in report.charges for charge in charges)
    assert told_clocks(tmp_path / "logs" / "b.log") == ["wall"]


def test_without_cgroup_cpu_accounting_the_default_falls_back_to_wall_and_cpu_refuses() -> None:
    bare = CgroupSupport()
    clock, warning = resolve_clock(TimeControl(), bare)
    assert clock is Clock.WALL
    assert warning is not None
    assert "CPU accounting" in warning
    with pytest.raises(ClockUnavailableError, match=r"clock is cpu.*CPU accounting.*freezer"):
        resolve_clock(TimeControl(clock=Clock.CPU), bare)
    assert resolve_clock(TimeControl(clock=Clock.WALL), bare) == (Clock.WALL, None)


_NO_CGROUPS_MATCH = """
import sys
from referee.bots import BotSpec
from referee.cpu_clock import ClockUnavailableError
from referee.runner import MatchRunner
from referee.time_control import Clock, TimeControl
from referee.rules.options import RulesOptions
bot = BotSpec("a", (sys.executable, sys.argv[1], "spin", "0.01"))
short = RulesOptions(target_score=5)
try:
    MatchRunner(time_control=TimeControl(clock=Clock.CPU))
except ClockUnavailableError as error:
    print("REFUSED", error)
with MatchRunner(options=short, time_control=TimeControl(decision_ms=3000)) as runner:
    print("WARNING", runner.clock, runner.clock_warning)
    report = runner.play([bot, bot], seed=3)
    print("PLAYED", report.faults, {c for cs in report.charges for c in cs})
"""


def test_a_referee_without_cgroups_plays_on_the_wall_clock_and_refuses_a_required_cpu() -> None:
    environment = dict(os.environ, AEGIS_CGROUPS="off")
    done = subprocess.run(
        [sys.executable, "-c", _NO_CGROUPS_MATCH, str(CLOCKWORK)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("REFUSED time_control.clock is cpu, but this machine has no")
    assert lines[1].startswith("WARNING wall the CPU clock is not available (no writable")
    assert lines[2] == "PLAYED [] {None}"


def test_a_time_control_checks_its_clock() -> None:
    with pytest.raises(ValueError, match="invalid time control"):
        TimeControl(backstop=0.5)
    with pytest.raises(ValueError, match="invalid time control"):
        TimeControl(clock="cpu")  # type: ignore[arg-type]
    assert replace(TimeControl(), clock=Clock.CPU).clock is Clock.CPU


@contextlib.contextmanager
def cpu_burners(count: int) -> Iterator[None]:
    """``count`` busy loops for as long as the block runs."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait()


def outcome(report: MatchReport) -> tuple[object, ...]:
    """What a match decided: every game's actions and the result, and its faults."""
    assert report.match is not None
    return (
        [game.history for game in report.games],
        report.match.result,
        report.faults,
    )


def test_the_same_matches_idle_and_under_a_cpu_burner_end_the_same(tmp_path: Path) -> None:
    """Two bots that spend 60 % of their CPU budget: under twice as many busy loops as CPUs
    their decisions take longer in wall time and the machine's stalls are recorded; yet
    nothing is charged for the load, no decision times out, and the matches end as they
    did idle. (A backstop wider than the default: what this test asks of the clock is the
    charge, and a machine busier than its burners alone can stall a 60 ms decision past
    three backstops of 180 ms.)"""
    control = TimeControl(decision_ms=60, warmup_ms=5000, clock=Clock.CPU, backstop=20)
    bots = (clockwork("a", "spin", "0.6"), clockwork("b", "spin", "0.6"))
    idle = play(tmp_path / "idle", bots, control)
    with cpu_burners(2 * len(os.sched_getaffinity(0))):
        loaded = play(tmp_path / "loaded", bots, control)
    assert outcome(idle) == outcome(loaded)
    assert idle.faults == []
    charged = {name: [cpu for cpu, _ in charges_of(loaded, seat)] for seat, name in enumerate("ab")}
    assert all(36 <= cpu < 45 for cpus in charged.values() for cpu in cpus), charged
    stalls = [stall for seat in (0, 1) for _, stall in charges_of(loaded, seat)]
    assert max(stalls) > 0  # the burners kept the bots waiting for a CPU, and it shows
    walls = [ms for timings in loaded.timings for ms in timings]
    assert statistics.median(walls) > statistics.median(
        cpu for cpus in charged.values() for cpu in cpus
    )


def test_check_bot_reports_the_cpu_time_of_all_its_threads_and_processes() -> None:
    settings = CheckSettings(decision_ms=1000, warmup_ms=5000, heartbeat_ms=1000, matches=1)
    # Two helper processes thinking 20 ms each at once: twice its answer time in CPU.
    report = check_bot(clockwork("thinker", "fork-think", "20", "2"), settings)
    line = next(item.line() for item in report.items if item.name == "several_matches")
    assert line.startswith("PASS several_matches"), line
    assert "ms in all its processes and threads" in line, line
    per_decision = float(line.split(" ms a decision", 1)[0].rsplit("(", 1)[1])
    assert per_decision >= 40, line  # its helpers' CPU time counted, not its own alone
    # (Whether it says "busy at once" depends on the helpers getting a CPU each at once,
    # which a busy machine does not promise.)
    single = check_bot(clockwork("spinner", "spin", "0.02"), settings)
    line = next(item.line() for item in single.items if item.name == "several_matches")
    assert "ms in all its processes and threads" in line, line
    assert "busy at once" not in line, line


def test_check_bots_cpu_note_says_when_several_cpus_were_busy_at_once() -> None:
    note = conformance._cpu_note(cpu_ms=80.0, thinking_ms=40.0, decisions=2)
    assert "CPU time 80 ms in all its processes and threads (40.0 ms a decision" in note
    assert "it used 2.0 times its answer time in CPU: several threads" in note
    assert "busy at once" not in conformance._cpu_note(40.0, 40.0, 2)
