"""Hostile bots in real tournaments: what a sandboxed tournament hides, what an unsandboxed
one says about itself, and ``sandbox: required`` on a machine without bubblewrap."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from referee.cgroups import detect_cgroups
from referee.sandbox import bubblewrap_problem
from tests.processes import eventually, processes_running
from tests.tournaments.helpers import AEGIS_REF, FAST_RULES, run_cli
from tournaments.config.tournament import load_config
from tournaments.report.terminal import QuietDisplay, print_standings
from tournaments.run.coordinator import run_tournament
from tournaments.stats.standings import Standings, load_standings
from tournaments.store.database import open_store

BOTS = Path(__file__).resolve().parents[2] / "bots"

needs_bubblewrap = pytest.mark.skipif(
    bubblewrap_problem() is not None and not os.environ.get("CI"),
    reason=f"bubblewrap cannot sandbox here: {bubblewrap_problem()}",
)


def quiet() -> QuietDisplay:
    """A display that prints nowhere."""
    return QuietDisplay(Console(file=io.StringIO()))


def bot_folder(root: Path, name: str, script: str) -> Path:
    """A folder of its own for a bot, holding a copy of one of tests/bots' scripts."""
    folder = root / "bots" / name
    folder.mkdir(parents=True)
    shutil.copy(BOTS / script, folder / script)
    return folder / script


def write_config(root: Path, bots: list[dict[str, object]], **settings: object) -> Path:
    """A tournament config in ``root``, results in ``root/out``."""
    config = root / "config.yaml"
    data = {
        "name": "containment",
        "bots": bots,
        "rules": dict(FAST_RULES),
        "time_control": {"decision_ms": 3000, "warmup_ms": 10000},
        "matches_per_pair": 2,
        "concurrency": 2,
        "seed": 2**40 + 7,
        "output": str(root / "out"),
        **settings,
    }
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return config


def reports(output: Path, bot: str) -> list[dict[str, str]]:
    """Every HOSTILE line a bot wrote, over all its processes and workers."""
    found = []
    for log in sorted((output / "logs").glob(f"*/{bot}.log")):
        for line in log.read_text().splitlines():
            if line.startswith("HOSTILE "):
                found.append(dict(field.split("=", 1) for field in line.split()[2:]))
    return found


@needs_bubblewrap
def test_a_sandboxed_tournament_hides_everything_from_its_bots(tmp_path: Path) -> None:
    """Snoop, token thief and a bot with memory, against an honest bot, in one round robin:
    the snoop finds neither store, config, records, logs nor the other bots' files, the thief
    no token, and every match meets a fresh process, also the second half of a duplicate
    pair (which deals the first half's hands with the seats swapped)."""
    output = tmp_path / "out"
    victim = bot_folder(tmp_path, "victim", "rawbot.py")
    snooped = [
        output / "results.sqlite",
        tmp_path / "config.yaml",
        output / "records",
        output / "logs",
        victim,
    ]
    bots = [
        {
            "name": "snoop",
            "command": [
                sys.executable,
                str(bot_folder(tmp_path, "snoop", "hostile.py")),
                "snoop",
                *map(str, snooped),
            ],
        },
        {
            "name": "thief",
            "command": [
                sys.executable,
                str(bot_folder(tmp_path, "thief", "hostile.py")),
                "token-thief",
            ],
        },
        {
            "name": "memory",
            "command": [
                sys.executable,
                str(bot_folder(tmp_path, "memory", "hostile.py")),
                "remember",
            ],
        },
        {"name": "victim", "command": [sys.executable, str(victim), "--name", "victim"]},
    ]
    setup = load_config(write_config(tmp_path, bots, sandbox="required"))
    summary, standings = run_tournament(setup, display=quiet())
    assert summary.complete
    assert standings is not None
    assert standings.containment is None
    assert not any("unsandboxed" in warning for warning in standings.warnings)
    snoops = reports(output, "snoop")
    # A hostile bot attacks in its process's first match: six reports, one for each of its
    # six matches (three opponents, a duplicate pair each), so six fresh processes.
    assert len(snoops) == 6
    for found in snoops:
        assert found["results"] == ",".join(["missing"] * len(snooped))
        assert found["stores_opened"] == "0"
    for found in reports(output, "thief"):
        assert (found["tokens"], found["hijacked"]) == ("0", "0")
    memories = reports(output, "memory")
    assert len(memories) == 6
    assert {(m["matches"], m["tmp_marker"], m["cwd_marker"]) for m in memories} == {("1", "0", "0")}
    connection = sqlite3.connect(output / "results.sqlite")
    try:
        faults = connection.execute(
            "SELECT count(*) FROM results WHERE forfeit_kind IS NOT NULL"
        ).fetchone()[0]
    finally:
        connection.close()
    assert faults == 0  # the attacks cost nobody a match


