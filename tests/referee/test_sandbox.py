"""Hostile bots against the match runner, sandboxed (real bubblewrap) and unsandboxed.

Each test plays a real match between ``tests/bots/hostile.py``, which tries one attack and
reports what it achieved, and an honest bot, and asserts the consequence: what the attacker
found and did, and that its opponent played on unharmed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from referee.bots import BotSpec, ResourceLimits
from referee.cgroups import detect_cgroups
from referee.faults import FaultKind
from referee.runner import MatchReport, MatchRunner
from referee.sandbox import (
    SandboxUnavailableError,
    bot_home,
    bubblewrap_problem,
    plan_sandbox,
    sandbox_command,
)
from referee.time_control import Clock, TimeControl
from tests.processes import eventually, processes_running

BOTS = Path(__file__).resolve().parents[1] / "bots"
HOSTILE = BOTS / "hostile.py"
RAWBOT = BOTS / "rawbot.py"
BURNER = BOTS / "burner.py"
CONTROL = TimeControl(decision_ms=3000, warmup_ms=10000)

needs_bubblewrap = pytest.mark.skipif(
    bubblewrap_problem() is not None and not os.environ.get("CI"),
    reason=f"bubblewrap cannot sandbox here: {bubblewrap_problem()}",
)
needs_cgroups = pytest.mark.skipif(
    not detect_cgroups().has("memory") or not detect_cgroups().has("pids"),
    reason="needs cgroup memory and pids limits",
)
#: Every hostile test runs both ways: the sandbox is the defence, unsandboxed shows the rest.
BOTH = pytest.mark.parametrize(
    "sandboxed",
    [pytest.param(True, id="sandboxed", marks=needs_bubblewrap), pytest.param(False, id="bare")],
)


def hostile(attack: str, *arguments: str, **limits: object) -> BotSpec:
    """The hostile bot trying ``attack``."""
    return BotSpec(
        "hostile",
        (sys.executable, str(HOSTILE), attack, *arguments),
        limits=replace(ResourceLimits(), **limits),  # type: ignore[arg-type]
    )


def victim() -> BotSpec:
    """An honest raw-protocol bot (first legal action)."""
    return BotSpec("victim", (sys.executable, str(RAWBOT), "--name", "victim"))


def play(
    tmp_path: Path,
    attacker: BotSpec,
    sandboxed: bool,
    opponent: BotSpec | None = None,
    control: TimeControl = CONTROL,
) -> tuple[MatchReport, dict[str, str]]:
    """One match, the attacker in seat 0; the report and the attacker's last HOSTILE line."""
    plan = plan_sandbox("required" if sandboxed else "off")
    logs = tmp_path / "logs"
    attacker = replace(attacker, cwd=attacker.cwd or str(tmp_path))  # what it writes, there
    with MatchRunner(time_control=control, log_dir=logs, sandbox=plan) as runner:
        report = runner.play([attacker, opponent or victim()], seed=5)
    return report, hostile_line(logs / "hostile.log")


def hostile_line(log: Path) -> dict[str, str]:
    """The fields of the last ``HOSTILE`` line in a log."""
    lines = [line for line in log.read_text().splitlines() if line.startswith("HOSTILE ")]
    assert lines, f"the hostile bot reported nothing; its log:\n{log.read_text()[-2000:]}"
    return dict(field.split("=", 1) for field in lines[-1].split()[2:])


def clean(report: MatchReport) -> None:
    """The match was played to its end with no fault by anyone."""
    assert report.faults == [], report.faults
    assert report.match is not None
    assert report.match.result is not None


def test_the_sandbox_is_there_in_ci() -> None:
    """CI installs bubblewrap: the sandboxed half of these tests must run there, not skip."""
    if os.environ.get("CI"):
        assert bubblewrap_problem() is None


