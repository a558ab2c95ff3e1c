"""The ``check-bot`` command: its report, as text or JSON, and its exit codes."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from referee.cgroups import detect_cgroups
from referee.conformance import CHECKLIST, REMOTE_CHECKLIST
from referee.listeners import generate_keys
from referee.sandbox import bubblewrap_problem
from tests.referee.bot_helpers import RANDOM_BOT, remote_bot
from tests.tournaments.helpers import AEGIS_REF, free_port
from tournaments.cli import app

RAWBOT = Path(__file__).resolve().parents[2] / "bots" / "rawbot.py"
NAMES = [item.name for item in CHECKLIST]

runner = CliRunner()


#: A warm-up for bots that pass: a Python bot started in a sandbox on a busy machine can take
#: longer than the default 5 s to say hello, and the checks here are not about that.
SLOW_START = ("--warmup-ms", "60000")


def test_command_json_report_for_a_bundled_bot() -> None:
    result = runner.invoke(app, ["check-bot", "--json", "--matches", "1", *SLOW_START, "first"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["passed"] is True
    assert data["bot"] == "first"
    assert data["said"] == "first"
    assert data["sandboxed"] is (data["settings"]["sandbox"]["enabled"])
    assert data["settings"]["matches"] == 1
    assert [item["name"] for item in data["items"]] == NAMES
    assert {item["status"] for item in data["items"]} == {"pass"}
    # Both clocks: the answers timed by the wall clock, the CPU time measured beside them
    # where this machine counts it.
    problem = detect_cgroups().cpu_clock_problem()
    assert data["clock"]["answers"] == "wall"
    assert data["clock"]["cpu_time_measured"] is (problem is None)
    several = next(item for item in data["items"] if item["name"] == "several_matches")
    assert "slowest answer" in several["reason"]
    if problem is None:
        assert data["clock"]["cpu_time_problem"] is None
        assert "; CPU time " in several["reason"]
        assert "in all its processes and threads" in several["reason"]


def test_without_cgroup_cpu_accounting_the_report_says_its_cpu_time_was_not_measured(
    tmp_path: Path,
) -> None:
    """A real run of the command without cgroups: the wall clock only, and why."""
    done = subprocess.run(
        [str(AEGIS_REF), "check-bot", "--json", "--matches", "1", *SLOW_START, "first"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "AEGIS_CGROUPS": "off"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    missing = "no writable cgroup with CPU accounting (cgroup v2 cpu.stat or v1 cpuacct)"
    assert data["clock"]["answers"] == "wall"
    assert data["clock"]["cpu_time_measured"] is False
    assert data["clock"]["cpu_time_problem"].startswith(missing)
    assert f"its CPU time not measured: {missing}" in data["clock"]["note"]
    several = next(item for item in data["items"] if item["name"] == "several_matches")
    assert f"; CPU time not measured: {missing}" in several["reason"]


def test_command_prints_each_item_and_fails_with_exit_code_1() -> None:
    arguments = ["--warmup-ms", "2000", "--matches", "1", "--"]
    command = [sys.executable, str(RAWBOT), "--fault", "ignore_shutdown"]
    result = runner.invoke(app, ["check-bot", *arguments, *command])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    how = "sandboxed" if bubblewrap_problem() is None else "unsandboxed: bots ran unsandboxed"
    assert lines[0].startswith(f"Checking {shlex.join(command)} ({how}")
    assert [line.split(" ", 2)[1].rstrip(":") for line in lines[1:-2]] == NAMES
    assert "FAIL shutdown: still running 1.0 s after shutdown" in result.stdout
    assert lines[-2].startswith(
        "Clock: answers timed by the wall clock (deadline_ms 1000, as a tournament on clock: "
        "wall times them); "
    )
    assert lines[-1] == f"15 of 16 items passed; failed: shutdown; it ran {how.split(':')[0]}"


def test_command_accepts_one_quoted_command_line() -> None:
    """The bot is called by the name it says in its hello, not its script's file name."""
    quoted = f"{sys.executable} {RAWBOT} --name quoted"
    result = runner.invoke(app, ["check-bot", "--matches", "1", *SLOW_START, quoted])
    assert result.exit_code == 0, result.output
    how = "sandboxed" if bubblewrap_problem() is None else "unsandboxed"
    assert result.stdout.splitlines()[-1] == (
        f"16 of 16 items passed: quoted is ready for a tournament; it ran {how}"
    )


