"""Leagues: a config naming a store of submissions, the latest accepted version of each
bot playing, a new version retiring the old one (its unplayed matches leave the schedule,
its results the standings, and stay as its history); and ``aegis-ref league`` itself, taking
in a new version mid-league, killed during that version's build and restarted, every match
stored exactly once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from referee.sandbox import bubblewrap_problem
from tests.sample_bots.language_bots import c_toolchain_missing, skip_unless_ci
from tests.tournaments.cli.helpers import invoke
from tests.tournaments.helpers import AEGIS_REF, processes_with_marker, wait_no_processes
from tests.tournaments.stored import new_store, store_match
from tests.tournaments.submission_helpers import SAMPLE_BOTS, c_bot, python_bot, write_league
from tournaments.config.tournament import load_config, parse_config
from tournaments.errors import ConfigError, TournamentError
from tournaments.league.runner import bot_history
from tournaments.league.submissions import State, SubmissionStore, enter_submissions, load_league
from tournaments.schedule.pairings import ScheduledMatch, match_id, schedule
from tournaments.stats.standings import load_standings
from tournaments.store.database import add_schedule, open_store, retire_bots, retired_bots

# -- the store: retired bots -------------------------------------------------------------------


def test_retiring_a_bot_unschedules_only_its_unplayed_matches(tmp_path: Path) -> None:
    connection = new_store(tmp_path, ["a", "b@1", "c"])
    try:
        played = store_match(connection, 1, ("a", "b@1"), 0)
        store_match(connection, 1, ("a", "c"), 1)
        unplayed = [
            ScheduledMatch(match_id(1, seats), 1, "x", seats, 1)
            for seats in (("b@1", "a"), ("c", "b@1"), ("c", "a"))
        ]
        add_schedule(connection, unplayed)
        assert retire_bots(connection, {"b@1": "b@2"}) == 2
        assert retire_bots(connection, {"b@1": "b@3"}) == 0  # once retired, it stays so
        scheduled = {row[0] for row in connection.execute("SELECT match_id FROM schedule")}
        assert scheduled == {played, match_id(1, ("a", "c")), match_id(1, ("c", "a"))}
        assert retired_bots(connection)["b@1"].replaced_by == "b@2"
        store_match(connection, 2, ("c", "a"), 0)
        standings = load_standings(connection)
        assert [row.name for row in standings.rows] == ["a", "c"] or [
            row.name for row in standings.rows
        ] == ["c", "a"]
        assert (standings.matches_played, standings.matches_scheduled) == (2, 3)
        assert "b@1" not in standings.crosstable["a"]
        history = bot_history(connection, "b")
        assert [(version.player, version.current) for version in history] == [("b@1", False)]
        assert (history[0].record.wins, history[0].record.losses) == (0, 1)
        assert history[0].replaced_by == "b@2"
        assert bot_history(connection, "nobody") == []
    finally:
        connection.close()


def test_standings_history_on_the_command_line(tmp_path: Path) -> None:
    connection = new_store(tmp_path, ["a", "b@1", "b@2"])
    try:
        store_match(connection, 1, ("a", "b@1"), 1)
        store_match(connection, 1, ("b@2", "a"), 0)
        retire_bots(connection, {"b@1": "b@2"})
    finally:
        connection.close()
    result = invoke("standings", tmp_path, "--history", "b", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [(row["bot"], row["current"], row["wins"]) for row in rows] == [
        ("b@1", False, 1),
        ("b@2", True, 1),
    ]
    table = invoke("standings", tmp_path, "--history", "b")
    assert "replaced by b@2" in table.output
    assert "plays" in table.output
    assert invoke("standings", tmp_path, "--history", "zed").exit_code == 2
    standings = invoke("standings", tmp_path, "--format", "json")
    assert {row["name"] for row in json.loads(standings.output)["bots"]} == {"a", "b@2"}


# -- the config --------------------------------------------------------------------------------


def league_text(submissions: str, extra: str = "") -> str:
    return f"name: l\nsubmissions:\n{submissions}{extra}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            league_text("  folder: subs\n  colour: red\n"),
            "config.yaml:4: submissions.colour: unknown key; known keys here: folder, "
            "max_upload_mb",
        ),
        (
            league_text("  folder: subs\n  build: {timeout_s: 0}\n"),
            "config.yaml:4: submissions.build.timeout_s: should be greater than or equal to 1",
        ),
        (
            league_text("  folder: subs\n  build: {read_only: [nowhere-x]}\n"),
            "config.yaml:4: submissions.build.read_only[0]: path ",
        ),
        (
            league_text(
                "  folder: subs\n  limits: {memory_mb: 900}\n  max_limits: {memory_mb: 500}\n"
            ),
            "config.yaml:4: submissions.limits.memory_mb: 900 is over max_limits.memory_mb, 500",
        ),
        (
            league_text("  folder: subs\n", "sandbox: 'off'\n"),
            "config.yaml:4: sandbox: submitted bots (and their builds) always run sandboxed",
        ),
        ("name: l\nbots: []\n", "config.yaml:2: bots: a tournament needs at least 2 bots, got 0"),
    ],
)
def test_config_problems_of_a_league(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="config.yaml", base_dir=tmp_path)
    found = [str(issue) for issue in caught.value.issues]
    assert len(found) == 1, found
    assert found[0].startswith(expected), found


def test_a_league_s_folders_are_next_to_its_config(tmp_path: Path) -> None:
    league = write_league(tmp_path / "league", house=False, build={"env": {"X": "1"}})
    setup = load_config(league / "league.yaml")
    assert setup.bots == ()
    assert setup.output == league / "results"
    assert setup.submissions is not None
    assert setup.submissions.folder == league / "submissions"
    assert setup.submissions.build_env == {"X": "1"}
    short = parse_config("name: l\nsubmissions: subs\n", base_dir=tmp_path)
    assert short.submissions is not None
    assert short.submissions.folder == tmp_path / "subs"


def test_the_example_league_loads() -> None:
    setup = load_league(Path(__file__).resolve().parents[3] / "tournaments/examples/league")
    assert setup.submissions is not None
    assert setup.submissions.limits.memory_mb == 1024
    assert setup.submissions.max_limits["memory_mb"] == 2048
    assert setup.submissions.max_limits["tmp_mb"] == setup.submissions.limits.tmp_mb
    with pytest.raises(TournamentError, match="no 'submissions' key: a league's config"):
        load_league(Path(__file__).resolve().parents[3] / "tournaments/examples/demo.yaml")


# -- which versions play -----------------------------------------------------------------------


def test_the_latest_accepted_version_of_each_name_plays(tmp_path: Path) -> None:
    league = write_league(tmp_path / "league")
    setup = load_config(league / "league.yaml")
    store = SubmissionStore(setup)
    # What receives that died half way left: an upload being unpacked, a folder unstored.
    dead = league / "submissions" / ".incoming" / f"{2**22 + 1}-abc"
    dead.mkdir(parents=True)
    (league / "submissions" / "a" / "1").mkdir(parents=True)
    received = {}
    for name, version in (("a", "1"), ("b", "1"), ("a", "2"), ("a", "3"), ("b", "2")):
        bot = python_bot(tmp_path / f"{name}-{version}", name, version)
        received[(name, version)] = store.receive(bot)
    # As if built and checked: a@3 was rejected, b@2 is still being built.
    outcome = {("a", "1"): State.ACCEPTED, ("b", "1"): State.ACCEPTED}
    outcome |= {("a", "2"): State.ACCEPTED, ("a", "3"): State.REJECTED}
    for key, state in outcome.items():
        submission = received[key]
        submission.bot.mkdir()
        store._save(replace(submission, state=state))
    entered = enter_submissions(setup)
    assert entered.bot_names == ("house", "a@2", "b@1")
    assert entered.retired == (("a@1", "a@2"),)
    assert entered.sandbox == "required"
    spec = entered.bots[1]
    assert spec.command == (str(received[("a", "2")].bot / "run"),)
    assert spec.home == spec.cwd == str(received[("a", "2")].bot)
    assert "AEGIS_SEED" in spec.env  # from the config's seed, as every bot's
    assert [submission.player for submission in store.pending()] == ["b@2"]
    assert not dead.exists()


@pytest.mark.skipif(
    bubblewrap_problem() is not None and not os.environ.get("CI"),
    reason=f"a league's bots run sandboxed: {bubblewrap_problem()}",
)
def test_aegis_ref_tournament_on_a_league_plays_its_accepted_bots(tmp_path: Path) -> None:
    """``aegis-ref tournament`` enters a league's submissions itself before it runs (the
    coordinator knows nothing of leagues): the accepted version plays, the rejected one not."""
    league = write_league(tmp_path / "league")
    store = SubmissionStore(load_config(league / "league.yaml"))
    for version, state in (("1", State.ACCEPTED), ("2", State.REJECTED)):
        source = python_bot(tmp_path / f"a-{version}", "a", version)
        submission = store.receive(source)
        shutil.copytree(source, submission.bot)  # as if built
        store._save(replace(submission, state=state))
    result = invoke("tournament", league / "league.yaml", "--progress", "none")
    assert result.exit_code == 0, result.output
    shown = invoke("standings", league / "results", "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert sorted(row["name"] for row in json.loads(shown.output)["bots"]) == ["a@1", "house"]


# -- aegis-ref league --------------------------------------------------------------------------


def stored_ids(database: Path, table: str) -> set[str]:
    if not database.exists():
        return set()
    connection = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    try:
        return {row[0] for row in connection.execute(f"SELECT match_id FROM {table}")}
    except sqlite3.Error:
        return set()
    finally:
        connection.close()


def start_league(league: Path, log: Path) -> subprocess.Popen[str]:
    with log.open("a") as stream:
        return subprocess.Popen(
            [str(AEGIS_REF), "league", str(league), "--poll", "0.2"],
            stdout=stream,
            stderr=subprocess.STDOUT,
            text=True,
            process_group=0,
        )


def wait_for(condition: object, what: str, process: subprocess.Popen[str], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        assert process.poll() is None, log.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen:\n{log.read_text()}")


@pytest.mark.skipif(
    bubblewrap_problem() is not None and not os.environ.get("CI"),
    reason=f"a league needs bubblewrap: {bubblewrap_problem()}",
)
def test_a_new_version_mid_league_through_a_kill_during_its_build(tmp_path: Path) -> None:
    missing = c_toolchain_missing()
    if missing:
        skip_unless_ci(missing)
    subprocess.run(["make", "-s", "-C", str(SAMPLE_BOTS / "c"), "bot"], check=True, timeout=300)
    marker = uuid.uuid4().hex
    league = write_league(
        tmp_path / "league", poll_s=0.2, build={"env": {"AEGIS_TEST_MARKER": marker}}
    )
    for name in ("alice", "bob"):
        result = invoke("submit", c_bot(tmp_path / name, name, build=None), "--league", league)
        assert result.exit_code == 0, result.output
    database = league / "results" / "results.sqlite"
    log = tmp_path / "league.log"
    process = start_league(league, log)
    try:
        wait_for(lambda: "League test-league:" in log.read_text(), "the start", process, log)
        # Alice 1.0 has a result to keep in its history before its successor replaces it.
        wait_for(
            lambda: any("alice@1.0" in match for match in stored_ids(database, "results")),
            "alice 1.0's first result",
            process,
            log,
        )
        # Alice's next version arrives while the league plays; its build takes a while.
        newer = c_bot(tmp_path / "alice-2", "alice", "2.0", build="sleep 1.5")
        result = invoke("submit", newer, "--league", league, "--no-wait")
        assert result.exit_code == 0, result.output
        assert "Queued: the league running here (pid" in result.output
        status = league / "submissions" / "alice" / "2.0" / "status.json"

        def building() -> bool:
            state = json.loads(status.read_text())["state"]
            return state == "building" and bool(processes_with_marker(marker))

        wait_for(building, "alice 2.0's build", process, log)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
        assert wait_no_processes(marker) == []  # the build died with its league
        assert json.loads(status.read_text())["state"] == "building"

        process = start_league(league, log)
        current = {
            match.match_id
            for match in schedule(
                ["house", "bob@1.0", "alice@2.0"],
                master_seed=load_config(league / "league.yaml").seed or 0,
            )
        }
        wait_for(
            lambda: current <= stored_ids(database, "results"), "the new matches", process, log
        )
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0, log.read_text()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
    output = log.read_text()
    assert "alice 2.0: its building was cut short (the league stopped); building it again" in output
    assert "Accepted alice 2.0 (C, by Tess Tester)" in output
    assert json.loads(status.read_text())["attempts"] == 2
    old = {match_id for match_id in stored_ids(database, "results") if "alice@1.0" in match_id}
    # Exactly the expected matches: alice 1.0's played ones stay, its others left the
    # schedule, and its successor plays everyone once per seat.
    assert stored_ids(database, "schedule") == current | old
    assert stored_ids(database, "results") == current | old
    records = {path.name for path in (league / "results" / "records").iterdir()}
    assert records == {f"match-{match_id}.jsonl" for match_id in current | old}
    connection = open_store(league / "results", read_only=True)
    try:
        assert retired_bots(connection)["alice@1.0"].replaced_by == "alice@2.0"
        standings = load_standings(connection)
        assert {row.name for row in standings.rows} == {"house", "bob@1.0", "alice@2.0"}
        assert standings.matches_played == standings.matches_scheduled == len(current) == 6
        history = bot_history(connection, "alice")
        assert [version.player for version in history] == ["alice@1.0", "alice@2.0"]
        assert history[0].record.matches + history[0].record.void == len(old)
    finally:
        connection.close()
