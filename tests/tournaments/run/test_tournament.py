"""Whole tournaments with real bot processes (rawbot.py), real SQLite files and real
interruptions: SIGKILL and SIGINT of the ``aegis-ref tournament`` process, then a resume."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import TypeVar

import pytest
import yaml
from rich.console import Console

from referee.listeners import generate_keys
from referee.records import verify_lines
from tests.tournaments.cli.helpers import invoke
from tests.tournaments.helpers import (
    RAWBOT,
    assert_stored_exactly_once,
    quiet,
    rawbot_entry,
    remote_tournament,
    rows,
    run_cli,
    start_tournament,
    stored_count,
    wait_for_stored,
    wait_no_processes,
    winners,
    write_config,
)
from tournaments.config.tournament import load_config
from tournaments.errors import StoreMismatchError, TournamentError
from tournaments.report.terminal import QuietDisplay
from tournaments.run.coordinator import StopRequest, cpus_text, run_tournament, worker_cpus
from tournaments.stats.standings import load_standings
from tournaments.store.database import open_store
from tournaments.store.rows import ResultRow

T = TypeVar("T")
RANDOM_BOT = Path(__file__).resolve().parents[3] / "sample_bots" / "random" / "bot.py"


def test_a_whole_tournament(tmp_path: Path) -> None:
    """Every match stored once with a verifiable record; duplicate pairs deal the same cards;
    a crashing bot forfeits; no bot process outlives the run."""
    config, marker = write_config(
        tmp_path, ["alpha", "beta", "gamma"], matches_per_pair=2, concurrency=2
    )
    data = yaml.safe_load(config.read_text())
    data["bots"].append(rawbot_entry("crasher", marker, "--fault", "crash", "--at", "2"))
    for bot in data["bots"]:
        del bot["keep_alive"]  # as a real config: a fresh process for every match
    config.write_text(yaml.safe_dump(data))
    setup = load_config(config).with_overrides(output=tmp_path / "out")
    summary, standings = run_tournament(setup, display=quiet())
    assert wait_no_processes(marker) == []
    assert (summary.total, summary.stored_before, summary.played) == (12, 0, 12)
    assert summary.complete
    assert not summary.interrupted
    assert summary.failure is None
    stored = rows(tmp_path / "out" / "results.sqlite")
    assert len(stored) == 12
    for match_id, row in stored.items():
        record = tmp_path / "out" / str(row["record_path"])
        assert record.name == f"match-{match_id}.jsonl"
        with record.open("rb") as stream:
            report = verify_lines(enumerate(stream, 1))
        assert report.ok, (match_id, report.disagreement)
        if "crasher" in (row["seat0"], row["seat1"]):
            assert row["forfeit_bot"] == "crasher"
            assert row["forfeit_kind"] == "crash"
            assert row["winner"] != "crasher"
        else:
            assert row["forfeit_kind"] is None
    assert sorted(path.name for path in (tmp_path / "out" / "records").iterdir()) == sorted(
        f"match-{match_id}.jsonl" for match_id in stored
    )
    # Duplicate play: the same seed with the seats swapped deals the same decks.
    first, second = (
        [
            json.loads(line)
            for line in (tmp_path / "out" / "records" / name).read_text().splitlines()
        ]
        for name in ("match-r0001-alpha+beta.jsonl", "match-r0001-beta+alpha.jsonl")
    )
    assert first[0]["seed"] == second[0]["seed"]
    assert first[0]["players"] == second[0]["players"][::-1]
    games = min(len(first), len(second)) - 2
    assert games >= 1
    assert [line["deck"] for line in first[1 : 1 + games]] == [
        line["deck"] for line in second[1 : 1 + games]
    ]
    assert standings is not None
    by_name = {row.name: row for row in standings.rows}
    assert by_name["crasher"].record.forfeits == {"crash": 6}
    assert by_name["crasher"].record.losses == 6
    assert standings.rows[-1].name == "crasher"


def test_adding_a_bot_plays_only_the_new_pairings(tmp_path: Path) -> None:
    config, marker = write_config(tmp_path, ["alpha", "beta"], matches_per_pair=2)
    output = tmp_path / "out"
    setup = load_config(config).with_overrides(output=output)
    summary, _ = run_tournament(setup, display=quiet())
    assert (summary.total, summary.played) == (2, 2)
    before = rows(output / "results.sqlite")
    write_config(tmp_path, ["alpha", "beta", "gamma"], marker=marker, matches_per_pair=2)
    bigger = load_config(config).with_overrides(output=output)
    summary, standings = run_tournament(bigger, display=quiet())
    assert (summary.total, summary.stored_before, summary.played) == (6, 2, 4)
    after = rows(output / "results.sqlite")
    assert set(after) - set(before) == {
        "r0001-alpha+gamma",
        "r0001-gamma+alpha",
        "r0001-beta+gamma",
        "r0001-gamma+beta",
    }
    for match_id, row in before.items():
        assert after[match_id] == row  # not played again
    assert standings is not None
    assert {row.name for row in standings.rows} == {"alpha", "beta", "gamma"}
    # Changing the rules under existing results is refused before anything is played.
    write_config(tmp_path, ["alpha", "beta", "gamma"], marker=marker, rules={"target_score": 6})
    changed = load_config(config).with_overrides(output=output)
    with pytest.raises(StoreMismatchError, match=r"rules\.cold_margin: stored 3, config 10"):
        run_tournament(changed, display=quiet())
    assert rows(output / "results.sqlite") == after
    assert wait_no_processes(marker) == []


class StopAfter(QuietDisplay):
    """A quiet display that asks the run to stop once ``count`` matches are stored."""

    def __init__(self, stop: StopRequest, count: int) -> None:
        super().__init__(Console(file=io.StringIO()))
        self.stop, self.count, self.stored = stop, count, 0

    def match_stored(self, row: ResultRow) -> None:
        super().match_stored(row)
        self.stored += 1
        if self.stored >= self.count:
            self.stop.request()


def test_a_removed_bot_leaves_the_run_the_standings_and_the_report_alike(
    tmp_path: Path,
) -> None:
    """A bot removed part way: its matches, played or not, leave the schedule. The run, the
    standings and the report count the same matches of the same bots and say what they leave
    out; the bot's stored matches come back with it."""
    config, marker = write_config(
        tmp_path, ["alpha", "beta", "gamma"], matches_per_pair=4, concurrency=1
    )
    output = tmp_path / "out"
    stop = StopRequest()
    first, _ = run_tournament(
        load_config(config).with_overrides(output=output), display=StopAfter(stop, 4), stop=stop
    )
    assert first.interrupted
    assert 4 <= first.stored < 12
    played = rows(output / "results.sqlite")
    with_gamma = sum(1 for row in played.values() if "gamma" in (row["seat0"], row["seat1"]))
    assert 1 <= with_gamma < 8  # gamma played some of its matches, not all

    write_config(tmp_path, ["alpha", "beta"], marker=marker, matches_per_pair=4)
    display = quiet()
    run, _ = run_tournament(load_config(config).with_overrides(output=output), display=display)
    said = display.console.file.getvalue()  # type: ignore[attr-defined]
    assert run.complete
    assert "4/4 matches stored" in said
    assert f"{with_gamma} stored match(es) are not in this config's schedule" in said

    result = invoke("standings", output, "--format", "json")
    assert result.exit_code == 0, result.output
    table = json.loads(result.output)
    assert (table["matches_played"], table["matches_scheduled"]) == (4, 4)
    assert {bot["name"] for bot in table["bots"]} == {"alpha", "beta"}
    assert sum(bot["matches"] + bot["void"] for bot in table["bots"]) == 2 * 4
    assert set(table["crosstable"]) == {"alpha", "beta"}
    assert (table["matches_unscheduled"], table["unscheduled_bots"]) == (with_gamma, ["gamma"])
    text = invoke("standings", output).output
    assert "4/4 matches" in text
    assert "no longer scheduled, so not shown: gamma" in " ".join(text.split())

    result = invoke("report", output)
    assert result.exit_code == 0, result.output
    page = (output / "report.html").read_text(encoding="utf-8")
    summary = re.search(r'id="summary">([^<]*)<', page)
    assert summary is not None
    assert summary.group(1).startswith("4 of 4 scheduled matches stored, ")
    assert ", 2 bots" in summary.group(1)
    assert "in progress" not in page
    assert "no longer scheduled, so not shown: gamma" in page
    assert "+gamma" not in page  # none of its matches is listed
    assert "gamma+" not in page

    # Nothing was deleted, and gamma's matches come back with it: only the unplayed ones
    # are played.
    assert set(rows(output / "results.sqlite")) >= set(played)
    write_config(tmp_path, ["alpha", "beta", "gamma"], marker=marker, matches_per_pair=4)
    back, standings = run_tournament(
        load_config(config).with_overrides(output=output), display=quiet()
    )
    assert (back.total, back.stored_before, back.played) == (12, 4 + with_gamma, 8 - with_gamma)
    assert standings is not None
    assert (standings.matches_played, standings.matches_scheduled) == (12, 12)
    assert (standings.matches_unscheduled, standings.unscheduled_bots) == (0, ())
    assert {row.name for row in standings.rows} == {"alpha", "beta", "gamma"}
    assert wait_no_processes(marker) == []