def test_the_text_report_says_an_unsandboxed_run() -> None:
    arguments = ["check-bot", "--sandbox", "off", "--matches", "1", "--", sys.executable]
    result = runner.invoke(app, [*arguments, str(RAWBOT), "--name", "plain"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        f"Checking {shlex.join([sys.executable, str(RAWBOT)])} --name plain (unsandboxed: bots "
        "ran unsandboxed as user "
    )
    assert lines[-1] == "16 of 16 items passed: plain is ready for a tournament; it ran unsandboxed"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--remote"], "requires an argument"),
        (["--remote", "first"], "--remote: a remote bot is 'remote:' and its 40-character"),
        (["--remote", "x" * 40], "a remote bot needs --listen HOST:PORT and --key-file"),
        (["no-such-bot-anywhere"], "neither a bundled bot"),
        (["--", os.path.join("no", "such", "bot")], "does not exist"),
        ([], "give the bot"),
    ],
)
def test_command_refuses_what_it_cannot_check_with_exit_code_2(
    arguments: list[str], message: str
) -> None:
    result = runner.invoke(app, ["check-bot", *arguments])
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""


REMOTE_NAMES = [item.name for item in REMOTE_CHECKLIST]


def remote_check(
    tmp_path: Path, *program: str, timeout_s: float = 30.0
) -> tuple[dict[str, Any], subprocess.Popen[bytes] | None]:
    """``check-bot --remote`` of a bot that dials in over CurveZMQ on loopback (``program``,
    started by itself with its key pair; none: a bot that never comes); the JSON report."""
    referee = tmp_path / "referee.key"
    assert runner.invoke(app, ["keygen", str(referee)]).exit_code == 0
    keys = generate_keys()
    (tmp_path / "bot.key.pub").write_text(keys[0] + "\n", encoding="ascii")
    port = free_port()
    process = None
    if program:
        server_key = (tmp_path / "referee.key.pub").read_text().strip()
        endpoint = f"tcp://127.0.0.1:{port}"
        process = remote_bot(endpoint, server_key, keys, Path(program[0]), *program[1:])
    arguments = ["--json", "--matches", "1", "--warmup-ms", "2000"]
    listen = ["--listen", f"127.0.0.1:{port}", "--key-file", str(referee)]
    remote = ["--remote", str(tmp_path / "bot.key.pub"), "--connect-timeout-s", str(timeout_s)]
    result = runner.invoke(app, ["check-bot", *arguments, *listen, *remote])
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    assert data["passed"] is (result.exit_code == 0)
    assert data["bot"] == f"remote-{keys[0][:8]}"
    assert [item["name"] for item in data["items"]] == REMOTE_NAMES
    return data, process


def statuses_of(data: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item["status"] for item in data["items"]}


def test_remote_check_passes_a_good_remote_bot(tmp_path: Path) -> None:
    data, process = remote_check(tmp_path, str(RANDOM_BOT))
    assert process is not None
    try:
        assert data["passed"] is True, data
        assert set(statuses_of(data).values()) == {"pass"}
        reasons = {item["name"]: item["reason"] for item in data["items"]}
        assert "dialled in with its key" in reasons["handshake"]
        assert "all on one connection" in reasons["several_matches"]
        assert reasons["shutdown"].startswith("closed its connection after")
        assert process.wait(5) == 0
    finally:
        stop(process)


def test_remote_check_fails_a_broken_remote_bot_on_the_right_items(tmp_path: Path) -> None:
    data, process = remote_check(tmp_path, str(RAWBOT), "--fault", "illegal", "--at", "1")
    try:
        assert data["passed"] is False
        failed = {name for name, status in statuses_of(data).items() if status != "pass"}
        assert failed == {"exchange_decision"}, data
        assert "illegal" in next(
            item["reason"] for item in data["items"] if item["name"] == "exchange_decision"
        )
    finally:
        stop(process)


def test_remote_check_of_a_bot_that_never_dials_in(tmp_path: Path) -> None:
    data, _ = remote_check(tmp_path, timeout_s=0.5)
    found = statuses_of(data)
    assert found.pop("handshake") == "fail"
    assert set(found.values()) == {"skip"}


def stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.kill()
        process.wait(5)
