"""The reaper: when its pipe ends (the worker died), every process carrying the worker's
marker dies, with its process group, and so does every process in the worker's bot cgroups;
nothing else does."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.cgroups import detect_cgroups, remove_groups_of
from tournaments.run import reaper

SLEEPER = "import subprocess, sys, time\nsubprocess.Popen(sys.argv[1:])\ntime.sleep(60)\n"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_dead(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = [pid for pid in pids if _alive(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if _alive(pid)]
    return alive


def test_the_reaper_kills_marked_processes_when_the_worker_goes(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    marked_env = {**os.environ, reaper.MARKER_VARIABLE: marker}
    # A "bot" in a session of its own, with a child that drops the marker from its
    # environment (only the process group reaches it), and an unrelated process.
    bot = subprocess.Popen(
        [sys.executable, "-c", SLEEPER, "env", "-u", reaper.MARKER_VARIABLE, "sleep", "60"],
        env=marked_env,
        start_new_session=True,
    )
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    watcher = subprocess.Popen(
        [sys.executable, "-I", reaper.__file__, marker],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            group = [
                int(entry.name)
                for entry in Path("/proc").iterdir()
                if entry.name.isdigit()
                and _alive(int(entry.name))
                and _group(int(entry.name)) == bot.pid
            ]
            if len(group) == 2:
                break
            time.sleep(0.05)
        assert len(group) == 2, group
        assert reaper.marked_processes(marker) == [bot.pid]
        time.sleep(0.3)
        assert watcher.poll() is None  # waits for the pipe
        assert watcher.stdin is not None
        watcher.stdin.close()  # the worker is gone
        assert watcher.wait(timeout=15) == 0
        assert _wait_dead(group, timeout=5) == []
        assert watcher.stderr is not None
        assert f"killed 1 bot process(es) of {marker}" in watcher.stderr.read().decode()
        assert _alive(bystander.pid)
    finally:
        for process in (bot, bystander, watcher):
            process.kill()
            process.wait(5)
        if watcher.stderr is not None:
            watcher.stderr.close()


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def test_a_reaper_without_marker_is_a_usage_error() -> None:
    finished = subprocess.run(
        [sys.executable, "-I", reaper.__file__],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert finished.returncode == 2
    assert "usage: reaper.py MARKER" in finished.stderr


#: A stand-in worker: puts a "bot" in a cgroup of its own (as a referee does), the bot leaves
#: an unmarked ``setsid`` sleeper behind in that cgroup, and the worker starts its reaper
#: (unless its argument is ``-``) and prints the reaper's pid (or 0), the sleeper's and its bot
#: cgroups' folders; told ``clean``, it ends its reaper as a worker that stopped its bots does
#: and prints ``ended``; then it waits to be killed.
WORKER = """
import os, subprocess, sys, time
from referee.cgroups import BotCgroup, detect_cgroups
group = BotCgroup(detect_cgroups(), "bot-1", memory_mb=None, processes=None)
bot = subprocess.Popen(
    ["setsid", "env", "-i", "sh", "-c", "sleep 61.5 & echo $!"],
    stdout=subprocess.PIPE, text=True, preexec_fn=group.join_in_child,
)
sleeper = int(bot.stdout.readline())
bot.wait()
watcher = None
if sys.argv[1] != "-":
    watcher = subprocess.Popen(
        [sys.executable, "-I", sys.argv[1], "unused-marker", str(os.getpid())],
        stdin=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
print(watcher.pid if watcher else 0, sleeper, *group.folders, flush=True)
if sys.stdin.readline().strip() == "clean" and watcher is not None:
    watcher.stdin.write(b"q")  # as tournaments/run/worker.py ends cleanly
    watcher.stdin.close()
    watcher.wait(10)
    print("ended", flush=True)
time.sleep(60)
"""


@contextlib.contextmanager
def stand_in_worker(
    reaper_script: str,
) -> Iterator[tuple[subprocess.Popen[str], int, int, list[Path]]]:
    """A WORKER process (with a reaper unless ``reaper_script`` is ``-``): itself, its
    reaper's pid (0 without), its sleeper's pid, its bot cgroups' folders; all killed after."""
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, reaper_script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    sleeper = None
    try:
        assert worker.stdout is not None
        watcher_text, sleeper_text, *folder_texts = worker.stdout.readline().split()
        sleeper = int(sleeper_text)
        folders = [Path(text) for text in folder_texts]
        assert folders
        assert all(folder.is_dir() for folder in folders)
        assert _alive(sleeper)
        yield worker, int(watcher_text), sleeper, folders
    finally:
        _end(worker)
        remove_groups_of(worker.pid)  # whatever a test left there
        if sleeper is not None and _alive(sleeper):
            os.kill(sleeper, 9)


def _end(process: subprocess.Popen[str]) -> None:
    """Kill a stand-in worker and close its pipes."""
    process.kill()
    process.wait(5)
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            stream.close()


@pytest.mark.skipif(not detect_cgroups().has("kill"), reason="no writable cgroups here")
def test_the_reaper_kills_what_is_left_in_a_dead_workers_cgroups() -> None:
    """The sleeper has no marker, no session or group of the bot's, no parent but init: only
    its cgroup finds it. The worker dies with SIGKILL, and its reaper empties and removes the
    worker's cgroup folders."""
    with stand_in_worker(reaper.__file__) as (worker, watcher, sleeper, folders):
        time.sleep(0.3)
        assert _alive(sleeper)  # nothing happens while the worker lives
        worker.kill()
        worker.wait(5)
        assert _wait_dead([sleeper, watcher], timeout=10) == []
        assert not any(folder.parent.exists() for folder in folders)  # aegis-ref-<pid>


@pytest.mark.skipif(not detect_cgroups().has("kill"), reason="no writable cgroups here")
def test_remove_groups_of_kills_and_counts_what_a_workers_cgroups_hold() -> None:
    """What the reaper does once the worker is gone, done here while it lives (so no other
    referee's sweep of dead referees' groups can do it first): the sleeper is killed and
    counted, the folders go, and the worker itself is not touched."""
    with stand_in_worker("-") as (worker, _, sleeper, folders):
        assert remove_groups_of(worker.pid) == 1
        assert _wait_dead([sleeper], timeout=5) == []
        assert not any(folder.parent.exists() for folder in folders)
        assert worker.poll() is None
        assert remove_groups_of(worker.pid) == 0  # nothing left: idempotent


@pytest.mark.skipif(not detect_cgroups().has("kill"), reason="no writable cgroups here")
def test_a_reaper_told_of_a_clean_end_leaves_the_workers_cgroups_alone() -> None:
    """A worker that lives on (a Dask worker between tournaments) ends its reaper cleanly and
    may start bots again at once, under a new reaper: the old one must not kill them. Here
    the sleeper stands for such a bot."""
    with stand_in_worker(reaper.__file__) as (worker, watcher, sleeper, folders):
        assert worker.stdin is not None
        assert worker.stdout is not None
        worker.stdin.write("clean\n")
        worker.stdin.flush()
        assert worker.stdout.readline().strip() == "ended"  # its reaper has exited
        assert not _alive(watcher)
        assert _alive(sleeper)
        assert all(folder.is_dir() for folder in folders)


#: A stand-in pool worker whose coordinator is gone and whose watchdog got there before the
#: kernel's parent-death signal: its reaper is started as for its first bot, a marked "bot"
#: leaves a marked ``setsid`` sleeper behind (no child of the worker's, so only the reaper
#: finds it), and the worker then does what its watchdog does: kill its children and end.
WATCHDOG_WORKER = """
import os, subprocess, sys
from tournaments.run import reaper, worker
marker = worker._bot_marker()
env = {**os.environ, reaper.MARKER_VARIABLE: marker}
bot = subprocess.Popen(
    ["setsid", "sh", "-c", "sleep 62.5 & echo $!"], stdout=subprocess.PIPE, text=True, env=env
)
sleeper = int(bot.stdout.readline())
bot.wait()
print(worker._reaper.pid, sleeper, flush=True)
sys.stdin.readline()
worker._kill_children()
os._exit(1)
"""


def test_a_workers_watchdog_spares_its_reaper() -> None:
    """A worker whose coordinator died kills its children from its watchdog when the parent-
    death signal comes late (a busy machine): its reaper is its child too, and must live on
    to kill what the bots left behind once the worker has gone."""
    stand_in = subprocess.Popen(
        [sys.executable, "-c", WATCHDOG_WORKER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(reaper.__file__).resolve().parents[1],
    )
    sleeper = None
    try:
        assert stand_in.stdout is not None
        assert stand_in.stdin is not None
        watcher_text, sleeper_text = stand_in.stdout.readline().split()
        watcher, sleeper = int(watcher_text), int(sleeper_text)
        assert _alive(sleeper)
        stand_in.stdin.write("go\n")
        stand_in.stdin.flush()
        assert stand_in.wait(30) == 1
        assert _wait_dead([sleeper], timeout=15) == [], "the reaper did not kill the leftover"
        assert _wait_dead([watcher], timeout=15) == []
    finally:
        _end(stand_in)
        if sleeper is not None and _alive(sleeper):
            os.kill(sleeper, 9)
