"""The installed ``aegis-ref`` console script: selfplay then verify, and --version."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.tournaments.cli.helpers import read_lines, write_lines

# The console script installed beside this interpreter (the venv's bin or Scripts directory).
CONSOLE_SCRIPT = Path(sys.executable).with_name("aegis-ref")


def _run(*arguments: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CONSOLE_SCRIPT), *map(str, arguments)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(not CONSOLE_SCRIPT.exists(), reason="aegis-ref is not installed here")
def test_console_script_selfplay_then_verify(tmp_path: Path) -> None:
    played = _run("selfplay", "--matches", "20", "--seed", "3", "--record", "r.jsonl", cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    assert played.stdout.startswith("20 matches, ")
    assert played.stdout.endswith("; record r.jsonl\n")

    checked = _run("verify", "r.jsonl", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("OK: 20 matches, ")

    damaged = tmp_path / "r.jsonl"
    lines = read_lines(damaged)
    lines[1]["scores_before"] = [1, 0]
    write_lines(damaged, lines)
    checked = _run("verify", "r.jsonl", cwd=tmp_path)
    assert checked.returncode == 1
    assert checked.stdout == (
        "r.jsonl:2: match 1, game 1: scores_before [1, 0] but the running scores are [0, 0]\n"
    )

    missing = _run("verify", "nothing.jsonl", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stdout == ""
    assert "nothing.jsonl: cannot read the record" in missing.stderr


@pytest.mark.skipif(not CONSOLE_SCRIPT.exists(), reason="aegis-ref is not installed here")
def test_console_script_version_names_the_protocol_and_the_build(tmp_path: Path) -> None:
    from importlib.metadata import version

    from protocol.version import PROTOCOL_VERSION

    shown = _run("--version", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(
        f"aegis-ref {version('aegis-ref')} (protocol {PROTOCOL_VERSION}, "
    )
    # The development install is editable, so never compiled (setup.py).
    assert "hot path pure Python); Python 3." in shown.stdout
