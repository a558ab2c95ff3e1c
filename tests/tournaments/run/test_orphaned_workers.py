"""A coordinator killed outright (SIGKILL): its pool workers die with it at once, whether
they are still starting (importing) or playing, and none starts a bot once its coordinator is
gone. Real ``aegis-ref tournament`` processes, real workers, real bot processes that note
when they start."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest
import yaml

from referee.rundir import remove_stale_directories
from tests.tournaments.helpers import (
    RAWBOT,
    start_tournament,
    wait_no_processes,
    write_config,
)

BASH = shutil.which("bash") or "/bin/bash"
#: How long a worker may outlive its coordinator.
GRACE_S = 0.5
#: The CPU time a worker has used once it is importing the referee.
IMPORTING_CPU_S = 0.15
#: How long the coordinator may take to start its workers and they their first bots (a
#: busy machine takes many times what an idle one does).
START_S = 90.0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                found.extend(int(item) for item in (task / "children").read_text().split())
    return found


def _is_worker(pid: int) -> bool:
    try:
        return b"--multiprocessing-fork" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _cpu_seconds(pid: int) -> float:
    """The CPU time a process has used (user and system)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _killed(pid: int) -> bool:
    """Whether the kernel has sent the process SIGKILL (pending, for it or its thread group):
    it dies as soon as it next runs, which on a busy machine may take a while."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return True
    pending = 0
    for line in lines:
        name, _, value = line.partition(":")
        if name in ("SigPnd", "ShdPnd"):
            pending |= int(value.strip(), 16)
    return bool(pending & (1 << (signal.SIGKILL - 1)))


def _how(pid: int) -> str:
    """What a process is doing: its state, pending signals, the kernel's flags (PF_EXITING,
    0x4: it is exiting) and where it waits."""
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return "gone"
    wanted = ("State", "SigPnd", "ShdPnd", "Threads")
    fields = [line for line in status if line.split(":")[0] in wanted]
    with contextlib.suppress(OSError, IndexError):
        fields.append(f"flags={Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[6]}")
    return f"{' '.join(fields)} wchan={wchan}"


def _config(tmp_path: Path, starts: Path) -> tuple[Path, str]:
    """Two bots, a fresh process for every match, each appending its ``/proc/PID/stat`` line
    (which holds when it was forked) to ``starts`` as its first act, with bash's builtins
    alone (unsandboxed: no sandbox would let it write there)."""
    config, marker = write_config(
        tmp_path, ["alpha", "beta"], matches_per_pair=40, concurrency=2, sandbox="off"
    )
    data = yaml.safe_load(config.read_text())
    for bot in data["bots"]:
        rawbot = shlex.join([sys.executable, str(RAWBOT), "--name", bot["name"]])
        note = f'read -r stat < /proc/$$/stat; echo "$stat" >> {shlex.quote(str(starts))}'
        bot["command"] = [BASH, "-c", f"{note}; exec {rawbot}"]
        bot["keep_alive"] = False
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return config, marker


def _bot_starts(starts: Path) -> list[tuple[int, float]]:
    """Each bot's worker and when the worker forked it (seconds since boot)."""
    if not starts.exists():
        return []
    found = []
    for line in starts.read_text().splitlines():
        fields = line.rsplit(")", 1)[-1].split()
        if len(fields) > 19:
            found.append((int(fields[1]), int(fields[19]) / os.sysconf("SC_CLK_TCK")))
    return found


@pytest.mark.parametrize("moment", ["while the workers start", "while the bots play"])
def test_workers_die_with_their_coordinator_and_start_no_bot(tmp_path: Path, moment: str) -> None:
    starts = tmp_path / "starts.txt"
    config, marker = _config(tmp_path, starts)
    process = start_tournament(config, tmp_path / "out", tmp_path)
    try:
        deadline = time.monotonic() + START_S
        workers: list[int] = []
        while time.monotonic() < deadline:
            workers = [pid for pid in _children(process.pid) if _is_worker(pid)]
            if moment == "while the workers start":
                # Past the interpreter's own start (some 30 ms of CPU), into the imports of
                # the referee, which take several times that.
                ready = all(_cpu_seconds(pid) >= IMPORTING_CPU_S for pid in workers)
            else:
                # Each worker has started a bot of its match (the preflight's bots, started
                # before, are the coordinator's own: its workers may still be starting).
                ready = {worker for worker, _ in _bot_starts(starts)} >= set(workers)
            if len(workers) == 2 and ready:
                break
            assert process.poll() is None, process.communicate()
            time.sleep(0.002)
        assert len(workers) == 2, "the coordinator did not start its two workers"
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        # Its workers are orphans by now: the kernel reparents them before the wait returns.
        orphaned_at = time.clock_gettime(time.CLOCK_BOOTTIME)
        gone_by = time.monotonic() + GRACE_S
        while any(_alive(pid) for pid in workers) and time.monotonic() < gone_by:
            time.sleep(0.005)
        # One the kernel has sent SIGKILL is as good as gone: it dies when next scheduled.
        survivors = {pid: _how(pid) for pid in workers if _alive(pid) and not _killed(pid)}
        time.sleep(0.3)  # a worker still alive would start its next bot now
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    assert survivors == {}, f"workers outlived their coordinator by {GRACE_S} s: {survivors}"
    # A process's start time is counted in clock ticks, rounded down.
    tick = 1 / os.sysconf("SC_CLK_TCK")
    late = [(parent, when - orphaned_at) for parent, when in _bot_starts(starts)]
    late = [(parent, after) for parent, after in late if after > tick]
    assert late == [], f"orphaned workers started bots (worker, seconds after): {late}"
    assert wait_no_processes(marker) == []
    # A referee killed outright cannot remove its private directory: the next one does.
    remove_stale_directories()
