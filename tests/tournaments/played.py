"""The real tournament that the tests of a tournament's output read (the fixture
``tournament_output`` of ``conftest.py`` plays it once): its bots and what to expect."""

from __future__ import annotations

from pathlib import Path

import yaml
from rich.console import Console

from tests.tournaments.helpers import rawbot_entry, wait_no_processes, write_config
from tournaments.config.tournament import load_config
from tournaments.report.terminal import QuietDisplay
from tournaments.run.coordinator import run_tournament

#: A tournament name that would break a page if it were not escaped.
NAME = 'Report <script>alert("x")</script> & co'
BOTS = ("alpha", "crasher", "rnd")
MATCHES = 6  # three pairings, one duplicate pair each
#: What the crasher writes on its stderr before it plays: a bot's output is a stranger's
#: text, and it reaches the record (the fault's last lines of output) and every page.
CRASHER_OUTPUT = "</script><img src=x onerror=alert(1)>"


def play_tournament(directory: Path) -> Path:
    """Play, in ``directory``, a tournament of three bots: a first-legal rawbot, a rawbot
    that prints :data:`CRASHER_OUTPUT` and crashes at its second decision, and the bundled
    random bot; return its output directory."""
    config, marker = write_config(
        directory,
        ["alpha"],
        name=NAME,
        matches_per_pair=2,
        concurrency=2,
        output=str(directory / "out"),
    )
    data = yaml.safe_load(config.read_text())
    crasher = rawbot_entry(
        "crasher", marker, "--fault", "crash", "--at", "2", "--say", CRASHER_OUTPUT
    )
    data["bots"].append(crasher)
    data["bots"].append({"name": "rnd", "command": "random", "env": {"AEGIS_TEST_MARKER": marker}})
    config.write_text(yaml.safe_dump(data))
    summary, _ = run_tournament(load_config(config), display=QuietDisplay(Console(quiet=True)))
    assert summary.complete
    assert summary.stored == MATCHES
    assert wait_no_processes(marker, timeout=5) == []
    return directory / "out"
