"""What ``aegis-ref tournament`` shows while it runs, through the installed command and real
bot processes: in a log (standard output a pipe: ``--progress lines``, the default there)
and on a terminal (a pseudo-terminal: the live display).

Each run holds still after its second match (``rawbot --hold``: a bot that waits for a file
before its third match), so that the test can look at what was shown while matches are
still to come, then lets it finish.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import yaml

from tests.tournaments.helpers import AEGIS_REF, rawbot_entry, wait_no_processes, write_config
from tests.tournaments.terminal import PseudoTerminal
from tournaments.cli.exit_codes import EXIT_BOT

WAIT = 30.0  # seconds: the longest any expected output may take to appear


def held_config(tmp_path: Path) -> tuple[Path, str, Path]:
    """Two bots, four matches: ``holder`` waits for the hold file before its third match;
    ``crasher`` crashes at its first decision of every match, so each match is a forfeit.
    Return the config, the marker and the hold file (in a folder the sandbox shows)."""
    gate = tmp_path / "gate"
    gate.mkdir()
    hold = gate / "go"
    config, marker = write_config(tmp_path, [], matches_per_pair=4)
    data = yaml.safe_load(config.read_text())
    holder = rawbot_entry("holder", marker, "--hold", str(hold), "--hold-at", "3")
    holder["read_only"] = [str(gate)]
    data["bots"] = [holder, rawbot_entry("crasher", marker, "--fault", "crash", "--at", "1")]
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return config, marker, hold


def test_a_log_gets_a_line_per_match_as_it_happens(tmp_path: Path) -> None:
    """Standard output a pipe: each match's line (with the forfeit's cause) and the standings
    every two matches are written while the run goes, not at its end."""
    config, marker, hold = held_config(tmp_path)
    process = subprocess.Popen(
        [str(AEGIS_REF), "tournament", str(config), "--output", "out", "--standings-every", "2"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    seen: list[str] = []
    try:
        deadline = time.monotonic() + WAIT
        # Up to the standings after the second match: the run is held there.
        while not any(line.startswith("test: 2/4 matches") for line in seen):
            assert time.monotonic() < deadline, seen
            line = process.stdout.readline()
            assert line, (seen, process.communicate())
            seen.append(line.rstrip("\n"))
        assert process.poll() is None  # still running: all this came as it happened
        hold.touch()
        rest, error = process.communicate(timeout=WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    lines = seen + rest.splitlines()
    assert process.returncode == EXIT_BOT, error
    assert "test: 4 matches to play" in lines
    played = [line for line in lines if line.startswith("[")]
    assert [line[:5] for line in played] == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"]
    for line in played:
        assert "holder beat crasher by forfeit, 0-0 after 0 games" in line
        assert re.search(
            r"crasher \(seat [01]\) crash in game 1, decision \d+: process ended \(exit code "
            r"9\) while act was awaited; last output: 'rawbot crashing at decision 1'$",
            line,
        ), line
    tables = [index for index, line in enumerate(lines) if line.startswith("test: ")]
    assert [lines[index][:17] for index in tables] == [
        "test: 4 matches t",
        "test: 2/4 matches",
        "test: 4/4 matches",
    ]
    assert lines.index(played[1]) < tables[1] < lines.index(played[2])
    assert "4/4 matches stored; this run played 0 games in" in rest
    assert "Crosstable: the row bot's wins-losses against the column bot" in rest
    assert "WARNING: bot crasher lost all 4 of its matches of this run" in error
    assert wait_no_processes(marker) == []


def test_a_terminal_gets_the_live_display_and_each_fault_as_it_happens(tmp_path: Path) -> None:
    """On a terminal (--progress auto): the bar and the standings table from the start, each
    forfeit printed above them with its cause as it is stored, and a table that keeps up
    with the bar (it shows both matches of the run before the hold, as the bar does)."""
    config, marker, hold = held_config(tmp_path)
    env = {**os.environ, "TERM": "xterm-256color", "LANG": "C.UTF-8", "COLUMNS": "100"}
    argv = [str(AEGIS_REF), "tournament", str(config), "--output", "out"]
    terminal = PseudoTerminal(argv, env, cwd=tmp_path, columns=100)
    try:
        terminal.expect(r"Preflight: 2 bot\(s\) started and said hello", WAIT)
        # The display starts before any match ends: the bar at 0 and every bot in the table.
        terminal.expect(r"test .*0/4 matches", WAIT)
        terminal.expect(r"test: 0/4 matches, 0 games; mean Elo 1500", WAIT)
        terminal.expect(r"\n *\d +crasher +- ", WAIT)
        assert "[1/4]" not in terminal.screen
        terminal.expect(r"\[2/4\] \S+: holder beat crasher by forfeit", WAIT)
        # Held before the third match: the table catches up with the bar on its own.
        terminal.expect(r"test .*2/4 matches", WAIT)
        terminal.expect(r"test: 2/4 matches, 0 games; mean Elo 1500", WAIT)
        assert terminal.process.poll() is None
        shown = re.sub(r"\s*\n\s*", " ", terminal.screen)  # lines the terminal wrapped
        assert "crasher (seat" in shown
        assert "last output: 'rawbot crashing at decision 1'" in shown
        hold.touch()
        terminal.expect(r"WARNING: bot crasher lost all 4 of its matches", WAIT)
        code = terminal.wait(WAIT)
    finally:
        terminal.close()
    assert code == EXIT_BOT, terminal.screen[-3000:]
    assert "4/4 matches stored; this run played 0 games in" in terminal.screen
    assert "Crosstable: the row bot's wins-losses against the column bot" in terminal.screen
    assert wait_no_processes(marker) == []