def test_cli_refuses_changed_rules_and_bad_configs(tmp_path: Path) -> None:
    config, _ = write_config(tmp_path, ["alpha", "beta"])
    output = tmp_path / "out"
    connection = open_store(output)
    try:
        connection.execute(
            "INSERT INTO meta VALUES ('config_hash', 'x'), ('rules', '{\"target_score\": 9}'), "
            "('time_control', '{}'), ('seed', '11')"
        )
        connection.commit()
    finally:
        connection.close()
    result = run_cli("tournament", str(config), "--output", str(output), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "holds results played under other settings" in result.stderr
    assert "rules.target_score: stored 9, config 5" in result.stderr
    assert "Traceback" not in result.stderr
    config.write_text("name: bad\nbots:\n  - {name: a, command: random}\n  - {name: a}\n")
    result = run_cli("tournament", str(config), cwd=tmp_path)
    assert result.returncode == 2
    assert f"{config}:4: bots[1].name: duplicate bot name 'a' (also bots[0])" in result.stderr
    assert "Traceback" not in result.stderr


def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    config, marker = write_config(
        tmp_path, ["alpha", "beta", "gamma"], matches_per_pair=60, concurrency=2
    )
    output = tmp_path / "killed"
    database = output / "results.sqlite"
    process = start_tournament(config, output, tmp_path)
    try:
        wait_for_stored(process, database)
        # The standings can be read while the run writes.
        connection = open_store(output, read_only=True)
        try:
            assert load_standings(connection).matches_played >= 1
        finally:
            connection.close()
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == -signal.SIGKILL
    stored = stored_count(database)
    assert 1 <= stored < 180
    # The orphaned workers notice and take their bots down with them.
    assert wait_no_processes(marker) == []

    resumed = run_cli("tournament", str(config), "--output", str(output), "--quiet", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert f"Resuming in {output}: {stored} of 180 matches already stored" in resumed.stdout
    assert wait_no_processes(marker) == []
    assert_stored_exactly_once(output, 180)

    straight = tmp_path / "straight"
    clean = run_cli("tournament", str(config), "--output", str(straight), "--quiet", cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr
    assert winners(database) == winners(straight / "results.sqlite")
    json_killed = run_cli("standings", str(output), "--format", "json", cwd=tmp_path)
    json_straight = run_cli("standings", str(straight), "--format", "json", cwd=tmp_path)
    assert json.loads(json_killed.stdout)["bots"] == json.loads(json_straight.stdout)["bots"]
    assert wait_no_processes(marker) == []


def test_ctrl_c_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    config, marker = write_config(
        tmp_path, ["alpha", "beta", "gamma"], matches_per_pair=100, concurrency=2
    )
    output = tmp_path / "out"
    database = output / "results.sqlite"
    process = start_tournament(config, output, tmp_path)
    try:
        wait_for_stored(process, database)
        # Ctrl-C in a terminal signals the whole foreground group: the coordinator and its
        # workers (the bots run in sessions of their own).
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr
    stored = stored_count(database)
    assert stored < 300
    assert "Stopping: no new matches" in stderr
    assert f"Interrupted: {stored} of 300 matches stored in {output}." in stderr
    assert f"play the {300 - stored} still missing" in stderr
    assert "aegis-ref tournament" in stderr
    assert "Traceback" not in stderr
    # A clean stop: the workers stopped their bots before the coordinator exited.
    assert wait_no_processes(marker) == []
    assert not [path for path in (output / "records").iterdir() if path.name.endswith(".tmp")]

    resumed = run_cli("tournament", str(config), "--output", str(output), "--quiet", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert stored_count(database) == 300
    assert wait_no_processes(marker) == []


def test_missing_bot_program_is_a_config_error(tmp_path: Path) -> None:
    config, _ = write_config(tmp_path, ["alpha", "beta"])
    data = yaml.safe_load(config.read_text())
    data["bots"][1]["command"] = ["./nowhere/bot", str(RAWBOT)]
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    result = run_cli("tournament", str(config), cwd=tmp_path)
    assert result.returncode == 2
    assert "bots[1].command: program './nowhere/bot' does not exist" in result.stderr
    assert not (tmp_path / "results").exists()
    assert os.listdir(tmp_path) == ["config.yaml"]


def test_live_display_prints_standings_and_crosstable(tmp_path: Path) -> None:
    config, marker = write_config(tmp_path, ["alpha", "beta"], matches_per_pair=2)
    result = run_cli(
        "tournament", str(config), "--output", "out", "--concurrency", "2", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "2/2 matches stored; this run played" in result.stdout
    assert "Crosstable: the row bot's wins-losses against the column bot" in result.stdout
    # The hint names the program as it was started (tests/tournaments/cli/test_console_script.py).
    assert re.search(
        r"Done: 2 matches in out; re-print with: \S*aegis-ref standings out", result.stdout
    )
    assert stored_count(tmp_path / "out" / "results.sqlite") == 2
    assert wait_no_processes(marker) == []


class FailingExecutor(Executor):
    """An executor whose every task fails, as a broken worker pool would."""

    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, fn: Callable[..., T], /, *args: object, **kwargs: object) -> Future[T]:
        self.submitted += 1
        future: Future[T] = Future()
        future.set_exception(RuntimeError("worker lost"))
        return future


def test_a_failing_executor_stops_the_run(tmp_path: Path) -> None:
    config, _ = write_config(tmp_path, ["alpha", "beta", "gamma"], matches_per_pair=4)
    setup = load_config(config).with_overrides(output=tmp_path / "out")
    executor = FailingExecutor()
    summary, _ = run_tournament(setup, display=quiet(), executor=executor)
    assert summary.failure is not None
    assert "failed in its worker: RuntimeError('worker lost')" in summary.failure
    assert executor.submitted <= 2  # stopped submitting at the first failure
    assert (summary.played, summary.total) == (0, 12)


def remote_config(
    tmp_path: Path, bot_public_key: str, *, connect_timeout_s: int
) -> tuple[Path, str, int]:
    """Two rawbots and the remote bot ``far``; the referee's secret key in referee.key.
    Returns the config, the referee's public key and the port."""
    config, public, endpoint = remote_tournament(
        tmp_path,
        ["alpha", "beta"],
        {"far": (bot_public_key, 1)},
        connect_timeout_s=connect_timeout_s,
        matches_per_pair=2,
    )
    return config, public, int(endpoint.rsplit(":", 1)[1])


def test_a_remote_bot_plays_its_matches_over_curve_zmq(tmp_path: Path) -> None:
    """A bot on 'another machine' (a process the referee did not start, with its own key
    pair) dials in over tcp and plays every match of its pairings on one connection."""
    keys = generate_keys()
    config, referee_public, port = remote_config(tmp_path, keys[0], connect_timeout_s=30)
    environment = {key: value for key, value in os.environ.items() if key != "AEGIS_TOKEN"}
    environment.update(
        AEGIS_ENDPOINT=f"tcp://127.0.0.1:{port}",
        AEGIS_SERVER_KEY=referee_public,
        AEGIS_PUBLIC_KEY=keys[0],
        AEGIS_SECRET_KEY=keys[1],
    )
    log = tmp_path / "far.log"
    with log.open("wb") as stderr:
        far = subprocess.Popen([sys.executable, str(RANDOM_BOT)], env=environment, stderr=stderr)
    try:
        setup = load_config(config).with_overrides(output=tmp_path / "out")
        display = quiet()
        summary, standings = run_tournament(setup, display=display)
        assert summary.complete
        assert summary.failure is None
        assert (summary.played, summary.total) == (6, 6)
        stored = rows(tmp_path / "out" / "results.sqlite")
        remote_matches = [row for row in stored.values() if "far" in (row["seat0"], row["seat1"])]
        assert len(remote_matches) == 4
        for row in stored.values():
            assert row["forfeit_kind"] is None, row
            assert json.loads(str(row["faults_json"])) == [], row
            record = (tmp_path / "out" / str(row["record_path"])).read_text().splitlines()
            assert verify_lines(enumerate(record, start=1)).ok
        assert standings is not None
        assert {row.name for row in standings.rows} == {"alpha", "beta", "far"}
        notes = display.console.file.getvalue()  # type: ignore[attr-defined]
        assert f"dial in to tcp://127.0.0.1:{port}" in notes
        assert referee_public in notes
        # The tournament's end shuts the remote bot down cleanly.
        assert far.wait(15) == 0, log.read_text()
    finally:
        if far.poll() is None:
            far.kill()
            far.wait(5)


def test_a_remote_bot_that_never_dials_in_forfeits_and_nothing_hangs(tmp_path: Path) -> None:
    config, _, _ = remote_config(tmp_path, generate_keys()[0], connect_timeout_s=1)
    setup = load_config(config).with_overrides(output=tmp_path / "out")
    started = time.monotonic()
    summary, standings = run_tournament(setup, display=quiet())
    assert time.monotonic() - started < 60
    assert summary.complete
    assert summary.played == 6
    for row in rows(tmp_path / "out" / "results.sqlite").values():
        if "far" in (row["seat0"], row["seat1"]):
            assert (row["forfeit_bot"], row["forfeit_kind"]) == ("far", "handshake"), row
            assert row["winner"] != "far"
        else:
            assert row["forfeit_kind"] is None
    assert standings is not None
    far = next(row.record for row in standings.rows if row.name == "far")
    assert (far.matches, far.wins, far.losses) == (4, 0, 4)
    assert far.forfeits == {"handshake": 4}


def test_a_busy_listen_port_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    config, _, port = remote_config(tmp_path, generate_keys()[0], connect_timeout_s=1)
    setup = load_config(config).with_overrides(output=tmp_path / "out")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        with pytest.raises(TournamentError, match=f"listen: cannot listen on 127.0.0.1:{port}"):
            run_tournament(setup, display=quiet())
    assert not (tmp_path / "out").exists()


def scheduled_count(database: Path) -> int:
    """Rows in the schedule table (0 while the store does not exist yet)."""
    try:
        connection = sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0
    try:
        return int(connection.execute("SELECT count(*) FROM schedule").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        connection.close()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
@pytest.mark.parametrize("affinity", [True, False])
def test_each_worker_and_its_bots_get_a_cpu_of_their_own(tmp_path: Path, affinity: bool) -> None:
    report = tmp_path / "cpus.txt"
    config, marker = write_config(
        tmp_path,
        [],
        matches_per_pair=4,
        concurrency=2,
        executor={"kind": "local", "affinity": affinity},
        # The bots write their CPUs into the test's folder, which no sandbox would let them.
        sandbox="off",
    )
    data = yaml.safe_load(config.read_text())
    data["bots"] = [
        rawbot_entry(name, marker, "--report-cpus", str(report)) for name in ("a", "b", "c")
    ]
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    setup = load_config(config).with_overrides(output=tmp_path / "out")
    display = quiet()
    summary, _ = run_tournament(setup, display=display)
    assert summary.complete
    assert wait_no_processes(marker, timeout=5) == []
    by_worker: dict[str, set[str]] = {}
    preflight = set()
    for line in report.read_text().splitlines():
        name, worker, cpus = line.split()
        if worker == str(os.getpid()):
            preflight.add(name)  # started here, by the preflight, before any match
            continue
        by_worker.setdefault(worker, set()).add(cpus)
    assert preflight == {"a", "b", "c"}
    assert by_worker
    notes = display.console.file.getvalue()  # type: ignore[attr-defined]
    allowed = ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0)))
    if not affinity:
        assert all(cpus == {allowed} for cpus in by_worker.values()), by_worker
        assert "of their own" not in notes
        assert "not pinned" not in notes
        return
    groups = worker_cpus(2)
    assert groups is not None
    texts = [",".join(str(cpu) for cpu in group) for group in groups]
    assert f"keep to CPUs of their own: {' | '.join(map(cpus_text, groups))}" in notes
    # Every bot of a worker keeps to that worker's CPUs, and no two workers share one.
    assert all(len(reported) == 1 for reported in by_worker.values()), by_worker
    chosen = [next(iter(reported)) for reported in by_worker.values()]
    assert len(set(chosen)) == len(chosen)
    assert set(chosen) <= set(texts)


def test_workers_share_the_cpus_out_equally() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    one = worker_cpus(1)
    assert one == [tuple(allowed)]  # a single worker keeps every CPU
    groups = worker_cpus(len(allowed))
    assert groups == [(cpu,) for cpu in allowed]
    assert worker_cpus(len(allowed) + 1) is None  # fewer CPUs than workers: not pinned
    assert cpus_text((0, 1, 2, 3)) == "0-3"
    assert cpus_text((5,)) == "5"
    assert cpus_text((0, 2, 5)) == "0,2,5"


def test_ctrl_c_while_workers_start(tmp_path: Path) -> None:
    """Ctrl-C while the worker processes are still importing: no traceback from them."""
    config, marker = write_config(tmp_path, ["alpha", "beta"], matches_per_pair=20, concurrency=2)
    output = tmp_path / "out"
    process = start_tournament(config, output, tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not scheduled_count(output / "results.sqlite") and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.15)  # the coordinator has submitted; its workers are booting
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert "Traceback" not in stderr
    assert process.returncode in (0, 130), stderr
    assert wait_no_processes(marker) == []


class CancellingExecutor(Executor):
    """An executor that cancels every task, as a Dask client that lost its scheduler does."""

    def submit(self, fn: Callable[..., T], /, *args: object, **kwargs: object) -> Future[T]:
        future: Future[T] = Future()
        future.cancel()
        future.set_running_or_notify_cancel()  # as distributed does: wakes wait() up
        return future


def test_an_executor_that_cancels_matches_stops_the_run(tmp_path: Path) -> None:
    """A match cancelled without a stop request is a failure, not a match silently left out."""
    config, _ = write_config(tmp_path, ["alpha", "beta"], matches_per_pair=4)
    setup = load_config(config).with_overrides(output=tmp_path / "out")
    summary, _ = run_tournament(setup, display=quiet(), executor=CancellingExecutor())
    assert summary.failure is not None
    assert re.match(r"match r0001-\w+\+\w+ was cancelled by the executor \(", summary.failure)
    assert (summary.played, summary.total) == (0, 4)
