"""The installed ``aegis-ref`` console script: selfplay then verify, and --version."""

from __future__ import annotations

import os
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


@pytest.mark.skipif(not CONSOLE_SCRIPT.exists(), reason="aegis-ref is not installed here")
@pytest.mark.parametrize("on_path", [False, True], ids=["venv-not-on-path", "on-path"])
def test_the_closing_hint_works_as_printed(tmp_path: Path, on_path: bool) -> None:
    """After the README's quick start the venv is not on PATH: the hint must say where it is."""
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    # The console script, reached as a user of the quick start reaches it: .venv/bin/aegis-ref.
    (venv / "aegis-ref").symlink_to(CONSOLE_SCRIPT)
    config = tmp_path / "two.yaml"
    config.write_text(
        "name: two\nbots:\n  - {name: random, command: random, keep_alive: true}\n"
        "  - {name: first, command: first, keep_alive: true}\n"
        "matches_per_pair: 2\nseed: 5\nsandbox: 'off'\n"
        "rules: {target_score: 5, cold_margin: 3}\n",
        encoding="utf-8",
    )
    search = f"{venv}:/usr/bin:/bin" if on_path else "/usr/bin:/bin"
    environment = {**os.environ, "PATH": search}
    played = subprocess.run(
        [".venv/bin/aegis-ref", "tournament", "two.yaml", "--output", "out"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert played.returncode == 0, played.stdout + played.stderr
    hint = played.stdout.strip().splitlines()[-1]
    typed = "aegis-ref" if on_path else ".venv/bin/aegis-ref"
    assert hint.endswith(f"re-print with: {typed} standings out"), hint
    again = subprocess.run(
        hint.split("re-print with: ")[1],
        shell=True,
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert "random" in again.stdout
    assert "first" in again.stdout
