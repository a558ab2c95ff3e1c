"""The preflight of ``aegis-ref tournament``, and what a run says about a bot that cannot
play: through the installed command, with real bot processes in their sandboxes.

A bot whose script is missing (``python3 bots/trumpyy.py``) and a Python bot whose
interpreter cannot import the SDK pass the config's checks, since their programs exist;
before the preflight, such a tournament played every one of their matches as a forfeit and
exited 0.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from referee.bots import BotSpec
from referee.listeners import generate_keys
from referee.sandbox import SandboxPlan, bubblewrap_problem
from tests.tournaments.helpers import (
    rawbot_entry,
    run_cli,
    stored_count,
    wait_no_processes,
    write_config,
)
from tournaments.cli.exit_codes import EXIT_BOT, EXIT_USAGE
from tournaments.run.pool_preflight import preflight

RANDOM_BOT = Path(__file__).resolve().parents[3] / "sample_bots" / "random" / "bot.py"
needs_bubblewrap = pytest.mark.skipif(
    bubblewrap_problem() is not None and not os.environ.get("CI"),
    reason=f"bubblewrap cannot sandbox here: {bubblewrap_problem()}",
)


def broken_config(tmp_path: Path) -> tuple[Path, str, Path]:
    """A rawbot, a bot whose script does not exist, and the random bot run by a Python that
    cannot import the SDK (the referee's interpreter under another name, without its
    virtual environment or any site-packages); return the config, the marker and that
    Python."""
    config, marker = write_config(tmp_path, ["alpha"], matches_per_pair=2)
    folder = tmp_path / "nosdk"
    folder.mkdir()
    shutil.copy(RANDOM_BOT, folder / "bot.py")
    python = folder / "python3"
    python.symlink_to(os.path.realpath(sys.executable))
    data = yaml.safe_load(config.read_text())
    data["bots"] += [
        {"name": "trumpyy", "command": "python3 bots/trumpyy.py", "env": data["bots"][0]["env"]},
        {
            "name": "nosdk",
            "command": [str(python), "-I", "-S", str(folder / "bot.py")],
            "env": data["bots"][0]["env"],
        },
    ]
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return config, marker, python


def test_the_preflight_stops_a_run_whose_bots_cannot_start(tmp_path: Path) -> None:
    """Every broken bot is named with its fault, exit status, last output and log, with a
    hint for the Python that lacks the SDK; nothing is played; nothing is left running."""
    config, marker, python = broken_config(tmp_path)
    result = run_cli("tournament", str(config), "--output", "out", cwd=tmp_path)
    assert result.returncode == EXIT_BOT, result.stderr
    assert stored_count(tmp_path / "out" / "results.sqlite") == 0
    assert "Preflight: starting 3 bot(s) as their matches will, up to hello" in result.stdout
    error = result.stderr
    assert (
        "Preflight: bots trumpyy, nosdk cannot start as the tournament runs them; nothing was "
        "played." in error
    )
    missing = tmp_path / "bots" / "trumpyy.py"
    assert (
        "trumpyy: handshake before the first game: process ended (exit code 2) before a valid "
        f"hello; last output: \"python3: can't open file '{missing}'" in error
    )
    assert "  exit status: 2\n  command: python3 bots/trumpyy.py\n" in error
    assert f"  working directory: {tmp_path}\n" in error
    assert "  its last output (all of it in out/logs/preflight/trumpyy.log):" in error
    assert (
        (tmp_path / "out" / "logs" / "preflight" / "trumpyy.log")
        .read_text()
        .startswith(f"python3: can't open file '{missing}'")
    )
    assert "last output: \"ModuleNotFoundError: No module named 'protocol'\"" in error
    assert (
        f"hint: it ran under {python}, which cannot import 'protocol': the Python SDK comes "
        "with aegis-ref, so start the bot with an interpreter that has aegis-ref installed, "
        f"such as the referee's: {sys.executable} (every bot gets its path in $AEGIS_PYTHON)"
    ) in error
    assert "    ModuleNotFoundError: No module named 'protocol'\n" in error  # the last lines
    assert "alpha:" not in error  # it said hello
    assert error.rstrip().endswith("or skip this check with --no-preflight.")
    assert wait_no_processes(marker) == []


def test_without_the_preflight_every_forfeit_says_why(tmp_path: Path) -> None:
    """--no-preflight plays the broken bots' matches: each line of the log says why its
    match was forfeited (or void), the hint comes once per bot, and the run ends with a
    loud warning per bot and exit code 3, since they lost every match."""
    config, marker, python = broken_config(tmp_path)
    result = run_cli("tournament", str(config), "--output", "out", "--no-preflight", cwd=tmp_path)
    assert result.returncode == EXIT_BOT, result.stderr
    assert stored_count(tmp_path / "out" / "results.sqlite") == 6
    lines = result.stdout.splitlines()
    assert not any(line.startswith("Preflight") for line in lines)
    played = [line for line in lines if line.startswith("[")]
    assert len(played) == 6
    for line in played:
        if "alpha beat trumpyy" in line:
            assert "by forfeit, 0-0 after 0 games" in line
            assert "trumpyy (seat " in line
            assert ") handshake before the first game: process ended (exit code 2)" in line
            assert "last output: \"python3: can't open file" in line
        elif "void" in line:  # trumpyy against nosdk: both fail
            assert "void, both bots failed before the first game" in line
            assert "trumpyy (seat" in line
            assert "nosdk (seat" in line
    hinted = [line for line in played if "hint: it ran under" in line]
    assert len(hinted) == 1  # the first of nosdk's forfeits
    error = result.stderr
    assert (
        "WARNING: bot trumpyy lost all 4 of its matches of this run to its own faults "
        "(handshake 4); the most frequent: handshake before the first game: process ended "
        "(exit code 2) before a valid hello; last output: \"python3: can't open file"
    ) in error
    assert "WARNING: bot nosdk lost all 4 of its matches" in error
    assert f"hint: it ran under {python}, which cannot import 'protocol'" in error
    assert "WARNING: bot alpha" not in error
    assert error.rstrip().endswith(
        "Failed: bot(s) nosdk, trumpyy lost every match of this run to their own faults, "
        "so their results mean nothing: fix them, then play again in a new output directory "
        "(--output)"
    )
    assert wait_no_processes(marker) == []


def test_bots_that_lose_most_matches_are_warned_about_but_the_run_succeeds(
    tmp_path: Path,
) -> None:
    """Two bots that crash at their first decision pass the preflight (they say hello).
    Against each other, whichever is asked first crashes first: each loses three of its
    four matches, not all. Each is warned about, with the cause; the exit code is 0; and
    --quiet keeps the warnings (and the one line at the end)."""
    config, marker = write_config(tmp_path, [], matches_per_pair=2)
    data = yaml.safe_load(config.read_text())
    data["bots"] = [
        rawbot_entry("alpha", marker),
        rawbot_entry("crasher-a", marker, "--fault", "crash", "--at", "1"),
        rawbot_entry("crasher-b", marker, "--fault", "crash", "--at", "1"),
    ]
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    result = run_cli("tournament", str(config), "--output", "out", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "6/6 matches stored"
    assert "Preflight: 3 bot(s) started and said hello in" in result.stdout
    for name in ("crasher-a", "crasher-b"):
        assert (
            f"WARNING: bot {name} lost 3 of its 4 matches of this run to its own faults "
            "(crash 3); the most frequent: crash in game 1, decision 1: process ended (exit "
            "code 9) while act was awaited; last output: 'rawbot crashing at decision 1'"
        ) in result.stderr, result.stderr
    assert "WARNING: bot alpha lost" not in result.stderr
    assert wait_no_processes(marker) == []


def test_quiet_and_progress_do_not_mix(tmp_path: Path) -> None:
    config, _ = write_config(tmp_path, ["alpha", "beta"])
    result = run_cli("tournament", str(config), "--quiet", "--progress", "lines", cwd=tmp_path)
    assert result.returncode == EXIT_USAGE
    assert "--quiet shows no progress: it cannot go with --progress lines" in result.stderr
    assert not (tmp_path / "results").exists()


def test_remote_bots_are_named_and_skipped(tmp_path: Path) -> None:
    """A remote bot dials in when its owner starts it: the preflight cannot start it, says
    so, and checks the started bots alone."""
    marker = uuid.uuid4().hex
    entry = rawbot_entry("alpha", marker)
    started = BotSpec("alpha", tuple(entry["command"]), env={"AEGIS_TEST_MARKER": marker})
    remote = BotSpec("far", curve_public_key=generate_keys()[0])
    notes: list[str] = []
    results = preflight(
        [remote, started],
        warmup_ms=10_000,
        sandbox=SandboxPlan(False),
        output=tmp_path,
        note=notes.append,
        stopping=lambda: False,
    )
    assert [result.name for result in results] == ["alpha"]
    assert notes[0] == (
        "Preflight: remote bot(s) far not started: they dial in when their owners start them "
        "(a match waits for them: 'remote_connect_s')"
    )
    assert notes[1] == "Preflight: starting 1 bot(s) as their matches will, up to hello"
    assert notes[2].startswith("Preflight: 1 bot(s) started and said hello in ")
    assert (tmp_path / "logs" / "preflight" / "alpha.log").exists()
    assert wait_no_processes(marker) == []


@needs_bubblewrap
def test_a_program_outside_the_folder_its_sandbox_shows_is_named_with_the_fix(
    tmp_path: Path,
) -> None:
    """A config gives the bot a ``cwd`` while its program lives elsewhere: the sandbox shows
    the cwd, not the program, and bubblewrap would say only ``execvp ...: No such file``."""
    config, marker = write_config(tmp_path, ["alpha"], matches_per_pair=2, sandbox="required")
    elsewhere = tmp_path / "programs" / "outside"
    elsewhere.mkdir(parents=True)
    program = elsewhere / "run"
    program.write_text(f'#!/bin/sh\nexec {sys.executable} {RANDOM_BOT} "$@"\n')
    program.chmod(0o755)
    folder = tmp_path / "bots" / "outside"
    folder.mkdir(parents=True)
    data = yaml.safe_load(config.read_text())
    data["bots"].append({"name": "outside", "command": [str(program)], "cwd": str(folder)})
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    result = run_cli("tournament", str(config), "--output", "out", cwd=tmp_path)
    assert result.returncode == EXIT_BOT, result.stderr
    error = " ".join(result.stderr.split())
    assert "execvp" not in error
    assert (
        f"outside: crash before the first game: could not start '{program}': it is outside its "
        f"sandbox, which shows its folder {folder}: make {elsewhere} its cwd, or add it to its "
        "read_only exit status: none: it could not be started command:"
    ) in error
    assert wait_no_processes(marker) == []
