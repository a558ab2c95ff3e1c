"""The ``check-bot`` command: its report, as text or JSON, and its exit codes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.conformance import CHECKLIST
from tournaments.cli import app

RAWBOT = Path(__file__).resolve().parents[2] / "bots" / "rawbot.py"
NAMES = [item.name for item in CHECKLIST]

runner = CliRunner()


def test_command_json_report_for_a_bundled_bot() -> None:
    result = runner.invoke(app, ["check-bot", "--json", "--matches", "1", "first"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["passed"] is True
    assert data["bot"] == "first"
    assert data["settings"]["matches"] == 1
    assert [item["name"] for item in data["items"]] == NAMES
    assert {item["status"] for item in data["items"]} == {"pass"}


def test_command_prints_each_item_and_fails_with_exit_code_1() -> None:
    arguments = ["--warmup-ms", "2000", "--matches", "1", "--"]
    command = [sys.executable, str(RAWBOT), "--fault", "ignore_shutdown"]
    result = runner.invoke(app, ["check-bot", *arguments, *command])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Checking rawbot: ")
    assert [line.split(" ", 2)[1].rstrip(":") for line in lines[1:-1]] == NAMES
    assert "FAIL shutdown: still running 1.0 s after shutdown" in result.stdout
    assert lines[-1] == "15 of 16 items passed; failed: shutdown"


def test_command_accepts_one_quoted_command_line() -> None:
    quoted = f"{sys.executable} {RAWBOT} --name quoted"
    result = runner.invoke(app, ["check-bot", "--matches", "1", quoted])
    assert result.exit_code == 0, result.output
    assert (
        result.stdout.splitlines()[-1] == "16 of 16 items passed: rawbot is ready for a tournament"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--remote"], "not supported yet"),
        (["--remote", "first"], "not supported yet"),
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