@BOTH
def test_relative_paths_in_a_command_mean_the_same_sandboxed_or_not(
    tmp_path: Path, sandboxed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bot given as ``python bots/x.py`` or ``./bots/run`` on the command line (no working
    directory of its own) runs where the referee runs, in its sandbox too: there the folder
    holds what the sandbox shows of it, the bot's folder ``bots/``."""
    folder = tmp_path / "bots"
    folder.mkdir()
    shutil.copy(RAWBOT, folder / "x.py")
    run = folder / "run"
    run.write_text(f'#!/bin/sh\nexec {sys.executable} bots/x.py --name "$1"\n')
    run.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    by_script = BotSpec("script", (sys.executable, "bots/x.py", "--name", "script"))
    by_program = BotSpec("program", ("./bots/run", "program"))
    plan = plan_sandbox("required" if sandboxed else "off")
    with MatchRunner(time_control=CONTROL, sandbox=plan) as runner:
        report = runner.play([by_script, by_program], seed=5)
    clean(report)


@BOTH
def test_the_token_thief_cannot_take_over_its_opponent(tmp_path: Path, sandboxed: bool) -> None:
    report, found = play(tmp_path, hostile("token-thief"), sandboxed)
    assert found["hijacked"] == "0"
    if sandboxed:
        # It sees nothing of the machine: no token to steal.
        assert found["tokens"] == "0"
        assert int(found["visible"]) <= 4
    else:
        # Same user: it reads the token, but a live session never moves to its connection.
        assert int(found["tokens"]) >= 1
        assert set(found["answers"].split(",")) == {"reject"}
    clean(report)  # the victim's moves were its own to the end


@BOTH
def test_a_process_that_races_a_bot_to_its_hello_cannot_take_its_seat(
    tmp_path: Path, sandboxed: bool
) -> None:
    """Any process of the organiser's user (an unsandboxed bot of another match, say) can
    read a starting bot's token and endpoint from /proc, from the bot's sandbox's first
    process too, and say hello before the bot does. Its hello is refused: a hello is taken
    only from the bot's own process or one of its descendants (inside its sandbox, too). The
    bots, which wait until the racer has been answered, then play their own match."""
    told = tmp_path / "told"
    told.mkdir()
    # Each bot starts once the racer was answered for its token (at most 20 s later).
    wait = (
        f'i=0; while [ ! -e "{told}/$AEGIS_TOKEN" ] && [ $i -lt 400 ]; do sleep 0.05; '
        'i=$((i+1)); done; exec "$0" "$@"'
    )
    plan = plan_sandbox("required" if sandboxed else "off")
    with MatchRunner(time_control=CONTROL, sandbox=plan) as runner:
        referee = f"ipc://{runner.server.directory}/bot-0"
        racer = subprocess.Popen(
            [sys.executable, str(HOSTILE), "token-racer", "30", referee, str(told)],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            bots = [
                BotSpec(
                    name,
                    ("sh", "-c", wait, sys.executable, str(RAWBOT), "--name", name),
                    home=str(BOTS),
                    read_only=(str(told),),
                )
                for name in ("first", "second")
            ]
            report = runner.play(bots, seed=5)
        finally:
            racer.terminate()  # its report comes at its end: SIGTERM ends it at once
            _, errors = racer.communicate(timeout=30)
    lines = [line for line in errors.splitlines() if line.startswith("HOSTILE token-racer ")]
    assert lines, errors
    found = dict(field.split("=", 1) for field in lines[-1].split()[2:])
    assert found["tokens"] == "2"  # it saw both bots' tokens, and said hello with each
    assert found["answers"] == "reject,reject"
    assert found["hijacked"] == "0"
    reasons = found["reasons"].split("|")
    assert (
        reasons == ["this_hello_comes_from_a_process_that_is_not_the_bot's_or_one_it_started"] * 2
    )
    clean(report)  # the bots' own hellos were taken, and their moves were their own


@BOTH
def test_the_killer_cannot_see_or_signal_its_opponent(tmp_path: Path, sandboxed: bool) -> None:
    report, found = play(tmp_path, hostile("killer"), sandboxed)
    if sandboxed:
        assert (found["found"], found["signalled"], found["reachable"]) == ("0", "0", "0")
        clean(report)
    else:
        # Unsandboxed the attack works, and the victim is blamed: what the sandbox is for.
        assert int(found["signalled"]) >= 1
        assert report.forfeit_fault is not None
        assert report.forfeit_fault.bot == "victim"


@BOTH
def test_the_snoop_cannot_open_the_referees_files(tmp_path: Path, sandboxed: bool) -> None:
    import sqlite3

    secret = tmp_path / "secrets"
    secret.mkdir()
    (secret / "config.yaml").write_text("seed: 123456789\n")
    store = secret / "results.sqlite"
    connection = sqlite3.connect(store)  # held open by the referee, as a tournament's is
    try:
        connection.execute("create table t (x)")
        connection.commit()
        paths = [str(secret / "config.yaml"), str(store), str(tmp_path / "logs"), str(RAWBOT)]
        report, found = play(tmp_path, hostile("snoop", *paths), sandboxed)
    finally:
        connection.close()
    results = found["results"].split(",")
    if sandboxed:
        assert results == ["missing"] * 3 + ["read"]  # its own folder only (tests/bots)
        assert found["stores_opened"] == "0"
    else:
        assert results == ["read"] * 4
        assert int(found["stores_opened"]) >= 1
    clean(report)


@pytest.fixture
def leftover_tag() -> Iterator[str]:
    """A sleep duration no other process uses, killed after the test whatever happened."""
    tag = f"{4000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6:06d}"
    yield tag
    for pid in processes_running(f"sleep {tag}"):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


@BOTH
def test_a_double_forked_setsid_env_i_sleep_is_gone_when_the_match_ends(
    tmp_path: Path, sandboxed: bool, leftover_tag: str
) -> None:
    if not sandboxed and not detect_cgroups().has("kill"):
        pytest.skip("unsandboxed, only a cgroup finds a process that left with env -i")
    report, found = play(tmp_path, hostile("leftover", leftover_tag), sandboxed)
    assert found["started"] == leftover_tag
    clean(report)
    assert eventually(lambda: not processes_running(f"sleep {leftover_tag}"), 10)


@needs_bubblewrap
def test_the_disk_filler_stops_at_its_cap_and_leaves_nothing(tmp_path: Path) -> None:
    name = f"hostile-filler-{uuid.uuid4().hex}.bin"  # other runs on the machine share /tmp
    host_file = Path("/tmp") / name
    attacker = replace(
        hostile("disk-filler", tmp_mb=16, file_size_mb=32), env={"HOSTILE_FILLER": name}
    )
    try:
        report, found = play(tmp_path, attacker, sandboxed=True)
        assert int(found["tmp_mb"]) <= 16  # the private /tmp is full at 16 MiB
        assert found["cwd_mb"] == "0"  # nothing else is writable, not even the sandbox's root
        clean(report)
        assert not host_file.exists()
        assert not (Path(found["cwd"]) / name).exists()
    finally:
        host_file.unlink(missing_ok=True)


def test_unsandboxed_the_file_size_limit_still_caps_each_file(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    name = f"hostile-filler-{uuid.uuid4().hex}.bin"  # other runs on the machine share /tmp
    attacker = replace(
        hostile("disk-filler", file_size_mb=8), cwd=str(work), env={"HOSTILE_FILLER": name}
    )
    try:
        report, found = play(tmp_path, attacker, sandboxed=False)
    finally:
        (Path("/tmp") / name).unlink(missing_ok=True)
    assert found["tmp_mb"] == found["cwd_mb"] == "8"
    assert (work / name).stat().st_size == 8 << 20
    clean(report)


@needs_cgroups
@BOTH
def test_a_fork_bomb_hits_the_process_limit(tmp_path: Path, sandboxed: bool) -> None:
    report, found = play(tmp_path, hostile("fork-bomb", processes=48), sandboxed)
    assert int(found["forked"]) < 48
    assert "unavailable" in found["error"]
    clean(report)  # its opponent and the referee went on as usual
    assert processes_running(f"{HOSTILE} fork-bomb") == []


@needs_cgroups
@BOTH
def test_the_memory_hog_gets_a_crash_fault_that_says_memory(
    tmp_path: Path, sandboxed: bool
) -> None:
    report, found = play(tmp_path, hostile("memory-hog", "1024", memory_mb=128), sandboxed)
    assert found["asking"] == "1024"
    fault = report.forfeit_fault
    assert fault is not None
    assert (fault.kind, fault.bot) == (FaultKind.CRASH, "hostile")
    assert "over its memory limit of 128 MiB" in fault.detail
    assert report.winner == 1


@needs_cgroups
@BOTH
@pytest.mark.parametrize("moment", ["hello", "ready", "idle", "decide", "helper"])
def test_a_bot_killed_by_its_memory_cap_is_named_for_it(
    tmp_path: Path, sandboxed: bool, moment: str
) -> None:
    """A bot writes 3 GiB into an anonymous mapping under a 96 MiB cap, before its hello,
    after its ready, while its opponent thinks (frozen, sandboxed), mid-decision, or in a
    helper process whose death leaves the bot silent: the kernel kills it, and whatever the
    referee notices first (the exit, the dropped connection, the silence), the cgroup's
    count of kills names the fault."""
    attacker = hostile("memory-bomb", "3072", moment, memory_mb=96)
    report, found = play(tmp_path, attacker, sandboxed)
    assert (found["mapping"], found["moment"]) == ("3072", moment)
    fault = report.forfeit_fault
    assert fault is not None
    assert (fault.kind, fault.bot) == (FaultKind.CRASH, "hostile"), fault
    assert "over its memory limit of 96 MiB" in fault.detail, fault
    assert report.winner == 1


def test_without_cgroups_the_memory_hog_meets_its_address_space_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AEGIS_CGROUPS", "off")
    detect_cgroups.cache_clear()
    try:
        attacker = hostile("memory-hog", "1024", address_space_mb=400)
        report, _ = play(tmp_path, attacker, sandboxed=False)
    finally:
        monkeypatch.delenv("AEGIS_CGROUPS")
        detect_cgroups.cache_clear()
    fault = report.forfeit_fault
    assert fault is not None
    assert (fault.kind, fault.bot) == (FaultKind.CRASH, "hostile")
    assert "out of memory" in fault.detail
    assert "address-space limit of 400 MiB" in fault.detail


def _victim_times(report: MatchReport, seat: int) -> list[float]:
    times = []
    for game, timings in zip(report.games, report.timings, strict=True):
        times.extend(
            ms for turn, ms in zip(game.history, timings, strict=False) if turn.seat == seat
        )
    return times


@pytest.fixture
def one_cpu() -> Iterator[None]:
    """The referee and its bots on one CPU, where a spinner competes with its opponent."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@BOTH
def test_a_spinner_does_not_slow_its_opponent_while_frozen(
    tmp_path: Path, sandboxed: bool, one_cpu: None
) -> None:
    """The opponent burns 20 ms of CPU per decision. Next to an idle bot it takes 20 ms; next
    to a bot whose children spin, sandboxed (frozen while the opponent thinks) the same, and
    unsandboxed on the wall clock (which leaves a bot running between its turns) about twice
    as long: the check can tell the two apart. (The CPU clock freezes every bot between its
    turns, sandboxed or not: tests/referee/test_cpu_clock.py.)"""
    if sandboxed and not detect_cgroups().has("freeze"):
        pytest.skip("no freezer cgroup")
    burner = BotSpec("burner", (sys.executable, str(BURNER), "20"))
    # The medians of the opponent's times are what this compares, not a deadline: a long one
    # keeps a busy machine's stall of a few seconds from ending the match.
    wall = replace(CONTROL, clock=Clock.WALL, decision_ms=30_000)
    # Other work on a busy machine can land on this CPU during one match of the two and not
    # the other; a freezer that fails (or a wall clock that freezes) fails every attempt.
    ratios = []
    for attempt in range(3):
        folder = tmp_path / str(attempt)
        baseline, _ = play(folder / "idle", hostile("remember"), sandboxed, burner, wall)
        spun, found = play(folder / "spin", hostile("spinner"), sandboxed, burner, wall)
        assert found["started"] == "4"
        clean(baseline)
        clean(spun)
        ratio = statistics.median(_victim_times(spun, 1)) / statistics.median(
            _victim_times(baseline, 1)
        )
        ratios.append(ratio)
        if (ratio < 1.4) if sandboxed else (ratio > 1.5):
            return
    pytest.fail(f"the opponent's median time, spinner over idle bot, in each attempt: {ratios}")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
@pytest.mark.skipif(not detect_cgroups().has("cpuset"), reason="needs a cpuset cgroup")
@BOTH
def test_a_bot_cannot_widen_its_cpu_pinning(tmp_path: Path, sandboxed: bool, one_cpu: None) -> None:
    """A worker pins itself and its bots to CPUs of their own; a bot's cpuset keeps it there
    whatever affinity it asks for."""
    report, found = play(tmp_path, hostile("widen"), sandboxed)
    cpu = str(min(os.sched_getaffinity(0)))
    assert found["before"] == found["after"] == cpu
    clean(report)


@BOTH
def test_a_file_written_in_one_match_is_gone_in_the_next(tmp_path: Path, sandboxed: bool) -> None:
    """Fresh processes by default: the second match meets a new process, and, sandboxed,
    nothing the first one wrote (its /tmp went with it, its folder is read-only)."""
    name = f"hostile-marker-{uuid.uuid4().hex}"  # other runs on the machine share /tmp
    marker = Path("/tmp") / name
    work = tmp_path / "work"
    work.mkdir()
    attacker = replace(
        hostile("remember"),
        cwd=str(work),
        home=str(HOSTILE.parent),
        env={"HOSTILE_MARKER": name},
    )
    plan = plan_sandbox("required" if sandboxed else "off")
    logs = tmp_path / "logs"
    try:
        with MatchRunner(time_control=CONTROL, log_dir=logs, sandbox=plan) as runner:
            for seed in (1, 2):
                clean(runner.play([attacker, victim()], seed=seed))
    finally:
        marker.unlink(missing_ok=True)
    lines = [line for line in (logs / "hostile.log").read_text().splitlines() if "HOSTILE" in line]
    second = dict(field.split("=", 1) for field in lines[1].split()[2:])
    assert second["matches"] == "1"  # a new process
    if sandboxed:
        assert (second["tmp_marker"], second["cwd_marker"]) == ("0", "0")
    else:
        assert (second["tmp_marker"], second["cwd_marker"]) == ("1", "1")


def test_a_kept_alive_bot_remembers_across_matches(tmp_path: Path) -> None:
    name = f"hostile-marker-{uuid.uuid4().hex}"  # other runs on the machine share /tmp
    attacker = replace(
        hostile("remember"), keep_alive=True, cwd=str(tmp_path), env={"HOSTILE_MARKER": name}
    )
    logs = tmp_path / "logs"
    try:
        with MatchRunner(time_control=CONTROL, log_dir=logs) as runner:
            for seed in (1, 2):
                clean(runner.play([attacker, victim()], seed=seed))
    finally:
        (Path("/tmp") / name).unlink(missing_ok=True)
    lines = [line for line in (logs / "hostile.log").read_text().splitlines() if "HOSTILE" in line]
    assert [re.search(r"matches=(\d)", line).group(1) for line in lines] == ["1", "2"]  # type: ignore[union-attr]


# -- the sandbox's pieces ----------------------------------------------------------------------


def test_required_without_bubblewrap_names_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    bubblewrap_problem.cache_clear()
    try:
        with pytest.raises(SandboxUnavailableError, match=r"bubblewrap \(bwrap\) is not installed"):
            plan_sandbox("required")
        plan = plan_sandbox("auto")
        assert not plan.enabled
        assert "unsandboxed as user" in plan.summary
        assert "not installed" in plan.summary
    finally:
        monkeypatch.undo()
        bubblewrap_problem.cache_clear()


_FLOODED_REFEREE = """
import resource, sys
sys.path.insert(0, sys.argv[1])
resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from referee.bots import BotSpec
from referee.runner import MatchRunner
from referee.time_control import Clock, TimeControl
from referee.sandbox import plan_sandbox
from pathlib import Path
flooder = BotSpec("hostile", (sys.executable, sys.argv[2], "connection-flood", "3000"))
victim = BotSpec("victim", (sys.executable, sys.argv[3], "--name", "victim"))
with MatchRunner(
    time_control=TimeControl(decision_ms=3000, warmup_ms=10000),
    sandbox=plan_sandbox(sys.argv[4]),
    log_dir=Path(sys.argv[5]),
) as runner:
    report = runner.play([flooder, victim], seed=3)
print("faults", len(report.faults), "result", report.match.result is not None)
"""


@BOTH
def test_a_connection_flood_does_not_bring_the_referee_down(
    tmp_path: Path, sandboxed: bool
) -> None:
    """Every connection to a bot's endpoint costs the referee a descriptor, and libzmq
    aborts the process when it cannot accept one. Once a bot is connected its endpoint
    admits no one; 3,000 connections tried then, against a referee started with the usual
    soft limit of 1,024 descriptors (which it raises to the hard limit)."""
    project = str(Path(__file__).resolve().parents[2])
    mode = "required" if sandboxed else "off"
    arguments = [project, str(HOSTILE), str(RAWBOT), mode, str(tmp_path)]
    result = subprocess.run(
        [sys.executable, "-c", _FLOODED_REFEREE, *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "faults 0 result True" in result.stdout
    log = (tmp_path / "hostile.log").read_text()
    children = re.findall(
        r"connection-flood-child connected=(\d+) error=([A-Za-z]+_[a-z]+|none)", log
    )
    assert len(children) == 15, log[-2000:]
    if sandboxed or os.geteuid() != 0:  # root unsandboxed overrides the socket's mode
        assert set(children) == {("0", "Permission_denied")}


def test_sandbox_off_is_off_and_says_so() -> None:
    plan = plan_sandbox("off")
    assert not plan.enabled
    assert plan.summary.startswith("bots ran unsandboxed as user ")


def test_a_bots_home_is_the_folder_of_its_script_or_program(tmp_path: Path) -> None:
    (tmp_path / "bots").mkdir()
    script = tmp_path / "bots" / "bot.py"
    script.write_text("")
    program = tmp_path / "bots" / "run"
    program.write_text("")
    assert bot_home(["python3", "bots/bot.py"], str(tmp_path)) == str(tmp_path / "bots")
    assert bot_home([sys.executable, str(script), "--fast"], None) == str(tmp_path / "bots")
    assert bot_home([str(program)], None) == str(tmp_path / "bots")
    assert bot_home(["sh", "-c", "echo hi"], str(tmp_path)) is None


def test_hidden_paths_are_masked_inside_a_shown_folder(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("seed: 1\n")
    (tmp_path / "results").mkdir()
    command = sandbox_command(
        ["true"],
        home=str(tmp_path),
        endpoint=None,
        main_thread=True,
        hidden=[str(tmp_path / "config.yaml"), str(tmp_path / "results")],
    )
    text = " ".join(command)
    assert f"--ro-bind {tmp_path} {tmp_path}" in text
    assert f"--ro-bind /dev/null {tmp_path / 'config.yaml'}" in text
    assert f"--tmpfs {tmp_path / 'results'}" in text
    assert "--die-with-parent" in command
    assert "--unshare-net" in command


@needs_bubblewrap
def test_a_sandboxed_bot_sees_no_network_no_referee_and_no_secrets(tmp_path: Path) -> None:
    script = (
        "import os, socket\n"
        "print('uid', os.getuid(), 'gid', os.getgid())\n"
        "print('pids', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
        "try:\n"
        "    print('shadow', repr(open('/etc/shadow').read()))\n"
        "except OSError as error:\n"
        "    print('shadow', type(error).__name__)\n"
        "print('interfaces', sorted(name for _, name in socket.if_nameindex()))\n"
        "print('home', os.environ['HOME'], 'user', os.environ.get('USER'))\n"
        "print('caps', open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
        "import subprocess\n"
        "code = subprocess.run(['unshare', '--user', 'true'], capture_output=True).returncode\n"
        "print('userns', 'allowed' if code == 0 else 'refused')\n"
        "try:\n"
        "    written = 0\n"
        "    with open('/dev/shm/fill', 'wb') as stream:\n"
        "        while written < 64 << 20:\n"
        "            stream.write(b'x' * (1 << 20)); stream.flush(); written += 1 << 20\n"
        "except OSError:\n"
        "    print('shm capped at', written >> 20, 'MiB')\n"
        "try:\n"
        "    open('/etc/security/opasswd').read()\n"
        "    print('opasswd read')\n"
        "except OSError:\n"
        "    print('opasswd hidden')\n"
        "for path in ('/x', os.getcwd() + '/x', '/tmp/x', '/proc/sys/vm/swappiness', '/dev/x'):\n"
        "    try:\n"
        "        open(path, 'a').close()\n"
        "        print('wrote', path)\n"
        "    except OSError as error:\n"
        "        print('refused', path, error.strerror)\n"
    )
    plan = plan_sandbox("required")
    from referee.bots import BotProcess

    process = BotProcess(
        BotSpec("probe", (sys.executable, "-c", script), cwd="/nonexistent-aegis-cwd"),
        endpoint="ipc:///nowhere",
        token="t",
        log_path=tmp_path / "probe.log",
        sandbox=plan,
    )
    process.stop(5.0)
    output = (tmp_path / "probe.log").read_text()
    assert "uid 65534 gid 65534" in output
    assert re.search(r"pids \[1, \d\]", output), output  # bubblewrap's init and itself
    assert re.search(r"shadow (''|PermissionError|FileNotFoundError)\n", output), output
    assert "interfaces ['lo']" in output
    assert "home /tmp user None" in output
    assert "caps 0000000000000000" in output
    assert "userns refused" in output  # no user namespace of its own to mount cgroups in
    assert "refused /proc/sys/vm/swappiness Read-only file system" in output
    assert "refused /dev/x Read-only file system" in output
    assert re.search(r"shm capped at 1[0-9] MiB", output), output
    assert "opasswd hidden" in output or not Path("/etc/security/opasswd").exists()
    # Its /tmp is the one place it can write: not the sandbox's root, not where it runs.
    assert "refused /x Read-only file system" in output
    assert "refused /tmp/x" not in output
    assert "wrote /tmp/x" in output
    assert "refused /nonexistent-aegis-cwd/x Read-only file system" in output


AS_NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
_UNPRIVILEGED_PROBE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from referee.bots import BotProcess, BotSpec
from referee.cgroups import detect_cgroups
from referee.sandbox import plan_sandbox
script = "id -u; echo kept > /tmp/a && cat /tmp/a; touch /x 2>/dev/null || echo refused"
process = BotProcess(
    BotSpec("probe", ("/bin/sh", "-c", script)),
    endpoint="ipc:///nowhere",
    token="t",
    log_path=None,
    sandbox=plan_sandbox("required"),
)
deadline = time.monotonic() + 10
while process.exit_code() is None and time.monotonic() < deadline:
    time.sleep(0.02)
print("exit", process.stop(), "cgroups", process.cgroup is not None, detect_cgroups().describe())
print("output", " ".join(process.stderr_tail()))
"""


@needs_bubblewrap
@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/usr/bin/python3").exists() or shutil.which("setpriv") is None,
    reason="needs root (to become an unprivileged user), setpriv and the system Python",
)
def test_an_unprivileged_organiser_gets_the_sandbox_and_falls_back_to_rlimits() -> None:
    """Tests run as root; an organiser usually does not. As user nobody (no writable cgroup,
    unprivileged user namespaces), the same code sandboxes a bot, with rlimits only."""
    project = str(Path(__file__).resolve().parents[2])
    result = subprocess.run(
        [*AS_NOBODY, "/usr/bin/python3", "-c", _UNPRIVILEGED_PROBE, project],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        check=False,
    )
    if "Permission denied" in result.stderr and "referee" in result.stderr:
        pytest.skip(f"user nobody cannot read the checkout at {project}")
    assert result.returncode == 0, result.stderr
    assert "exit 0 cgroups False no cgroups (limits by rlimit only)" in result.stdout
    assert "output 65534 kept refused" in result.stdout