def test_an_unsandboxed_tournament_says_so_at_the_start_and_in_its_standings(
    tmp_path: Path,
) -> None:
    bots = [
        {"name": "a", "command": [sys.executable, str(BOTS / "rawbot.py"), "--name", "a"]},
        {"name": "b", "command": "first"},
    ]
    config = write_config(tmp_path, bots, sandbox="off")
    result = run_cli("tournament", str(config), "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "WARNING: bots ran unsandboxed as user " in result.stderr
    standings = run_cli("standings", str(tmp_path / "out"), "--format", "markdown", cwd=tmp_path)
    assert "bots ran unsandboxed as user " in standings.stdout
    report = tmp_path / "report.html"
    written = run_cli("report", str(tmp_path / "out"), "-o", str(report), cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert "bots ran unsandboxed as user " in report.read_text()
    if bubblewrap_problem() is None:
        # A later sandboxed run does not wash the note away: its results stay as they were.
        config.write_text(config.read_text().replace("sandbox: 'off'", "sandbox: required"))
        again = run_cli("tournament", str(config), "--quiet", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        connection = open_store(tmp_path / "out", read_only=True)
        try:
            loaded = load_standings(connection)
        finally:
            connection.close()
        assert loaded.containment is not None
        assert "bots ran unsandboxed" in render_standings_text(loaded)


def render_standings_text(standings: Standings) -> str:
    """The standings as the terminal table prints them."""
    buffer = io.StringIO()
    print_standings(standings, Console(file=buffer, width=120))
    return buffer.getvalue()


def test_required_without_bubblewrap_plays_nothing(tmp_path: Path) -> None:
    bots = [{"name": "a", "command": "random"}, {"name": "b", "command": "first"}]
    config = write_config(tmp_path, bots, sandbox="required")
    empty = tmp_path / "no-bubblewrap"
    empty.mkdir()
    result = run_cli_with_path("tournament", str(config), "--quiet", cwd=tmp_path, path=empty)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "sandbox: required, but bubblewrap (bwrap) is not installed" in result.stderr
    assert "nothing was played" in result.stderr
    assert not (tmp_path / "out" / "results.sqlite").exists()


def run_cli_with_path(*arguments: str, cwd: Path, path: Path) -> subprocess.CompletedProcess[str]:
    """``aegis-ref`` with PATH set to ``path`` alone (a machine without bubblewrap)."""
    return subprocess.run(
        [str(AEGIS_REF), *arguments],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": str(path), "COLUMNS": "120"},
    )


@pytest.mark.parametrize(
    "sandbox",
    [
        "off",
        pytest.param(
            "required",
            marks=pytest.mark.skipif(
                bubblewrap_problem() is not None and not os.environ.get("CI"),
                reason="bubblewrap cannot sandbox here",
            ),
        ),
    ],
)
def test_what_a_bot_left_behind_dies_with_a_coordinator_killed_outright(
    tmp_path: Path, sandbox: str
) -> None:
    """A bot leaves a double-forked ``setsid env -i sleep`` behind: no process group, no
    session, no environment of the bot's, no parent-death signal. The coordinator is then
    killed with SIGKILL mid-match, so no referee is left to stop anything: its workers' reapers
    must find the leftover (by its cgroup, or its sandbox) and kill it."""
    if sandbox == "off" and not detect_cgroups().has("kill"):
        pytest.skip("unsandboxed, only a cgroup finds a process that left with env -i")
    tag = leftover_tag()
    never = tmp_path / "never-made"
    bots = [
        {
            "name": "leaver",
            "command": [
                sys.executable,
                str(bot_folder(tmp_path, "leaver", "hostile.py")),
                "leftover",
                tag,
            ],
            "keep_alive": True,
        },
        {
            "name": "holder",
            # Holds its first match at match_start (up to 30 s): the kill comes mid-match.
            "command": [
                sys.executable,
                str(BOTS / "rawbot.py"),
                "--name",
                "holder",
                "--hold",
                str(never),
                "--hold-at",
                "1",
            ],
            "keep_alive": True,
        },
    ]
    config = write_config(tmp_path, bots, sandbox=sandbox, concurrency=1)
    kill_and_watch_the_leftover(["tournament", str(config), "--quiet"], tmp_path, tag)


def leftover_tag() -> str:
    """A ``sleep`` argument no other test uses: the leftover's name in the process table."""
    return f"{5000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6:06d}"


def kill_and_watch_the_leftover(arguments: list[str], root: Path, tag: str) -> None:
    """Run ``aegis-ref`` with ``arguments`` until the leftover ``sleep TAG`` runs, SIGKILL
    it, and require the leftover to die within 10 s."""
    with (root / "stderr.txt").open("wb") as stderr:
        process = subprocess.Popen(
            [str(AEGIS_REF), *arguments],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            process_group=0,
        )
    try:
        assert eventually(lambda: bool(processes_running(f"sleep {tag}")), 60), (
            "the leftover never started"
        )
        process.kill()
        process.wait(10)
        assert eventually(lambda: not processes_running(f"sleep {tag}"), 10), (
            f"still alive 10 s after the referee's death: {processes_running(f'sleep {tag}')}"
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        for pid in processes_running(f"sleep {tag}"):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not detect_cgroups().has("kill"), reason="only a cgroup finds the leftover")
def test_what_a_bot_left_behind_dies_with_a_match_command_killed_outright(tmp_path: Path) -> None:
    """``aegis-ref match`` plays in its own process (no worker, no pool): killed with SIGKILL
    mid-match, what its bot left behind (a double-forked ``setsid env -i sleep``) dies all
    the same, by its reaper."""
    tag = leftover_tag()
    leaver = bot_folder(tmp_path, "leaver", "hostile.py")
    holder = [sys.executable, str(BOTS / "rawbot.py"), "--name", "holder"]
    holder += ["--hold", str(tmp_path / "never-made"), "--hold-at", "1"]
    leaver_command = shlex.join([sys.executable, str(leaver), "leftover", tag])
    arguments = ["match", f"leaver={leaver_command}", f"holder={shlex.join(holder)}"]
    kill_and_watch_the_leftover([*arguments, "--sandbox", "off"], tmp_path, tag)


@pytest.mark.skipif(not detect_cgroups().has("memory"), reason="needs a cgroup memory limit")
def test_a_tournament_names_a_bot_killed_by_its_memory_cap(tmp_path: Path) -> None:
    """In a tournament too, a bot the kernel kills for its memory limit, here just after an
    act while its opponent thinks, forfeits every match with a crash that says so, whatever
    the worker noticed first."""
    sandbox = "off" if bubblewrap_problem() is not None else "required"
    bomb = bot_folder(tmp_path, "bomb", "hostile.py")
    bots = [
        {
            "name": "bomb",
            "command": [sys.executable, str(bomb), "memory-bomb", "3072", "idle"],
            "limits": {"memory_mb": 96},
        },
        {"name": "first", "command": "first"},
    ]
    config = write_config(tmp_path, bots, sandbox=sandbox)
    result = run_cli("tournament", str(config), "--quiet", cwd=tmp_path)
    assert result.returncode == 3, result.stderr  # a bot lost every match to its faults
    assert "over its memory limit of 96 MiB" in result.stderr
    connection = sqlite3.connect(tmp_path / "out" / "results.sqlite")
    try:
        rows = connection.execute("SELECT forfeit_bot, forfeit_kind, forfeit_json FROM results")
        forfeits = rows.fetchall()
    finally:
        connection.close()
    assert len(forfeits) == 2
    for bot, kind, detail in forfeits:
        assert (bot, kind) == ("bomb", "crash"), detail
        assert "over its memory limit of 96 MiB" in detail
