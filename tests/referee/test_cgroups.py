"""The bot cgroups of referees: the sweep of dead referees' groups leaves a live referee's
alone, wherever it runs."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from referee.bots import BotSpec
from referee.cgroups import detect_cgroups, remove_groups_of
from referee.server import BotServer
from tests.processes import eventually

ROOT = Path(__file__).resolve().parents[2]

#: Run in a new PID namespace that still sees the machine's /proc: forks until a child's pid
#: (in the namespace) is one the machine's /proc does not list, so that a sweep trusting
#: /proc/PID would take that referee for dead; the child makes a bot cgroup, starts a
#: sleeper in it, prints its namespace pid and the group's folders, and waits.
REFEREE_IN_NAMESPACE = """
import os, subprocess, sys, time
while True:
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(reader)
        if os.path.exists(f"/proc/{os.getpid()}"):
            os._exit(0)
        from referee.cgroups import BotCgroup, detect_cgroups
        group = BotCgroup(detect_cgroups(), "bot-1", memory_mb=None, processes=None)
        subprocess.Popen(["sleep", "60.75"], preexec_fn=group.join_in_child)
        folders = " ".join(map(str, group.folders))
        os.write(writer, f"{os.getpid()} {folders}\\n".encode())
        time.sleep(60)
        os._exit(0)
    os.close(writer)
    line = os.read(reader, 4096)
    os.close(reader)
    if line:
        print(line.decode().strip(), flush=True)
        os.waitpid(child, 0)
        break
    os.waitpid(child, 0)
"""


def _sweep_in_a_new_referee() -> None:
    """What a new referee process does first: detect the cgroups and sweep dead referees'."""
    sweep = subprocess.run(
        [sys.executable, "-c", "from referee.cgroups import detect_cgroups; detect_cgroups()"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert sweep.returncode == 0, sweep.stderr


def _unshare_problem() -> str | None:
    if shutil.which("unshare") is None:
        return "no unshare here"
    trial = subprocess.run(
        ["unshare", "--pid", "--fork", "true"], capture_output=True, text=True, timeout=30
    )
    return None if trial.returncode == 0 else f"cannot make a PID namespace: {trial.stderr}"


@pytest.mark.skipif(not detect_cgroups().has("kill"), reason="no writable cgroups here")
@pytest.mark.skipif(_unshare_problem() is not None, reason=str(_unshare_problem()))
def test_the_sweep_leaves_a_live_referee_in_another_pid_namespace_alone() -> None:
    """A referee in another PID namespace shares this machine's cgroup hierarchy, and its
    pid means nothing here (this /proc has no such process): a new referee's sweep of dead
    referees' groups must still leave its groups, and the bot in them, alone."""
    referee = subprocess.Popen(
        ["unshare", "--pid", "--fork", sys.executable, "-c", REFEREE_IN_NAMESPACE],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    folders: list[Path] = []
    try:
        assert referee.stdout is not None
        pid_text, *folder_texts = referee.stdout.readline().split()
        folders = [Path(text) for text in folder_texts]
        assert folders
        assert not Path(f"/proc/{pid_text}").exists()
        held = [(folder / "cgroup.procs").read_text().split() for folder in folders]
        assert all(held), held
        _sweep_in_a_new_referee()
        assert all(folder.is_dir() for folder in folders), "the sweep took a live referee's"
        assert [(folder / "cgroup.procs").read_text().split() for folder in folders] == held
    finally:
        os.killpg(referee.pid, signal.SIGKILL)
        referee.wait(10)
        if referee.stdout is not None:
            referee.stdout.close()
        for folder in folders:
            if folder.is_dir():
                remove_groups_of(int(folder.parent.name.removeprefix("aegis-ref-")))
        assert eventually(lambda: not any(folder.exists() for folder in folders), 10)


@pytest.mark.skipif(not detect_cgroups().has("cpuset"), reason="no cpuset cgroup here")
def test_a_limit_the_kernel_refuses_reaches_the_log(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The referee believes it may use CPU 4095 (its affinity, as read, says so): the kernel
    refuses that cpuset for the bot's group. The bot still starts, and the refusal is
    logged once, naming the bot, not lost in the group's problems."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {4095})
    caplog.set_level(logging.WARNING, logger="referee.bots")
    spec = BotSpec("refused", (sys.executable, "-c", "import time; time.sleep(30)"))
    with BotServer() as server:
        sessions = [server.start_bot(spec), server.start_bot(spec)]
        server.stop_bots(sessions, grace=0.0)
    refusals = [record.getMessage() for record in caplog.records]
    assert len(refusals) == 1, refusals
    assert "bot refused: cannot set cpuset.cpus to 4095" in refusals[0]


@pytest.mark.skipif(not detect_cgroups().has("kill"), reason="no writable cgroups here")
def test_the_sweep_takes_only_referees_folders_not_groups_that_share_their_prefix() -> None:
    """Beside the referees' folders (``aegis-ref-<pid>``) may lie groups that share the
    prefix and are no referee's: a subtree delegated to an organiser, holding the leaf its
    referee lives in. No lock guards them, and a sweep must still leave them and their
    processes alone (once it killed the organiser's referee in such a leaf)."""
    support = detect_cgroups()
    base = support.v2 if support.v2 is not None else next(iter(support.v1.values()))
    outsider = base / f"aegis-ref-delegated-{uuid.uuid4().hex[:8]}"
    leaf = outsider / "aegis-ref-referee"
    leaf.mkdir(parents=True)
    if (base / "cpuset.cpus").exists():  # a v1 cpuset takes no task until these are set
        for folder in (outsider, leaf):
            for name in ("cpuset.cpus", "cpuset.mems"):
                (folder / name).write_text((base / name).read_text())
    sleeper = subprocess.Popen(["sleep", "60.25"])
    try:
        (leaf / "cgroup.procs").write_text(str(sleeper.pid))
        _sweep_in_a_new_referee()
        assert sleeper.poll() is None, "the sweep killed a process in a group not its own"
        assert leaf.is_dir()
        assert (leaf / "cgroup.procs").read_text().split() == [str(sleeper.pid)]
    finally:
        sleeper.kill()
        sleeper.wait(10)
        assert eventually(lambda: not (leaf / "cgroup.procs").read_text().split(), 10)
        leaf.rmdir()
        outsider.rmdir()
