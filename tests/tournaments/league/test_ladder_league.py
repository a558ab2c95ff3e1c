"""A league with ``format: ladder``: a bot submitted (and then its new version) is placed
by the ladder's pairing, from the next round on, instead of playing everyone; the rounds
before stay as they were played, and the version replaced leaves the standings."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
import yaml

from referee.sandbox import bubblewrap_problem
from tests.tournaments.cli.helpers import invoke
from tests.tournaments.helpers import AEGIS_REF, bundled_bots, run_cli
from tests.tournaments.submission_helpers import python_bot, write_league

HOUSE = {"random", "random-2", "greedy", "strong", "first"}


def _league_once(league: Path) -> str:
    """``aegis-ref league LEAGUE --once``: its output."""
    finished = subprocess.run(
        [str(AEGIS_REF), "league", str(league), "--once"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return finished.stdout


def _opponents(league: Path, name: str) -> tuple[set[str], set[int]]:
    """The bots ``name`` met and the rounds it played in, from the stored results."""
    database = league / "results" / "results.sqlite"
    connection = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    try:
        rows = connection.execute(
            "SELECT s.round, r.seat0, r.seat1 FROM results AS r "
            "JOIN schedule AS s ON s.match_id = r.match_id WHERE ? IN (r.seat0, r.seat1)",
            (name,),
        ).fetchall()
    finally:
        connection.close()
    return {bot for _round, *seats in rows for bot in seats} - {name}, {row[0] for row in rows}


@pytest.mark.skipif(
    bubblewrap_problem() is not None and not os.environ.get("CI"),
    reason=f"a league needs bubblewrap: {bubblewrap_problem()}",
)
def test_a_ladder_league_places_each_new_version_without_playing_everyone(
    tmp_path: Path,
) -> None:
    league = write_league(tmp_path / "league", house=False)
    config = league / "league.yaml"
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["bots"] = bundled_bots("ladder-league", keep_alive=True)
    data["bots"].append({"name": "first", "command": "first", "keep_alive": True})
    data["format"] = "ladder"
    data["ladder"] = {"rounds": 2}
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")

    _league_once(league)  # the house's ladder: its two rounds
    house_results = _opponents(league, "greedy")

    # Each version from the next round on, for the budget of two rounds, against some
    # bots of the house: placed by the pairing, not played against everyone.
    for version, expected in (("1.0", {3, 4}), ("2.0", {5, 6})):
        folder = python_bot(tmp_path / f"alice-{version}", "alice", version)
        submitted = invoke("submit", folder, "--league", league)
        assert submitted.exit_code == 0, submitted.output
        assert f"Accepted alice {version}" in submitted.output  # built and checked by submit
        output = _league_once(league)
        met, rounds = _opponents(league, f"alice@{version}")
        assert rounds == expected
        # Rounds and matches told against the budget, which counts from the change: the
        # six bots play three pairs (six matches) a round.
        first = min(expected)
        assert (
            f"Ladder: {first - 1} round(s) stored, round {first} next (the field changed: "
            "the budget counts from this round); " in output
        ), output
        assert (
            f"Round {first + 1} (swiss; 2 of 2 since the field changed in round {first}): "
            f"3 pair(s); 6 matches played since round {first}; " in output
        ), output
        assert (
            f"Ladder finished after {first + 1} round(s) (2 since the field changed in "
            f"round {first}), 12 matches since round {first}: " in output
        ), output
        assert 0 < len(met) < len(HOUSE)
        assert met <= HOUSE
    # What was played stays: the house's first rounds, alice 1.0's as its history.
    assert _opponents(league, "greedy")[0] >= house_results[0]
    assert _opponents(league, "alice@1.0")[1] == {3, 4}

    printed = run_cli("standings", str(league / "results"), "--format", "json", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    standings = json.loads(printed.stdout)
    assert {bot["name"] for bot in standings["bots"]} == HOUSE | {"alice@2.0"}
    alice = next(bot for bot in standings["bots"] if bot["name"] == "alice@2.0")
    assert alice["status"] == "contender"
    assert alice["elo_low"] < alice["elo"] < alice["elo_high"]
    assert standings["ladder"]["finished"] is True
