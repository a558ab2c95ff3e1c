"""A sandboxed tournament run by an ordinary user, as most organisers are: the sandbox is
on, and where the machine gives that user no cgroups the run says so, and how to get them."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from referee.cgroups import DELEGATION_ADVICE
from referee.sandbox import bubblewrap_problem
from tests.referee.organiser import (
    PROJECT,
    as_organiser,
    organiser_ids,
    organiser_problem,
    organiser_venv,
)
from tests.tournaments.helpers import FAST_RULES

C_BOT = PROJECT / "sample_bots" / "c" / "bot"


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A folder the organiser owns (the tests' own temporary folders are root's alone)."""
    problem = organiser_problem() or bubblewrap_problem()
    if problem is not None:
        pytest.skip(problem)
    if not C_BOT.exists():
        pytest.skip(f"the C sample bot is not built: make -C {C_BOT.parent} bot")
    uid, gid = organiser_ids()
    root = Path(tempfile.mkdtemp(prefix="aegis-organiser-"))
    try:
        os.chown(root, uid, gid)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_an_ordinary_user_runs_a_sandboxed_tournament_and_is_told_how_to_get_cgroups(
    workspace: Path,
) -> None:
    bots = []
    for name in ("north", "south"):
        folder = workspace / "bots" / name
        folder.mkdir(parents=True)
        shutil.copy(C_BOT, folder / "bot")
        bots.append({"name": name, "command": [str(folder / "bot")]})
    config = workspace / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "organiser",
                "bots": bots,
                "rules": dict(FAST_RULES),
                "matches_per_pair": 2,
                "concurrency": 1,
                "seed": 2**40 + 29,
                "sandbox": "required",
                "output": str(workspace / "out"),
            },
            sort_keys=False,
        )
    )
    uid, gid = organiser_ids()
    for path in workspace.rglob("*"):
        os.chown(path, uid, gid)
    python = organiser_venv(workspace / "venv")
    result = subprocess.run(
        [
            *as_organiser(),
            str(python),
            "-c",
            "from tournaments.cli import main; main()",
            "tournament",
            str(config),
            "--progress",
            "lines",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=workspace,
        env={"PATH": "/usr/bin:/bin", "HOME": str(workspace), "LANG": "C.UTF-8", "COLUMNS": "200"},
        check=False,
    )
    said = result.stdout + result.stderr
    assert result.returncode == 0, said
    assert "Traceback" not in said  # the worker's reaper among what ran as the organiser
    lines = [" ".join(line.split()) for line in said.splitlines()]
    assert (
        "Bot limits on this machine: no cgroups (limits by rlimit only); no delegated cgroup "
        f"v2 subtree for this user: {DELEGATION_ADVICE}"
    ) in lines
    assert (
        "WARNING: no cgroup memory or pids limit here: a bot's memory and processes are "
        "bounded by rlimits only (per process)"
    ) in lines
    assert not any("sandbox" in line.lower() and "WARNING" in line for line in lines), said
    store = sqlite3.connect(workspace / "out" / "results.sqlite")
    try:
        played = store.execute("SELECT forfeit_kind FROM results").fetchall()
        containment = store.execute("SELECT value FROM meta WHERE key = 'containment'").fetchone()
    finally:
        store.close()
    assert played == [(None,), (None,)]
    assert containment == ('{"sandboxed": true, "summary": null}',)
